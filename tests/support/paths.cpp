#include "paths.hpp"

#include <cstdlib>
#include <cstring>

namespace ref {

std::vector<posenc_isa> paths() {
  std::vector<posenc_isa> out;
  const char *env = std::getenv("POSENC_ISA");
  for (int v = POSENC_ISA_SCALAR; v < POSENC_ISA_COUNT; ++v) {
    const posenc_isa isa = posenc_isa(v);
    if (!posenc_isa_available(isa)) continue;
    if (env && *env && std::strcmp(env, posenc_isa_name(isa)) != 0) continue;
    out.push_back(isa);
  }
  return out;
}

}  // namespace ref
