// posenc-accuracy's cells (accuracy_cells.hpp).
#include "accuracy_cells.hpp"

#include <algorithm>
#include <cmath>

#include "posenc/posenc.h"
#include "support/reference.hpp"

namespace accuracy {

Impls implementations(const std::vector<std::string> &paths, const std::vector<const char *> &peers) {
  Impls impls;
  for (const std::string &p : paths) impls.push_back({p, "posenc"});
  for (const char *p : peers) impls.push_back({p, "peer"});
  return impls;
}

void force_path(const std::string &impl) {
  for (int v = POSENC_ISA_SCALAR; v < POSENC_ISA_COUNT; ++v)
    if (impl == posenc_isa_name(posenc_isa(v))) posenc_force_isa(posenc_isa(v));
}

std::vector<std::vector<float>> run_group(std::vector<Cell> &cells, const Impls &impls, const Cell &proto, size_t n,
                                          const std::function<bool(const std::string &, float *)> &run) {
  std::vector<std::vector<float>> values;
  for (const auto &[impl, kind] : impls) {
    Cell c = proto;
    c.impl = impl;
    c.kind = kind;
    values.emplace_back(n);
    c.measured = run(impl, values.back().data());
    cells.push_back(c);
  }
  return values;
}

void add_pair(Cell *cells, const std::vector<std::vector<float>> &values, size_t at_cos, size_t at_sin,
              mpfr_srcptr exact_cos, mpfr_srcptr exact_sin) {
  for (size_t k = 0; k < values.size(); ++k) {
    Cell &c = cells[k];
    if (!c.measured) continue;
    for (const auto &[got, exact] : {std::pair<float, mpfr_srcptr>{values[k][at_cos], exact_cos},
                                     std::pair<float, mpfr_srcptr>{values[k][at_sin], exact_sin}}) {
      c.max_ulp = std::max(c.max_ulp, ref::ulp_error(got, exact));
      c.max_abs = std::max(c.max_abs, std::fabs(mpfr_get_d(exact, MPFR_RNDN) - double(got)));
      c.count += 1;
    }
  }
}

bool print_cells(const std::vector<Cell> &cells, size_t impls, size_t groups, int width) {
  for (size_t g = 0; g < groups && g * impls < cells.size(); ++g) std::printf(" %20s", cells[g * impls].group);
  std::printf("\n");
  bool ok = true;
  for (size_t block = 0; block + impls * groups <= cells.size(); block += impls * groups)
    for (size_t k = 0; k < impls; ++k) {
      const Cell &first = cells[block + k];
      std::printf("%-*s", width, first.impl.c_str());
      if (first.base != 0) std::printf(" %-8g", first.base);
      for (size_t g = 0; g < groups; ++g) {
        const Cell &c = cells[block + g * impls + k];
        if (!c.measured) {
          std::printf(" %20s", "-");
          continue;
        }
        std::printf(" %11.3g (%6.3g)", c.max_abs, c.max_ulp);
        ok = ok && !(c.kind == "posenc" && c.max_ulp > 0.5);
      }
      std::printf("\n");
    }
  return ok;
}

void write_cells(FILE *f, const std::vector<Cell> &cells, const std::function<void(FILE *, const Cell &)> &fields) {
  const char *sep = "";
  for (const Cell &c : cells) {
    if (!c.measured) continue;  // the report says which path is missing
    std::fprintf(f, "%s    {\"impl\": \"%s\", \"kind\": \"%s\", ", sep, c.impl.c_str(), c.kind.c_str());
    fields(f, c);
    std::fprintf(f, "\"max_ulp\": %.6g, \"max_abs\": %.6g, \"count\": %lld}", c.max_ulp, c.max_abs, (long long)c.count);
    sep = ",\n";
  }
  std::fprintf(f, "\n  ]}");
}

}  // namespace accuracy
