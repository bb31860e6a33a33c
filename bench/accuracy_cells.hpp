// What posenc-accuracy's cos/sin tables share (the RoPE table of accuracy.cpp, accuracy_axes.cpp and
// accuracy_times.cpp): a cell per implementation and group with its largest errors against MPFR, filled
// group by group, printed with the groups across a line and written as JSON objects.
#pragma once

#include <mpfr.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace accuracy {

// (name, kind) of every implementation of a table: the posenc paths, kind "posenc", then the peers, "peer".
using Impls = std::vector<std::pair<std::string, std::string>>;
Impls implementations(const std::vector<std::string> &paths, const std::vector<const char *> &peers);

// Makes the posenc path named impl the active one; a peer's name is no path's and changes nothing.
void force_path(const std::string &impl);

// One implementation on one group of a table.
struct Cell {
  std::string impl, kind;  // kind: "posenc" or "peer"
  const char *group;
  int64_t center = 0;  // the group's centre position, where the table has one
  double base = 0;     // the RoPE base, where the table has several (a column of print_cells)
  double max_ulp = 0, max_abs = 0;
  int64_t count = 0;
  bool measured = true;
};

// Appends a cell per implementation for one group (proto's group, centre and base) and returns their values,
// n floats each: run(impl, out) fills out and says whether it ran (a cell that did not is not measured).
std::vector<std::vector<float>> run_group(std::vector<Cell> &cells, const Impls &impls, const Cell &proto, size_t n,
                                          const std::function<bool(const std::string &, float *)> &run);

// One element's cos and sin against their exact values, in every measured cell of a group: cells[k] is
// values[k]'s, the cos at index at_cos, the sin at at_sin.
void add_pair(Cell *cells, const std::vector<std::vector<float>> &values, size_t at_cos, size_t at_sin,
              mpfr_srcptr exact_cos, mpfr_srcptr exact_sin);

// The cells come block by block (the RoPE table's bases), group by group within a block, impls cells a group.
// Prints the groups' names (ending the header line the caller began), then a line per implementation of each
// block: its name in `width` columns, its base where the cells have one (the RoPE table), then each group's
// "max_abs (max_ulp)", "-" where not measured. False when a posenc cell is not correctly rounded (over 0.5 ULP).
bool print_cells(const std::vector<Cell> &cells, size_t impls, size_t groups, int width);

// The rest of a table's JSON object, which the caller began up to its array "results": [: the measured cells, an
// object a line (impl, kind, what fields(f, cell) writes: the table's own keys, each followed by ", "; max_ulp,
// max_abs, count), then the closing of the array and of the table's object.
void write_cells(FILE *f, const std::vector<Cell> &cells, const std::function<void(FILE *, const Cell &)> &fields);

}  // namespace accuracy
