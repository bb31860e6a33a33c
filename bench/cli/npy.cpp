#include "npy.hpp"

#include <cstdio>
#include <cstring>
#include <string>

namespace cli {

// The format: the magic "\x93NUMPY", version 1.0, a little-endian uint16 header length, then a Python
// dict literal padded with spaces and ended by '\n' so that the data starts on a 64-byte boundary, then
// the raw little-endian data.
bool write_npy(const char *path, const float *data, int64_t rows, int64_t cols) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "'<f4' says little-endian data");
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                     std::to_string(cols) + "), }";
  const size_t prefix = 6 + 2 + 2;  // magic, version, header length
  while ((prefix + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  unsigned char head[prefix] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
  head[8] = (unsigned char)(dict.size() & 0xff);
  head[9] = (unsigned char)(dict.size() >> 8);
  FILE *f = std::fopen(path, "wb");
  if (!f) return false;
  const size_t count = size_t(rows) * size_t(cols);
  bool ok = std::fwrite(head, 1, prefix, f) == prefix && std::fwrite(dict.data(), 1, dict.size(), f) == dict.size() &&
            std::fwrite(data, sizeof(float), count, f) == count;
  ok = std::fclose(f) == 0 && ok;
  return ok;
}

}  // namespace cli
