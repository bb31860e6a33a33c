// What `posenc table` and `posenc rope` write: one or two arrays (rows x cols), float32 or 16-bit bit
// patterns, as text, CSV, .npy or raw little-endian bytes, to stdout or a file. The values are the
// library's: this file formats and writes them, it computes nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli.hpp"

namespace cli {

enum class Format { kText, kCsv, kNpy, kRaw };
enum class DType { kF32, kBF16, kF16 };

// --format, --dtype, --output, --decimals.
struct OutputOptions {
  Format format = Format::kText;
  DType dtype = DType::kF32;
  std::string path;   // empty or "-": stdout
  int decimals = -1;  // text and CSV: -1 prints each value with the digits that give back its bits
  // Takes the current option when it is one of the four; false otherwise.
  bool read(Args &a);
  // Usage errors of the combination (binary data to a terminal, --decimals with a binary format).
  void check() const;
};

// One array: rows x cols, row-major, either float32 (f32) or 16-bit bit patterns (bits) by the dtype.
struct Array {
  std::string name;                       // "cos", "sin" when there are two; empty for one
  std::vector<std::string> columns;       // CSV header names, cols of them
  std::vector<std::string> row_labels;    // CSV first column(s) (the positions; "pad"), comma-joined per row
  std::string label_header = "position";  // CSV name(s) of those columns
  int64_t rows = 0, cols = 0;
  std::vector<float> f32;
  std::vector<uint16_t> bits;
};

// The CSV row labels of these positions: one column, or one per axis (each row's values comma-joined).
std::vector<std::string> row_labels(const Positions &p);
// Their header: "position", or "position0,position1,..." for several axes.
std::string label_header(const Positions &p);

// Writes the arrays. Two arrays to a file FILE.EXT go to FILE_cos.EXT and FILE_sin.EXT (their names);
// to stdout they follow each other (text: each under a line with its name; CSV: each with its own header;
// .npy: two .npy streams, which numpy.load reads in turn from one open file; raw: the bytes of one, then
// the other). Throws IoError when a file cannot be written.
void write_arrays(const OutputOptions &o, const std::vector<Array> &arrays);

// The 16-bit formats widened exactly to float32 (for printing).
float widen_bf16(uint16_t b);
float widen_f16(uint16_t h);

}  // namespace cli
