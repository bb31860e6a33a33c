#include "output.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace cli {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "raw and .npy output are little-endian bytes");

bool binary(Format f) { return f == Format::kNpy || f == Format::kRaw; }

// FILE.EXT -> FILE_name.EXT (or FILE_name without an extension).
std::string with_name(const std::string &path, const std::string &name) {
  const size_t slash = path.rfind('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || dot <= base) return path + "_" + name;
  return path.substr(0, dot) + "_" + name + path.substr(dot);
}

class Sink {
 public:
  // stdout for an empty path or "-"
  explicit Sink(const std::string &path) : path_(path.empty() || path == "-" ? "" : path) {
    if (path_.empty()) {
      f_ = stdout;
      return;
    }
    f_ = std::fopen(path_.c_str(), "wb");
    if (!f_) fail();
  }
  Sink(const Sink &) = delete;
  Sink &operator=(const Sink &) = delete;
  ~Sink() {
    if (f_ && f_ != stdout) std::fclose(f_);
  }
  void write(const void *p, size_t bytes) {
    if (bytes && std::fwrite(p, 1, bytes, f_) != bytes) fail();
  }
  void text(const std::string &s) { write(s.data(), s.size()); }
  void close() {
    FILE *f = f_;
    f_ = nullptr;
    if (f == stdout ? std::fflush(f) != 0 || std::ferror(f) : std::fclose(f) != 0) fail();
  }

 private:
  [[noreturn]] void fail() {
    throw IoError((path_.empty() ? std::string("standard output") : path_) + ": " + std::strerror(errno));
  }
  std::string path_;
  FILE *f_ = nullptr;
};

size_t element_size(DType d) { return d == DType::kF32 ? 4 : 2; }

const void *data_of(const Array &a, DType d) {
  return d == DType::kF32 ? static_cast<const void *>(a.f32.data()) : static_cast<const void *>(a.bits.data());
}

// NumPy's format 1.0: the magic, the version, a little-endian uint16 header length, a dict literal padded
// with spaces and ended by '\n' so that the data starts on a 64-byte boundary, then the data. bfloat16
// has no NumPy type: its bit patterns are written as uint16 ('<u2').
void write_npy(Sink &s, const Array &a, DType d) {
  const char *descr = d == DType::kF32 ? "<f4" : d == DType::kF16 ? "<f2" : "<u2";
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" +
                     std::to_string(a.rows) + ", " + std::to_string(a.cols) + "), }";
  const size_t prefix = 10;
  while ((prefix + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  const unsigned char head[prefix] = {
      0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(dict.size() & 0xff), (unsigned char)(dict.size() >> 8)};
  s.write(head, prefix);
  s.text(dict);
  s.write(data_of(a, d), size_t(a.rows * a.cols) * element_size(d));
}

std::string value_text(const Array &a, int64_t i, DType d, int decimals) {
  const float v = d == DType::kF32    ? a.f32[size_t(i)]
                  : d == DType::kBF16 ? widen_bf16(a.bits[size_t(i)])
                                      : widen_f16(a.bits[size_t(i)]);
  char buf[64];
  if (decimals >= 0)
    std::snprintf(buf, sizeof buf, "%.*f", decimals, double(v));
  else
    std::snprintf(buf, sizeof buf, "%.*g", d == DType::kF32 ? 9 : d == DType::kF16 ? 5 : 4, double(v));
  return buf;
}

void write_delimited(Sink &s, const Array &a, const OutputOptions &o, bool titled) {
  const bool csv = o.format == Format::kCsv;
  const char sep = csv ? ',' : ' ';
  std::string line;
  if (titled && !csv) s.text(a.name + "\n");
  if (csv) {
    line = a.label_header;
    for (const std::string &c : a.columns) line += "," + c;
    s.text(line + "\n");
  }
  for (int64_t r = 0; r < a.rows; ++r) {
    line.clear();
    if (csv) line = a.row_labels[size_t(r)];
    for (int64_t c = 0; c < a.cols; ++c) {
      if (csv || c) line += sep;
      line += value_text(a, r * a.cols + c, o.dtype, o.decimals);
    }
    s.text(line + "\n");
  }
}

void write_one(Sink &s, const Array &a, const OutputOptions &o, bool titled) {
  switch (o.format) {
    case Format::kText:
    case Format::kCsv: write_delimited(s, a, o, titled); break;
    case Format::kNpy: write_npy(s, a, o.dtype); break;
    case Format::kRaw: s.write(data_of(a, o.dtype), size_t(a.rows * a.cols) * element_size(o.dtype)); break;
  }
}

}  // namespace

bool OutputOptions::read(Args &a) {
  const std::string &n = a.name();
  if (n == "--format")
    format = Format(choice(a.value(), n, {"text", "csv", "npy", "raw"}));
  else if (n == "--dtype")
    dtype = DType(choice(a.value(), n, {"f32", "bf16", "f16"}));
  else if (n == "--output" || n == "-o")
    path = a.value();
  else if (n == "--decimals") {
    const int64_t k = count(a.value(), n);
    if (k > 30) throw Usage("--decimals: at most 30");
    decimals = int(k);
  } else
    return false;
  return true;
}

void OutputOptions::check() const {
  if (binary(format) && decimals >= 0) throw Usage("--decimals applies to --format text and csv");
  if (binary(format) && (path.empty() || path == "-") && isatty(STDOUT_FILENO))
    throw Usage("binary output to a terminal: give --output FILE or redirect standard output");
}

std::vector<std::string> row_labels(const Positions &p) {
  const int64_t n = p.rows();
  std::vector<std::string> out(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r)
    for (int a = 0; a < p.axes; ++a) {
      const int64_t v = p.is_list ? p.list[size_t(a * n + r)] : p.first + r;
      out[size_t(r)] += (a ? "," : "") + (v == POSENC_PAD ? std::string("pad") : std::to_string(v));
    }
  return out;
}

std::string label_header(const Positions &p) {
  if (p.axes == 1) return "position";
  std::string h;
  for (int a = 0; a < p.axes; ++a) h += (a ? ",position" : "position") + std::to_string(a);
  return h;
}

void write_arrays(const OutputOptions &o, const std::vector<Array> &arrays) {
  const bool to_file = !o.path.empty() && o.path != "-";
  if (to_file && arrays.size() > 1) {
    for (const Array &a : arrays) {
      Sink s(with_name(o.path, a.name));
      write_one(s, a, o, false);
      s.close();
    }
    return;
  }
  Sink s(o.path);
  for (const Array &a : arrays) write_one(s, a, o, arrays.size() > 1);
  s.close();
}

float widen_bf16(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

float widen_f16(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  uint32_t u;
  if (e == 0x1F) {
    u = sign | 0x7F800000u | (m << 13);  // infinity, NaN
  } else if (e != 0) {
    u = sign | ((e + 112) << 23) | (m << 13);
  } else if (m == 0) {
    u = sign;
  } else {  // subnormal: m 2^-24, exactly a normal float
    float f = float(m) * 0x1p-24f;
    std::memcpy(&u, &f, sizeof u);
    u |= sign;
  }
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace cli
