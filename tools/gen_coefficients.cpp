// Prints the Taylor coefficients of sin(pi t / 2) and cos(pi t / 2) in t, correctly rounded to double,
// as used by lib/kernel/kernel.hpp. Build: g++ -O1 tools/gen_coefficients.cpp -lmpfr -lgmp
// tests/test_internals.cpp checks the committed values against MPFR.
#include <mpfr.h>
#include <cstdio>

int main() {
  mpfr_t half_pi, c, f, lo;
  mpfr_inits2(400, half_pi, c, f, lo, (mpfr_ptr)0);
  mpfr_const_pi(half_pi, MPFR_RNDN);
  mpfr_div_ui(half_pi, half_pi, 2, MPFR_RNDN);
  double hi = mpfr_get_d(half_pi, MPFR_RNDN);
  mpfr_sub_d(lo, half_pi, hi, MPFR_RNDN);
  std::printf("pi/2 = %a + %a\n", hi, mpfr_get_d(lo, MPFR_RNDN));
  for (int k = 2; k <= 20; ++k) {
    mpfr_pow_ui(c, half_pi, k, MPFR_RNDN);
    mpfr_fac_ui(f, k, MPFR_RNDN);
    mpfr_div(c, c, f, MPFR_RNDN);
    if ((k / 2) % 2 == 1) mpfr_neg(c, c, MPFR_RNDN);
    std::printf("k=%2d %c %.17g  %a\n", k, k % 2 ? 's' : 'c', mpfr_get_d(c, MPFR_RNDN), mpfr_get_d(c, MPFR_RNDN));
  }
  mpfr_clears(half_pi, c, f, lo, (mpfr_ptr)0);
}
