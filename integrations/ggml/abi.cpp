// The versions of ggml's backend interface this backend knows (abi.hpp): ggml_version()'s string read, and its
// epoch found.
#include <cstdlib>

#include "abi.hpp"

namespace posenc_ggml {
namespace abi {

bool parse_version(const char *text, Version &out) {
  if (!text) return false;
  int parts[3];
  const char *p = text;
  for (int i = 0; i < 3; ++i) {
    if (*p < '0' || *p > '9') return false;
    char *end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (v > 1000000) return false;
    parts[i] = int(v);
    p = end;
    if (i < 2) {
      if (*p != '.') return false;
      ++p;
    }
  }
  out = Version{parts[0], parts[1], parts[2]};
  return true;
}

const Epoch *epoch_of(const Version &v) {
  for (const Epoch &e : kEpochs)
    if (!(v < e.from) && v < e.until) return &e;
  return nullptr;
}

}  // namespace abi
}  // namespace posenc_ggml
