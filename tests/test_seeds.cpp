// The seeds' table: d = 6, positions 0..9, interleaved, printed to 4 decimals. Expected rows from the
// issue (computed by the seeds' NumPy code), not from this library.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "support/paths.hpp"

namespace {

std::string row4(const float *r) {
  std::string s;
  char buf[32];
  for (int e = 0; e < 6; ++e) {
    std::snprintf(buf, sizeof buf, "%s%.4f", e ? " " : "", double(r[e]));
    s += buf;
  }
  return s;
}

}  // namespace

TEST_CASE("the seeds' d=6 table, 10 positions", "[seeds]") {
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      const posenc_spec s = posenc_spec_default(6);
      float t[60];
      REQUIRE(posenc_table_f32(&s, 0, 10, t, 6) == POSENC_OK);
      INFO("path " << posenc_isa_name(isa));
      CHECK(row4(t + 0) == "0.0000 1.0000 0.0000 1.0000 0.0000 1.0000");
      CHECK(row4(t + 6) == "0.8415 0.5403 0.0464 0.9989 0.0022 1.0000");
      CHECK(row4(t + 54) == "0.4121 -0.9111 0.4057 0.9140 0.0194 0.9998");
    });
}
