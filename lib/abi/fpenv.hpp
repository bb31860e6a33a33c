// For the duration of a kernel call: round-to-nearest-even, subnormals kept (no flush-to-zero or
// denormals-are-zero), floating-point traps masked; the caller's control register is restored after.
// Inference runtimes often run with FTZ/DAZ set; without this guard the results would depend on it.
// Only written when it differs, so the common case costs one register read.
#pragma once

#include <cstdint>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace posenc {
namespace detail {

class FpEnvironment {
 public:
#if defined(__x86_64__) || defined(__i386__)
  // MXCSR: flags 0-5, DAZ 6, masks 7-12, rounding 13-14, FTZ 15
  FpEnvironment() : saved_(_mm_getcsr()) {
    const unsigned want = (saved_ & 0x3Fu) | 0x1F80u;
    changed_ = want != saved_;
    if (changed_) _mm_setcsr(want);
  }
  ~FpEnvironment() {
    if (changed_) _mm_setcsr(saved_);
  }

 private:
  unsigned saved_;
#elif defined(__aarch64__)
  // FPCR: all zero is round-to-nearest, no flush-to-zero (FZ, FZ16), IEEE half, no traps
  FpEnvironment() {
    __asm__ volatile("mrs %0, fpcr" : "=r"(saved_));
    changed_ = saved_ != 0;
    if (changed_) __asm__ volatile("msr fpcr, %0" : : "r"(uint64_t(0)));
  }
  ~FpEnvironment() {
    if (changed_) __asm__ volatile("msr fpcr, %0" : : "r"(saved_));
  }

 private:
  uint64_t saved_;
#else
  FpEnvironment() = default;

 private:
#endif
  bool changed_ = false;
  FpEnvironment(const FpEnvironment &) = delete;
  FpEnvironment &operator=(const FpEnvironment &) = delete;
};

}  // namespace detail
}  // namespace posenc
