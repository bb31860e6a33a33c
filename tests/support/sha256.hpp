// SHA-256 (FIPS 180-4), for the cross-architecture golden tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ref {

class Sha256 {
 public:
  Sha256();
  void update(const void *data, size_t n);
  std::string hex();  // finalises

 private:
  void block(const uint8_t *p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t used_ = 0;
  uint64_t total_ = 0;
};

}  // namespace ref
