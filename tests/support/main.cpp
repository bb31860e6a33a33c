// Catch2 main for every test binary. When POSENC_ISA names a path this machine cannot run, the whole
// binary reports "skipped" (exit code 77) instead of failing every kernel call with UNSUPPORTED.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>

#include "posenc/posenc.h"

int main(int argc, char **argv) {
  const char *env = std::getenv("POSENC_ISA");
  if (env && *env) {
    bool known = false;
    for (int v = POSENC_ISA_SCALAR; v < POSENC_ISA_COUNT; ++v)
      if (std::strcmp(env, posenc_isa_name(posenc_isa(v))) == 0) known = posenc_isa_available(posenc_isa(v));
    const char *expect_refusal = std::getenv("POSENC_TEST_EXPECT_REFUSAL");
    if (!known && !(expect_refusal && *expect_refusal)) return 77;
  }
  return Catch::Session().run(argc, argv);
}
