// POSENC_ISA, read once at first use. Run by meson with the variable set: a name that is unknown or not
// available here must make every kernel call return UNSUPPORTED (POSENC_TEST_EXPECT_REFUSAL=1), never
// fall back silently; an available name must select exactly that path.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>

#include "posenc/posenc.h"

TEST_CASE("POSENC_ISA selects the path or refuses every call", "[env]") {
  const char *env = std::getenv("POSENC_ISA");
  REQUIRE(env != nullptr);
  const char *refusal = std::getenv("POSENC_TEST_EXPECT_REFUSAL");
  const bool expect_refusal = refusal && std::strcmp(refusal, "1") == 0;
  const posenc_spec s = posenc_spec_default(16);
  float out[32];
  std::memset(out, 0x5A, sizeof out);
  const int64_t pos[2] = {1, 2};
  if (expect_refusal) {
    CHECK(posenc_table_f32(&s, 0, 2, out, 16) == POSENC_ERR_UNSUPPORTED);
    CHECK(posenc_rows_f32(&s, pos, 2, out, 16) == POSENC_ERR_UNSUPPORTED);
    for (unsigned char b : std::string(reinterpret_cast<char *>(out), sizeof out)) CHECK(b == 0x5A);
    CHECK(posenc_table_f32(&s, 0, 0, nullptr, 16) == POSENC_OK);  // nothing to do is not refused
    // The active path reports what was asked for (scalar for a name that means nothing).
    bool known = false;
    for (int v = 0; v <= 3; ++v)
      if (std::strcmp(env, posenc_isa_name(posenc_isa(v))) == 0) {
        known = true;
        CHECK(posenc_active_isa() == posenc_isa(v));
      }
    if (!known) CHECK(posenc_active_isa() == POSENC_ISA_SCALAR);
    // Forcing an available path afterwards is allowed and takes effect.
    REQUIRE(posenc_force_isa(POSENC_ISA_SCALAR) == POSENC_OK);
    CHECK(posenc_table_f32(&s, 0, 2, out, 16) == POSENC_OK);
  } else {
    CHECK(posenc_table_f32(&s, 0, 2, out, 16) == POSENC_OK);
    CHECK(std::strcmp(posenc_isa_name(posenc_active_isa()), env) == 0);
  }
}
