// posenc_rope_init against HF transformers' rope_type formulas (modeling_rope_utils.py, the v5 definitions),
// transcribed step by step and evaluated in real arithmetic with MPFR at 400 bits: every written f_i and the
// attention factor must be within 1 double ULP of the real value, and in fact its correctly rounded double.
// Real published configurations supply the parameters; each is cited where it is used.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "support/reference.hpp"

namespace {

constexpr mpfr_prec_t kPrec = 400;
using Big = ref::Big;

// The double nearest x (ties to even), subnormals included.
double nearest_double(mpfr_srcptr x) {
  if (mpfr_zero_p(x)) return 0.0;
  if (mpfr_get_exp(x) >= -1021) return mpfr_get_d(x, MPFR_RNDN);
  Big t(kPrec + 1100);
  mpfr_mul_2si(t, x, 1074, MPFR_RNDN);  // exact
  mpfr_rint(t, t, MPFR_RNDN);
  return std::ldexp(mpfr_get_d(t, MPFR_RNDN), -1074);
}

// |got - exact| in units of the double ULP at exact's binade (the unit floored at 2^-1074).
double ulps(double got, mpfr_srcptr exact) { return ref::ulp_error_in(got, exact, 53, -1074, kPrec + 1200); }

uint64_t bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// Worst error of a group of checks, reported once per test case.
struct Worst {
  double ulp = 0;
  void see(double u) { ulp = std::max(ulp, u); }
};

// Each value within 1 ULP of the real one, and equal to its correctly rounded double.
void expect_value(double got, mpfr_srcptr exact, Worst &w, const char *what, int64_t i) {
  const double u = ulps(got, exact);
  w.see(u);
  INFO(what << " " << i << ": got " << got << ", exact " << mpfr_get_d(exact, MPFR_RNDN) << ", " << u << " ULP");
  CHECK(u <= 1.0);
  CHECK(bits(got) == bits(nearest_double(exact)));
}

// base^(-2i/r), the default inverse frequency.
void inv_freq(mpfr_ptr out, double base, int64_t r, int64_t i) {
  Big t(kPrec);
  mpfr_set_d(t, base, MPFR_RNDN);
  mpfr_log(t, t, MPFR_RNDN);
  mpfr_mul_si(t, t, -2 * long(i), MPFR_RNDN);
  mpfr_div_si(t, t, long(r), MPFR_RNDN);
  mpfr_exp(out, t, MPFR_RNDN);
}

posenc_rope_scaling scaling_of(posenc_rope_type type) {
  posenc_rope_scaling s;
  std::memset(&s, 0, sizeof s);
  s.type = type;
  return s;
}

// posenc_rope_init with explicit frequencies; checks the fields every scheme sets.
std::vector<double> init_explicit(int64_t r, double base, const posenc_rope_scaling &s, posenc_rope *rope) {
  std::vector<double> f(size_t(r / 2) + 1, -7.0);
  REQUIRE(posenc_rope_init(rope, r, base, &s, f.data()) == POSENC_OK);
  CHECK(rope->rotary_dim == r);
  CHECK(rope->pairs == POSENC_ROPE_HALVES);
  CHECK(rope->position_scale == 1.0);
  CHECK(rope->base == base);
  CHECK(rope->freq == f.data());
  CHECK(f[size_t(r / 2)] == -7.0);  // nothing past r/2
  f.pop_back();
  return f;
}

// ---- the HF formulas, in real arithmetic ------------------------------------------------------------------

// _compute_linear_scaling_rope_parameters: inv_freq / factor.
void hf_linear(mpfr_ptr out, double base, int64_t r, int64_t i, double factor) {
  inv_freq(out, base, r, i);
  mpfr_div_d(out, out, factor, MPFR_RNDN);
}

// 1 / (base * X ** (r / (r - 2))) ** (2i / r) for X in x (overwritten): the dynamic schemes' frequencies.
void ntk_power(mpfr_ptr out, double base, int64_t r, int64_t i, mpfr_ptr x) {
  Big lnb(kPrec);
  mpfr_log(x, x, MPFR_RNDN);  // ln X, raised to r / (r - 2)
  mpfr_mul_si(x, x, long(r), MPFR_RNDN);
  mpfr_div_si(x, x, long(r - 2), MPFR_RNDN);
  mpfr_set_d(lnb, base, MPFR_RNDN);
  mpfr_log(lnb, lnb, MPFR_RNDN);
  mpfr_add(lnb, lnb, x, MPFR_RNDN);  // ln base'
  mpfr_mul_si(lnb, lnb, -2 * long(i), MPFR_RNDN);
  mpfr_div_si(lnb, lnb, long(r), MPFR_RNDN);
  mpfr_exp(out, lnb, MPFR_RNDN);
}

// _compute_dynamic_ntk_parameters: L = max(seq_len, max_position_embeddings),
// base' = base * ((factor * L / Lmax) - (factor - 1)) ** (dim / (dim - 2)), then 1 / base' ** (2i / dim).
void hf_dynamic(mpfr_ptr out, double base, int64_t r, int64_t i, double factor, int64_t lmax, int64_t seq) {
  const int64_t L = std::max(seq, lmax);
  Big x(kPrec), fm1(kPrec);
  mpfr_set_d(x, factor, MPFR_RNDN);
  mpfr_mul_si(x, x, long(L), MPFR_RNDN);
  mpfr_div_si(x, x, long(lmax), MPFR_RNDN);
  mpfr_set_d(fm1, factor, MPFR_RNDN);
  mpfr_sub_ui(fm1, fm1, 1, MPFR_RNDN);
  mpfr_sub(x, x, fm1, MPFR_RNDN);
  ntk_power(out, base, r, i, x);
}

// get_mscale(scale, mscale) = 1 if scale <= 1 else 0.1 * mscale * ln(scale) + 1 (0.1 the real 1/10).
void hf_get_mscale(mpfr_ptr out, double scale, double mscale) {
  if (scale <= 1.0) {
    mpfr_set_ui(out, 1, MPFR_RNDN);
    return;
  }
  mpfr_set_d(out, scale, MPFR_RNDN);
  mpfr_log(out, out, MPFR_RNDN);
  mpfr_mul_d(out, out, mscale, MPFR_RNDN);
  mpfr_div_ui(out, out, 10, MPFR_RNDN);
  mpfr_add_ui(out, out, 1, MPFR_RNDN);
}

// _compute_yarn_parameters (v5): attention factor and the blended frequencies.
struct Yarn {
  double base;
  int64_t r;
  double factor;
  int64_t original;
  double beta_fast, beta_slow;  // 0: HF's `or 32` / `or 1`
  double mscale, mscale_all_dim;
  bool truncate;
  double attention_factor;  // 0: derived
};

void hf_yarn_attention(mpfr_ptr out, const Yarn &y) {
  if (y.attention_factor != 0.0) {
    mpfr_set_d(out, y.attention_factor, MPFR_RNDN);
  } else if (y.mscale != 0.0 && y.mscale_all_dim != 0.0) {
    Big den(kPrec);
    hf_get_mscale(out, y.factor, y.mscale);
    hf_get_mscale(den, y.factor, y.mscale_all_dim);
    mpfr_div(out, out, den, MPFR_RNDN);
  } else {
    hf_get_mscale(out, y.factor, 1.0);
  }
}

// find_correction_dim: (dim * ln(max_pos / (num_rotations * 2 pi))) / (2 ln base)
void hf_correction_dim(mpfr_ptr out, double rotations, const Yarn &y) {
  Big t(kPrec), lb(kPrec);
  mpfr_const_pi(t, MPFR_RNDN);
  mpfr_mul_ui(t, t, 2, MPFR_RNDN);
  mpfr_mul_d(t, t, rotations, MPFR_RNDN);
  mpfr_si_div(t, long(y.original), t, MPFR_RNDN);
  mpfr_log(t, t, MPFR_RNDN);
  mpfr_mul_si(t, t, long(y.r), MPFR_RNDN);
  mpfr_set_d(lb, y.base, MPFR_RNDN);
  mpfr_log(lb, lb, MPFR_RNDN);
  mpfr_mul_ui(lb, lb, 2, MPFR_RNDN);
  mpfr_div(out, t, lb, MPFR_RNDN);
}

void hf_yarn(mpfr_ptr out, const Yarn &y, int64_t j) {
  const double bf = y.beta_fast != 0.0 ? y.beta_fast : 32.0, bs = y.beta_slow != 0.0 ? y.beta_slow : 1.0;
  Big low(kPrec), high(kPrec), zero(kPrec), top(kPrec);
  hf_correction_dim(low, bf, y);
  hf_correction_dim(high, bs, y);
  if (y.truncate) {
    mpfr_floor(low, low);
    mpfr_ceil(high, high);
  }
  mpfr_set_ui(zero, 0, MPFR_RNDN);
  mpfr_set_si(top, long(y.r - 1), MPFR_RNDN);
  mpfr_max(low, low, zero, MPFR_RNDN);
  mpfr_min(high, high, top, MPFR_RNDN);
  // linear_ramp_factor(low, high, dim // 2)
  if (mpfr_equal_p(low, high)) mpfr_add_d(high, high, 0.001, MPFR_RNDN);
  Big ramp(kPrec), span(kPrec);
  mpfr_set_si(ramp, long(j), MPFR_RNDN);
  mpfr_sub(ramp, ramp, low, MPFR_RNDN);
  mpfr_sub(span, high, low, MPFR_RNDN);
  mpfr_div(ramp, ramp, span, MPFR_RNDN);
  if (mpfr_cmp_ui(ramp, 0) < 0) mpfr_set_ui(ramp, 0, MPFR_RNDN);
  if (mpfr_cmp_ui(ramp, 1) > 0) mpfr_set_ui(ramp, 1, MPFR_RNDN);
  // pos_freqs = base ** (arange(0, dim, 2) / dim); extrapolation = 1 / pos; interpolation = 1 / (factor pos)
  Big extra(kPrec), inter(kPrec), ef(kPrec), a(kPrec);
  inv_freq(extra, y.base, y.r, j);
  mpfr_div_d(inter, extra, y.factor, MPFR_RNDN);
  mpfr_ui_sub(ef, 1, ramp, MPFR_RNDN);  // inv_freq_extrapolation_factor = 1 - ramp
  mpfr_ui_sub(a, 1, ef, MPFR_RNDN);
  mpfr_mul(a, a, inter, MPFR_RNDN);     // interpolation * (1 - ef)
  mpfr_mul(out, extra, ef, MPFR_RNDN);  // + extrapolation * ef
  mpfr_add(out, out, a, MPFR_RNDN);
}

// _compute_llama3_parameters.
void hf_llama3(mpfr_ptr out, double base, int64_t r, int64_t i, double factor, double lff, double hff,
               int64_t old_context) {
  Big inv(kPrec), wavelen(kPrec), low_wl(kPrec), high_wl(kPrec);
  inv_freq(inv, base, r, i);
  mpfr_const_pi(wavelen, MPFR_RNDN);
  mpfr_mul_ui(wavelen, wavelen, 2, MPFR_RNDN);
  mpfr_div(wavelen, wavelen, inv, MPFR_RNDN);  // 2 pi / inv_freq
  mpfr_set_si(low_wl, long(old_context), MPFR_RNDN);
  mpfr_div_d(low_wl, low_wl, lff, MPFR_RNDN);
  mpfr_set_si(high_wl, long(old_context), MPFR_RNDN);
  mpfr_div_d(high_wl, high_wl, hff, MPFR_RNDN);
  if (mpfr_greater_p(wavelen, low_wl)) {
    mpfr_div_d(out, inv, factor, MPFR_RNDN);
  } else if (mpfr_less_p(wavelen, high_wl)) {
    mpfr_set(out, inv, MPFR_RNDN);
  } else {  // smooth = (old_context / wavelen - lff) / (hff - lff); (1 - smooth) inv / factor + smooth inv
    Big sm(kPrec), d(kPrec), a(kPrec);
    mpfr_si_div(sm, long(old_context), wavelen, MPFR_RNDN);
    mpfr_sub_d(sm, sm, lff, MPFR_RNDN);
    mpfr_set_d(d, hff, MPFR_RNDN);
    mpfr_sub_d(d, d, lff, MPFR_RNDN);
    mpfr_div(sm, sm, d, MPFR_RNDN);
    mpfr_ui_sub(a, 1, sm, MPFR_RNDN);
    mpfr_mul(a, a, inv, MPFR_RNDN);
    mpfr_div_d(a, a, factor, MPFR_RNDN);
    mpfr_mul(out, sm, inv, MPFR_RNDN);
    mpfr_add(out, out, a, MPFR_RNDN);
  }
}

// _compute_longrope_parameters: 1 / (ext_factors * base ** (2i / dim)); attention sqrt(1 + ln f / ln L0).
void hf_longrope(mpfr_ptr out, double base, int64_t r, int64_t i, double ext) {
  inv_freq(out, base, r, i);
  mpfr_div_d(out, out, ext, MPFR_RNDN);
}
void hf_longrope_attention(mpfr_ptr out, double factor, int64_t original) {
  if (factor <= 1.0) {
    mpfr_set_ui(out, 1, MPFR_RNDN);
    return;
  }
  Big lo(kPrec);
  mpfr_set_d(out, factor, MPFR_RNDN);
  mpfr_log(out, out, MPFR_RNDN);
  mpfr_set_si(lo, long(original), MPFR_RNDN);
  mpfr_log(lo, lo, MPFR_RNDN);
  mpfr_div(out, out, lo, MPFR_RNDN);
  mpfr_add_ui(out, out, 1, MPFR_RNDN);
  mpfr_sqrt(out, out, MPFR_RNDN);
}

void check_yarn(const Yarn &y, Worst &w) {
  posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_YARN);
  s.factor = y.factor;
  s.original_max_positions = y.original;
  s.beta_fast = y.beta_fast;
  s.beta_slow = y.beta_slow;
  s.mscale = y.mscale;
  s.mscale_all_dim = y.mscale_all_dim;
  s.truncate = y.truncate ? 1 : 0;
  s.attention_factor = y.attention_factor;
  posenc_rope rope;
  const std::vector<double> f = init_explicit(y.r, y.base, s, &rope);
  Big e(kPrec);
  for (int64_t j = 0; j < y.r / 2; ++j) {
    hf_yarn(e, y, j);
    expect_value(f[size_t(j)], e, w, "yarn f", j);
  }
  hf_yarn_attention(e, y);
  expect_value(rope.attention_scale, e, w, "yarn attention", 0);
}

// ---- published configurations -----------------------------------------------------------------------------

// Phi-3-vision-128k-instruct's "su" (LongRoPE) factors, the Phi-3-mini-128k-instruct text model's first
// release: r = 96 (hidden 3072 / 32 heads), rope_theta 1e4, original_max_position_embeddings 4096,
// max_position_embeddings 131072. From the config dict in modelscope/DiffSynth-Studio
// diffsynth/models/omnigen.py (OmniGenTransformer, "_name_or_path": "Phi-3-vision-128k-instruct").
const double kPhi3LongFactor[48] = {
    1.0299999713897705, 1.0499999523162842, 1.0499999523162842, 1.0799999237060547, 1.2299998998641968,
    1.2299998998641968, 1.2999999523162842, 1.4499999284744263, 1.5999999046325684, 1.6499998569488525,
    1.8999998569488525, 2.859999895095825,  3.68999981880188,   5.419999599456787,  5.489999771118164,
    5.489999771118164,  9.09000015258789,   11.579999923706055, 15.65999984741211,  15.769999504089355,
    15.789999961853027, 18.360000610351562, 21.989999771118164, 23.079999923706055, 30.009998321533203,
    32.35000228881836,  32.590003967285156, 35.56000518798828,  39.95000457763672,  53.840003967285156,
    56.20000457763672,  57.95000457763672,  59.29000473022461,  59.77000427246094,  59.920005798339844,
    61.190006256103516, 61.96000671386719,  62.50000762939453,  63.3700065612793,   63.48000717163086,
    63.48000717163086,  63.66000747680664,  63.850006103515625, 64.08000946044922,  64.760009765625,
    64.80001068115234,  64.81001281738281,  64.81001281738281};
// a table, laid out by hand
// clang-format off
const double kPhi3ShortFactor[48] = {
    1.05, 1.05, 1.05, 1.1, 1.1, 1.1, 1.2500000000000002, 1.2500000000000002, 1.4000000000000004,
    1.4500000000000004, 1.5500000000000005, 1.8500000000000008, 1.9000000000000008, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.1000000000000005, 2.1000000000000005, 2.2,
    2.3499999999999996, 2.3499999999999996, 2.3499999999999996, 2.3499999999999996, 2.3999999999999995,
    2.3999999999999995, 2.6499999999999986, 2.6999999999999984, 2.8999999999999977, 2.9499999999999975,
    3.049999999999997, 3.049999999999997, 3.049999999999997};
// clang-format on

// Phi-3.5-mini-instruct (same geometry): short_factor from google-ai-edge/ai-edge-torch
// ai_edge_torch/generative/examples/phi/phi3.py (ROPE_SHORT_FACTOR), long_factor from the config dict in
// sdpython/experimental-experiment _doc/recipes/plot_exporter_recipes_c_phi35.py.
const double kPhi35LongFactor[48] = {
    1.0800000429153442, 1.1100000143051147, 1.1399999856948853, 1.340000033378601,  1.5899999141693115,
    1.600000023841858,  1.6200000047683716, 2.620000123977661,  3.2300000190734863, 3.2300000190734863,
    4.789999961853027,  7.400000095367432,  7.700000286102295,  9.09000015258789,   12.199999809265137,
    17.670000076293945, 24.46000099182129,  28.57000160217285,  30.420001983642578, 30.840002059936523,
    32.590003967285156, 32.93000411987305,  42.320003509521484, 44.96000289916992,  50.340003967285156,
    50.45000457763672,  57.55000305175781,  57.93000411987305,  58.21000289916992,  60.1400032043457,
    62.61000442504883,  62.62000274658203,  62.71000289916992,  63.1400032043457,   63.1400032043457,
    63.77000427246094,  63.93000411987305,  63.96000289916992,  63.970001220703125, 64.02999877929688,
    64.06999969482422,  64.08000183105469,  64.12000274658203,  64.41000366210938,  64.4800033569336,
    64.51000213623047,  64.52999877929688,  64.83999633789062};
// a table, laid out by hand
// clang-format off
const double kPhi35ShortFactor[48] = {
    1.0,                1.0199999809265137, 1.0299999713897705, 1.0299999713897705, 1.0499999523162842,
    1.0499999523162842, 1.0499999523162842, 1.0499999523162842, 1.0499999523162842, 1.0699999332427979,
    1.0999999046325684, 1.1099998950958252, 1.1599998474121094, 1.1599998474121094, 1.1699998378753662,
    1.2899998426437378, 1.339999794960022,  1.679999828338623,  1.7899998426437378, 1.8199998140335083,
    1.8499997854232788, 1.8799997568130493, 1.9099997282028198, 1.9399996995925903, 1.9899996519088745,
    2.0199997425079346, 2.0199997425079346, 2.0199997425079346, 2.0199997425079346, 2.0199997425079346,
    2.0199997425079346, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914,
    2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914,
    2.0799996852874756, 2.0899996757507324, 2.189999580383301,  2.2199995517730713, 2.5899994373321533,
    2.729999542236328,  2.749999523162842,  2.8399994373321533};
// clang-format on

}  // namespace

TEST_CASE("default: Llama 2 7B, Mistral 7B v0.2 / Qwen2, plain base^(-2i/r) without explicit frequencies",
          "[rope_init]") {
  // Llama-2-7b: head_dim 128, rope_theta 1e4. Mistral-7B-v0.2 and Qwen2: rope_theta 1e6. Llama 3: 5e5.
  for (double base : {1e4, 1e6, 5e5}) {
    std::vector<double> f(64, -7.0);
    const std::vector<double> before = f;
    posenc_rope rope;
    std::memset(&rope, 0xA5, sizeof rope);
    REQUIRE(posenc_rope_init(&rope, 128, base, nullptr, f.data()) == POSENC_OK);
    CHECK(rope.rotary_dim == 128);
    CHECK(rope.pairs == POSENC_ROPE_HALVES);
    CHECK(rope.base == base);
    CHECK(rope.position_scale == 1.0);
    CHECK(rope.freq == nullptr);
    CHECK(rope.attention_scale == 1.0);
    CHECK(f == before);  // the caller's array is not touched

    const posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_DEFAULT);
    posenc_rope r2;
    REQUIRE(posenc_rope_init(&r2, 128, base, &s, nullptr) == POSENC_OK);  // freq may be NULL
    CHECK(std::memcmp(&r2, &rope, sizeof rope) == 0);
  }
}

TEST_CASE("linear: inv_freq / factor, explicit (one rounding) or as position_scale", "[rope_init]") {
  // Llama 2 geometry (r 128, rope_theta 1e4) with linear factors as in LongChat-style fine-tunes (2, 4, 8)
  // and non-powers of two; Qwen2-like base 1e6 with factor 1.5; a partial rotary r = 96 (Phi-3 geometry).
  struct Case {
    int64_t r;
    double base, factor;
  };
  Worst w;
  Big e(kPrec);
  for (const Case &c : {Case{128, 1e4, 2.0}, Case{128, 1e4, 8.0}, Case{128, 1e4, 3.0}, Case{128, 1e6, 1.5},
                        Case{96, 1e4, 40.0}, Case{64, 10000.3, 0.75}, Case{2, 1e4, 7.0}}) {
    posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_LINEAR);
    s.factor = c.factor;
    posenc_rope rope;
    const std::vector<double> f = init_explicit(c.r, c.base, s, &rope);
    CHECK(rope.attention_scale == 1.0);
    for (int64_t i = 0; i < c.r / 2; ++i) {
      hf_linear(e, c.base, c.r, i, c.factor);
      expect_value(f[size_t(i)], e, w, "linear f", i);
    }
    // Without a frequency array: base^(-2i/r) with position_scale = 1/factor rounded once.
    posenc_rope plain;
    REQUIRE(posenc_rope_init(&plain, c.r, c.base, &s, nullptr) == POSENC_OK);
    CHECK(plain.freq == nullptr);
    CHECK(plain.base == c.base);
    mpfr_set_ui(e, 1, MPFR_RNDN);
    mpfr_div_d(e, e, c.factor, MPFR_RNDN);
    expect_value(plain.position_scale, e, w, "linear position_scale", 0);
  }
  WARN("linear: max " << w.ulp << " double ULP");
}

TEST_CASE("proportional: Gemma 4's global layers, the first floor(p r / 2) pairs at base^(-2i/r) / factor",
          "[rope_init]") {
  // HF v5 _compute_proportional_rope_parameters: rope_angles = int(p * head_dim // 2) pairs rotate at
  // base^(-2i/head_dim) / factor, the other head_dim / 2 - rope_angles have frequency 0 (not rotated).
  // Gemma 4: global_head_dim 512, rope_theta 1e6, partial_rotary_factor 0.25 (64 of 256 pairs), factor 1.
  struct Case {
    int64_t r;
    double base, factor, p;
    int64_t rotated;  // written out here, not computed from p
  };
  Worst w;
  Big e(kPrec);
  for (const Case &c : {Case{512, 1e6, 0.0, 0.25, 64}, Case{512, 1e6, 1.0, 0.25, 64}, Case{256, 1e4, 0.0, 0.0, 128},
                        Case{128, 1e4, 8.0, 0.5, 32}, Case{96, 5e5, 2.5, 1.0 / 3.0, 16}, Case{64, 1e4, 1.0, 0.1, 3},
                        Case{16, 1e4, 1.0, 0.01, 0}, Case{2, 1e4, 3.0, 1.0, 1}, Case{512, 1e6, 0.0, 0.7, 179},
                        Case{100, 1e4, 1.0, 0.58, 28}}) {  // fl(0.58 * 100) = 57.99999999999999: 28, not 29
    INFO("r " << c.r << " base " << c.base << " factor " << c.factor << " p " << c.p);
    posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_PROPORTIONAL);
    s.factor = c.factor;
    s.partial_rotary_factor = c.p;
    posenc_rope rope;
    const std::vector<double> f = init_explicit(c.r, c.base, s, &rope);
    CHECK(rope.attention_scale == 1.0);
    for (int64_t i = 0; i < c.r / 2; ++i) {
      if (i >= c.rotated) {
        CHECK(f[size_t(i)] == 0.0);
        CHECK(!std::signbit(f[size_t(i)]));
        continue;
      }
      hf_linear(e, c.base, c.r, i, c.factor == 0.0 ? 1.0 : c.factor);
      expect_value(f[size_t(i)], e, w, "proportional f", i);
    }
  }
  WARN("proportional: max " << w.ulp << " double ULP");
  // The rows: the pairs past the rotated ones keep their elements, bit for bit, at every position.
  posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_PROPORTIONAL);
  s.partial_rotary_factor = 0.25;
  std::vector<double> f(256);
  posenc_rope rope;
  REQUIRE(posenc_rope_init(&rope, 512, 1e6, &s, f.data()) == POSENC_OK);
  const int64_t pos[3] = {0, 123456789, 2147483647};
  std::vector<float> x(3 * 512), y;
  for (size_t k = 0; k < x.size(); ++k) x[k] = float(k % 97) / 7.0f - 6.0f;
  y = x;
  REQUIRE(posenc_rope_f32(&rope, pos, 0, 3, y.data(), 1, 512, 512) == POSENC_OK);
  for (int t = 0; t < 3; ++t)
    for (int i = 64; i < 256; ++i) {
      CHECK(y[size_t(t * 512 + i)] == x[size_t(t * 512 + i)]);
      CHECK(y[size_t(t * 512 + 256 + i)] == x[size_t(t * 512 + 256 + i)]);
    }
  CHECK(y[512 + 1] != x[512 + 1]);  // pair 1 at 123456789 turns
}

// vLLM's DynamicNTKAlphaRotaryEmbedding (HunYuan): base' = base * alpha ** (r / (r - 2)), 1 / base' ** (2i / r).
void vllm_dynamic_alpha(mpfr_ptr out, double base, int64_t r, int64_t i, double alpha) {
  Big x(kPrec);
  mpfr_set_d(x, alpha, MPFR_RNDN);
  ntk_power(out, base, r, i, x);
}

TEST_CASE("dynamic with alpha: vLLM's NTK alpha (HunYuan), the length rule replaced", "[rope_init]") {
  // HunYuan's configs: rope_scaling {"type": "dynamic", "alpha": ...} (vLLM's get_rope picks
  // DynamicNTKAlphaRotaryEmbedding whenever "alpha" is present, factor or not); alpha below 1 shrinks the base.
  struct Case {
    int64_t r;
    double base, alpha;
  };
  Worst w;
  Big e(kPrec);
  for (const Case &c : {Case{128, 1e4, 1000.0}, Case{128, 1e4, 50.0}, Case{64, 5e5, 2.5}, Case{4, 1e4, 3.0},
                        Case{128, 1e4, 0.25}, Case{128, 1e4, 1.0}}) {
    for (int64_t seq : {int64_t(0), int64_t(1) << 20}) {  // the length is not read
      posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_DYNAMIC);
      s.alpha = c.alpha;
      s.factor = 7.0;  // not read either
      s.seq_len = seq;
      INFO("r " << c.r << ", base " << c.base << ", alpha " << c.alpha << ", seq_len " << seq);
      std::vector<double> f(size_t(c.r / 2), -7.0);
      posenc_rope rope;
      REQUIRE(posenc_rope_init(&rope, c.r, c.base, &s, f.data()) == POSENC_OK);
      CHECK(rope.attention_scale == 1.0);
      if (c.alpha == 1.0) {  // base' = base: the plain spec
        CHECK(rope.freq == nullptr);
        continue;
      }
      CHECK(rope.freq == f.data());
      for (int64_t i = 0; i < c.r / 2; ++i) {
        vllm_dynamic_alpha(e, c.base, c.r, i, c.alpha);
        expect_value(f[size_t(i)], e, w, "dynamic alpha f", i);
      }
    }
  }
  WARN("dynamic alpha: max " << w.ulp << " double ULP");
  for (double a : {-1.0, HUGE_VAL, double(NAN)}) {
    posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_DYNAMIC);
    s.alpha = a;
    std::vector<double> f(64);
    posenc_rope rope;
    CHECK(posenc_rope_init(&rope, 128, 1e4, &s, f.data()) == POSENC_ERR_INVALID);
  }
}

TEST_CASE("dynamic NTK: the base grows with the sequence length", "[rope_init]") {
  // Llama 2 geometry (r 128, rope_theta 1e4, max_position_embeddings 4096) with dynamic factor 2, as HF's
  // dynamic-NTK example; Qwen-style base 1e6, 32768 with factor 4; r = 64 and a small r = 4.
  struct Case {
    int64_t r;
    double base, factor;
    int64_t lmax;
  };
  Worst w;
  Big e(kPrec);
  for (const Case &c : {Case{128, 1e4, 2.0, 4096}, Case{128, 1e6, 4.0, 32768}, Case{64, 1e4, 8.0, 2048},
                        Case{4, 1e4, 2.0, 4096}, Case{128, 5e5, 0.5, 8192}}) {
    for (int64_t seq : {int64_t(0), c.lmax - 1, c.lmax, c.lmax + 1, int64_t(5000), 2 * c.lmax, 3 * c.lmax + 17,
                        int64_t(100000), int64_t(1) << 20, (int64_t(1) << 31) - 1}) {
      posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_DYNAMIC);
      s.factor = c.factor;
      s.original_max_positions = c.lmax;
      s.seq_len = seq;
      INFO("r " << c.r << ", base " << c.base << ", factor " << c.factor << ", seq_len " << seq);
      std::vector<double> f(size_t(c.r / 2), -7.0);
      posenc_rope rope;
      REQUIRE(posenc_rope_init(&rope, c.r, c.base, &s, f.data()) == POSENC_OK);
      CHECK(rope.attention_scale == 1.0);
      CHECK(rope.base == c.base);
      if (seq <= c.lmax) {  // base' = base: the plain spec, frequencies untouched
        CHECK(rope.freq == nullptr);
        CHECK(f == std::vector<double>(size_t(c.r / 2), -7.0));
        continue;
      }
      CHECK(rope.freq == f.data());
      for (int64_t i = 0; i < c.r / 2; ++i) {
        hf_dynamic(e, c.base, c.r, i, c.factor, c.lmax, seq);
        expect_value(f[size_t(i)], e, w, "dynamic f", i);
      }
    }
  }
  WARN("dynamic: max " << w.ulp << " double ULP");
}

TEST_CASE("yarn: Qwen2 with YaRN, DeepSeek-V2 / V3 (mscale rule), gpt-oss (truncate false)", "[rope_init]") {
  Worst w;
  // Qwen2-7B-Instruct's long-context recipe (its model card): rope_theta 1e6, head_dim 128,
  // rope_scaling {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}.
  check_yarn(Yarn{1e6, 128, 4.0, 32768, 0, 0, 0, 0, true, 0}, w);
  // DeepSeek-V2 config.json: qk_rope_head_dim 64, rope_theta 10000, rope_scaling {"type": "yarn",
  // "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1,
  // "mscale": 0.707, "mscale_all_dim": 0.707}: the attention factor is exactly 1.
  check_yarn(Yarn{10000, 64, 40, 4096, 32, 1, 0.707, 0.707, true, 0}, w);
  // DeepSeek-V3 config.json: the same with "mscale": 1.0, "mscale_all_dim": 1.0.
  check_yarn(Yarn{10000, 64, 40, 4096, 32, 1, 1.0, 1.0, true, 0}, w);
  // The both-truthy rule: mscale alone is ignored (HF), the ratio when both differ.
  check_yarn(Yarn{10000, 64, 40, 4096, 32, 1, 0.707, 0, true, 0}, w);
  check_yarn(Yarn{10000, 64, 40, 4096, 32, 1, 1.0, 0.707, true, 0}, w);
  check_yarn(Yarn{10000, 64, 40, 4096, 32, 1, 0.5, 1.3, true, 0}, w);
  // gpt-oss config.json: head_dim 64, rope_theta 150000, rope_scaling {"rope_type": "yarn", "factor": 32,
  // "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1, "truncate": false}.
  check_yarn(Yarn{150000, 64, 32, 4096, 32, 1, 0, 0, false, 0}, w);
  // Llama-style YaRN fine-tunes (NousResearch Yarn-Llama-2-7b-64k: factor 16, original 4096), an explicit
  // attention_factor, a factor <= 1, and a clamped range (a huge original length).
  check_yarn(Yarn{10000, 128, 16, 4096, 0, 0, 0, 0, true, 0}, w);
  check_yarn(Yarn{10000, 128, 16, 4096, 0, 0, 0, 0, false, 0}, w);
  check_yarn(Yarn{10000, 128, 8, 4096, 0, 0, 0, 0, true, 1.25}, w);
  check_yarn(Yarn{10000, 128, 0.5, 4096, 0, 0, 0, 0, true, 0}, w);
  check_yarn(Yarn{10000, 16, 4, int64_t(1) << 40, 0, 0, 0, 0, true, 0}, w);
  check_yarn(Yarn{10000, 16, 4, 4, 0, 0, 0, 0, true, 0}, w);
  check_yarn(Yarn{10000, 16, 4, 4, 0, 0, 0, 0, false, 0}, w);
  check_yarn(Yarn{1e6, 128, 4.0, 32768, 64, 0.5, 0, 0, true, 0}, w);
  WARN("yarn: max " << w.ulp << " double ULP");
}

TEST_CASE("yarn: the correction range is HF's floor / ceil, clamped to [0, r - 1]", "[rope_init]") {
  // Qwen2 YaRN: cd(32) = 128 ln(32768 / (64 pi)) / (2 ln 1e6) = 23.59..., cd(1) = 39.65...: low 23, high 40;
  // pairs 0..23 keep the base frequency, 40..63 are divided by 4, the ramp lies in between.
  posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_YARN);
  s.factor = 4.0;
  s.original_max_positions = 32768;
  s.truncate = 1;
  posenc_rope rope;
  const std::vector<double> f = init_explicit(128, 1e6, s, &rope);
  Big e(kPrec);
  for (int64_t j = 0; j < 64; ++j) {
    inv_freq(e, 1e6, 128, j);
    const double inv = nearest_double(e);
    mpfr_div_ui(e, e, 4, MPFR_RNDN);
    const double inv4 = nearest_double(e);
    INFO("pair " << j);
    if (j <= 23)
      CHECK(f[size_t(j)] == inv);
    else if (j >= 40)
      CHECK(f[size_t(j)] == inv4);
    else
      CHECK((f[size_t(j)] < inv && f[size_t(j)] > inv4));
  }
  // The attention factor 0.1 ln 4 + 1.
  CHECK(std::fabs(rope.attention_scale - (0.1 * std::log(4.0) + 1.0)) < 1e-15);
}

TEST_CASE("llama3: Llama 3.1 8B's wavelength bands", "[rope_init]") {
  // Llama-3.1-8B config.json: head_dim 128, rope_theta 500000, rope_scaling {"rope_type": "llama3",
  // "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}.
  // Llama 3.2 1B/3B: factor 32. Plus a band that covers most pairs.
  struct Case {
    int64_t r;
    double base, factor, lff, hff;
    int64_t old;
  };
  Worst w;
  Big e(kPrec);
  int64_t low_band = 0, mid_band = 0, high_band = 0;
  for (const Case &c : {Case{128, 500000, 8, 1, 4, 8192}, Case{128, 500000, 32, 1, 4, 8192},
                        Case{64, 10000, 4, 0.5, 16, 2048}, Case{128, 500000, 0.5, 1, 4, 8192}}) {
    posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_LLAMA3);
    s.factor = c.factor;
    s.low_freq_factor = c.lff;
    s.high_freq_factor = c.hff;
    s.original_max_positions = c.old;
    posenc_rope rope;
    const std::vector<double> f = init_explicit(c.r, c.base, s, &rope);
    CHECK(rope.attention_scale == 1.0);
    for (int64_t i = 0; i < c.r / 2; ++i) {
      hf_llama3(e, c.base, c.r, i, c.factor, c.lff, c.hff, c.old);
      expect_value(f[size_t(i)], e, w, "llama3 f", i);
      // which band (for the coverage count below)
      Big inv(kPrec);
      inv_freq(inv, c.base, c.r, i);
      const double x = mpfr_get_d(inv, MPFR_RNDN) * double(c.old) / 6.283185307179586;
      (x < c.lff ? low_band : x > c.hff ? high_band : mid_band) += 1;
    }
  }
  CHECK(low_band > 0);
  CHECK(mid_band > 0);
  CHECK(high_band > 0);
  WARN("llama3: max " << w.ulp << " double ULP");
}

TEST_CASE("longrope: Phi-3 mini 128k / Phi-3.5 mini factors chosen by seq_len, attention sqrt(1 + ln f / ln L0)",
          "[rope_init]") {
  struct Case {
    const double *short_f, *long_f;
  };
  Worst w;
  Big e(kPrec);
  for (const Case &c : {Case{kPhi3ShortFactor, kPhi3LongFactor}, Case{kPhi35ShortFactor, kPhi35LongFactor}}) {
    for (int64_t seq : {int64_t(0), int64_t(100), int64_t(4096), int64_t(4097), int64_t(131072)}) {
      posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_LONGROPE);
      s.factor = 131072.0 / 4096.0;  // max_position_embeddings / original_max_position_embeddings = 32
      s.original_max_positions = 4096;
      s.seq_len = seq;
      s.short_factor = c.short_f;
      s.long_factor = c.long_f;
      posenc_rope rope;
      const std::vector<double> f = init_explicit(96, 10000.0, s, &rope);
      const double *ext = seq > 4096 ? c.long_f : c.short_f;
      for (int64_t i = 0; i < 48; ++i) {
        hf_longrope(e, 10000.0, 96, i, ext[i]);
        expect_value(f[size_t(i)], e, w, "longrope f", i);
      }
      hf_longrope_attention(e, 32.0, 4096);  // sqrt(1 + 5/12)
      expect_value(rope.attention_scale, e, w, "longrope attention", 0);
    }
  }
  // An explicit attention_factor wins and the factor is then not read; a factor <= 1 gives 1.
  posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_LONGROPE);
  s.original_max_positions = 4096;
  s.short_factor = kPhi3ShortFactor;
  s.long_factor = kPhi3LongFactor;
  s.attention_factor = 1.1902380714238083;
  posenc_rope rope;
  init_explicit(96, 10000.0, s, &rope);
  CHECK(rope.attention_scale == 1.1902380714238083);
  s.attention_factor = 0;
  s.factor = 0.75;
  init_explicit(96, 10000.0, s, &rope);
  CHECK(rope.attention_scale == 1.0);
  WARN("longrope: max " << w.ulp << " double ULP");
}

TEST_CASE("many geometries: explicit frequencies are correctly rounded", "[rope_init]") {
  // Odd bases, every small r, big r; linear and longrope exercise the shared exp path, yarn the ramp.
  Worst w;
  Big e(kPrec);
  std::vector<double> ext(512);
  for (size_t i = 0; i < ext.size(); ++i) ext[i] = 1.0 + 0.37 * double(i % 29) + 1e-3 * double(i);
  for (double base : {2.0, 3.0, 10.0, 1234.5678, 1e4, 10000.3, 1234567.891, 1e9, 0.5, 1e-3}) {
    for (int64_t r : {2, 4, 6, 8, 10, 12, 18, 32, 80, 96, 128, 160, 256, 1024}) {
      posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_LONGROPE);
      s.factor = 2;
      s.original_max_positions = 10;
      s.short_factor = ext.data();
      s.long_factor = ext.data();
      posenc_rope rope;
      const std::vector<double> f = init_explicit(r, base, s, &rope);
      for (int64_t i = 0; i < r / 2; ++i) {
        hf_longrope(e, base, r, i, ext[size_t(i)]);
        expect_value(f[size_t(i)], e, w, "longrope f", i);
      }
      if (base > 1.0 && r >= 4) check_yarn(Yarn{base, r, 3.0, 1000, 0, 0, 0, 0, (r / 2) % 2 == 0, 0}, w);
    }
  }
  WARN("many geometries: max " << w.ulp << " double ULP");
}

TEST_CASE("subnormal and huge frequencies round correctly; 2^1000 is the limit", "[rope_init]") {
  Worst w;
  Big e(kPrec);
  // f_i = base^(-2i/r) / ext_i far below 2^-1022 (subnormal) and near 2^999 (the range check's slow path).
  std::vector<double> ext = {1.0, 1e300, 1e300, 3e307};
  std::vector<double> tiny = {0x1p-999, 0x1.8p-999, 1.0, 1.0};
  posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_LONGROPE);
  s.factor = 32;
  s.original_max_positions = 4096;
  s.short_factor = ext.data();
  s.long_factor = ext.data();
  posenc_rope rope;
  std::vector<double> f = init_explicit(8, 1e10, s, &rope);
  for (int64_t i = 0; i < 4; ++i) {
    hf_longrope(e, 1e10, 8, i, ext[size_t(i)]);
    expect_value(f[size_t(i)], e, w, "tiny f", i);
  }
  CHECK(f[3] < 0x1p-1022);
  CHECK(f[3] > 0.0);
  s.short_factor = tiny.data();
  f = init_explicit(8, 1e10, s, &rope);
  for (int64_t i = 0; i < 4; ++i) {
    hf_longrope(e, 1e10, 8, i, tiny[size_t(i)]);
    expect_value(f[size_t(i)], e, w, "huge f", i);
  }
  CHECK(f[0] == 0x1p999);
  WARN("extreme magnitudes: max " << w.ulp << " double ULP");
}

TEST_CASE("exact midpoints between doubles round to even", "[rope_init]") {
  // dynamic with r = 4, base 4, factor 1, L0 = 2^53 + 1, seq_len 2^54: X = 2^54 / (2^53 + 1), so
  // f_1 = 4^(-1/2) / X = (2^53 + 1) / 2^55, exactly halfway between 0.25 and its successor.
  posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_DYNAMIC);
  s.factor = 1.0;
  s.original_max_positions = (int64_t(1) << 53) + 1;
  s.seq_len = int64_t(1) << 54;
  posenc_rope rope;
  std::vector<double> f = init_explicit(4, 4.0, s, &rope);
  CHECK(f[0] == 1.0);
  CHECK(f[1] == 0.25);  // even; 0.25 + 2^-54 is the odd neighbour
  // More of them, L0 = k odd in (2^53, 2^54): f_1 = k / 2^55, halfway between (k -+ 1) 2^-55.
  for (int64_t k = (int64_t(1) << 53) + 3; k < (int64_t(1) << 53) + 40; k += 2) {
    s.original_max_positions = k;
    f = init_explicit(4, 4.0, s, &rope);
    const int64_t m = ((k - 1) / 2) % 2 == 0 ? (k - 1) / 2 : (k + 1) / 2;  // the even neighbour, in 2^-54
    INFO("k = 2^53 + " << (k - (int64_t(1) << 53)));
    CHECK(f[1] == std::ldexp(double(m), -54));
  }
  // The same on the subnormal grid: r = 2040, base 2^1020, i = 1019: f = 2^-1019 / X with
  // X = (9 + 6550690367084357 * 11) / 9 = 2^56 / 9, so f = 9 * 2^-1075 = 4.5 subnormal units: 4, not 5.
  s.factor = 6550690367084357.0;
  s.original_max_positions = 9;
  s.seq_len = 20;
  f = init_explicit(2040, 0x1p1020, s, &rope);
  CHECK(f[1019] == 0x1p-1072);
  // and every other pair of that spec against MPFR
  Worst w;
  Big e(kPrec);
  for (int64_t i = 0; i < 1019; i += 7) {
    hf_dynamic(e, 0x1p1020, 2040, i, s.factor, 9, 20);
    expect_value(f[size_t(i)], e, w, "dynamic f", i);
  }
}

namespace {

// A call that must fail with `want` and leave rope and freq byte for byte as they were.
void expect_refused(posenc_status want, bool null_rope, int64_t r, double base, const posenc_rope_scaling *s,
                    bool null_freq) {
  posenc_rope rope, canary_rope;
  std::memset(&rope, 0xA5, sizeof rope);
  std::memcpy(&canary_rope, &rope, sizeof rope);
  std::vector<unsigned char> freq(8 * 1024, 0x5A);
  const std::vector<unsigned char> canary = freq;
  const posenc_status got = posenc_rope_init(null_rope ? nullptr : &rope, r, base, s,
                                             null_freq ? nullptr : reinterpret_cast<double *>(freq.data()));
  CHECK(got == want);
  CHECK(std::memcmp(&rope, &canary_rope, sizeof rope) == 0);
  CHECK(freq == canary);
}

posenc_rope_scaling good(posenc_rope_type t) {
  static double ext[512];
  for (double &x : ext) x = 1.5;
  posenc_rope_scaling s = scaling_of(t);
  s.factor = 4;
  s.original_max_positions = 4096;
  s.seq_len = 10000;
  s.low_freq_factor = 1;
  s.high_freq_factor = 4;
  s.truncate = 1;
  s.short_factor = ext;
  s.long_factor = ext;
  return s;
}

}  // namespace

TEST_CASE("bad input: the status, and rope and freq untouched", "[rope_init]") {
  const posenc_rope_type all[] = {
      POSENC_ROPE_TYPE_DEFAULT,      POSENC_ROPE_TYPE_LINEAR,      POSENC_ROPE_TYPE_DYNAMIC,
      POSENC_ROPE_TYPE_YARN,         POSENC_ROPE_TYPE_LLAMA3,      POSENC_ROPE_TYPE_LONGROPE,
      POSENC_ROPE_TYPE_PROPORTIONAL, POSENC_ROPE_TYPE_NTK,         POSENC_ROPE_TYPE_DEEPSEEK_YARN,
      POSENC_ROPE_TYPE_YARN_LOG,     POSENC_ROPE_TYPE_THETA_SCALE, POSENC_ROPE_TYPE_TELECHAT3};
  // The good scalings work, so each refusal below is caused by the one field changed.
  for (posenc_rope_type t : all) {
    const posenc_rope_scaling s = good(t);
    std::vector<double> f(64);
    posenc_rope rope;
    INFO("type " << int(t));
    CHECK(posenc_rope_init(&rope, 128, 1e4, &s, f.data()) == POSENC_OK);
  }
  SECTION("NULL pointers") {
    for (posenc_rope_type t : all) {
      const posenc_rope_scaling s = good(t);
      INFO("type " << int(t));
      expect_refused(POSENC_ERR_NULL, true, 128, 1e4, &s, false);
      expect_refused(POSENC_ERR_NULL, true, 3, -1.0, &s, true);  // NULL comes before INVALID
      if (t != POSENC_ROPE_TYPE_DEFAULT && t != POSENC_ROPE_TYPE_LINEAR)
        expect_refused(POSENC_ERR_NULL, false, 128, 1e4, &s, true);
    }
    expect_refused(POSENC_ERR_NULL, true, 128, 1e4, nullptr, false);
    posenc_rope_scaling s = good(POSENC_ROPE_TYPE_LONGROPE);
    s.short_factor = nullptr;
    expect_refused(POSENC_ERR_NULL, false, 128, 1e4, &s, false);
    s = good(POSENC_ROPE_TYPE_LONGROPE);
    s.long_factor = nullptr;
    expect_refused(POSENC_ERR_NULL, false, 128, 1e4, &s, false);
  }
  SECTION("rotary_dim and base") {
    for (posenc_rope_type t : all) {
      const posenc_rope_scaling s = good(t);
      INFO("type " << int(t));
      for (int64_t r : {int64_t(0), int64_t(-2), int64_t(1), int64_t(3), int64_t(127), INT64_MIN})
        expect_refused(POSENC_ERR_INVALID, false, r, 1e4, &s, false);
      for (double b : {0.0, -1.0, -0.0, HUGE_VAL, -HUGE_VAL, double(NAN)})
        expect_refused(POSENC_ERR_INVALID, false, 128, b, &s, false);
    }
    expect_refused(POSENC_ERR_INVALID, false, 5, 1e4, nullptr, false);
    expect_refused(POSENC_ERR_INVALID, false, 128, double(NAN), nullptr, false);
  }
  SECTION("factor") {
    for (posenc_rope_type t :
         {POSENC_ROPE_TYPE_LINEAR, POSENC_ROPE_TYPE_DYNAMIC, POSENC_ROPE_TYPE_YARN, POSENC_ROPE_TYPE_LLAMA3,
          POSENC_ROPE_TYPE_LONGROPE, POSENC_ROPE_TYPE_NTK, POSENC_ROPE_TYPE_DEEPSEEK_YARN, POSENC_ROPE_TYPE_YARN_LOG,
          POSENC_ROPE_TYPE_THETA_SCALE, POSENC_ROPE_TYPE_TELECHAT3}) {
      INFO("type " << int(t));
      for (double fac : {0.0, -1.0, HUGE_VAL, double(NAN)}) {
        posenc_rope_scaling s = good(t);
        s.factor = fac;
        expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
        if (t == POSENC_ROPE_TYPE_LINEAR) expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, true);
      }
    }
    // proportional: 0 is HF's default 1; the others as linear's, and p outside (0, 1]
    for (double fac : {-1.0, HUGE_VAL, double(NAN), 0x1p-1000}) {
      posenc_rope_scaling s = good(POSENC_ROPE_TYPE_PROPORTIONAL);
      s.factor = fac;
      expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
    }
    for (double p : {-0.25, 1.0000000000000002, 2.0, HUGE_VAL, double(NAN)}) {
      posenc_rope_scaling s = good(POSENC_ROPE_TYPE_PROPORTIONAL);
      s.partial_rotary_factor = p;
      INFO("p " << p);
      expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
    }
    // linear: 1/factor would be a frequency of 2^1000 or more
    posenc_rope_scaling s = good(POSENC_ROPE_TYPE_LINEAR);
    s.factor = 0x1p-1000;
    expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
    expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, true);
  }
  SECTION("original_max_positions, seq_len") {
    for (posenc_rope_type t :
         {POSENC_ROPE_TYPE_DYNAMIC, POSENC_ROPE_TYPE_YARN, POSENC_ROPE_TYPE_LLAMA3, POSENC_ROPE_TYPE_LONGROPE}) {
      INFO("type " << int(t));
      for (int64_t L0 : {int64_t(0), int64_t(-1), INT64_MIN}) {
        posenc_rope_scaling s = good(t);
        s.original_max_positions = L0;
        expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
      }
    }
    for (posenc_rope_type t : {POSENC_ROPE_TYPE_DYNAMIC, POSENC_ROPE_TYPE_LONGROPE}) {
      posenc_rope_scaling s = good(t);
      s.seq_len = -1;
      expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
    }
    // longrope's derived attention factor divides by ln L0
    posenc_rope_scaling s = good(POSENC_ROPE_TYPE_LONGROPE);
    s.original_max_positions = 1;
    expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
  }
  SECTION("dynamic r = 2, yarn base 1") {
    posenc_rope_scaling s = good(POSENC_ROPE_TYPE_DYNAMIC);
    expect_refused(POSENC_ERR_INVALID, false, 2, 1e4, &s, false);
    s = good(POSENC_ROPE_TYPE_YARN);
    expect_refused(POSENC_ERR_INVALID, false, 128, 1.0, &s, false);
  }
  SECTION("llama3 frequency factors") {
    struct Bad {
      double lff, hff;
    };
    for (const Bad &b :
         {Bad{0, 4}, Bad{-1, 4}, Bad{1, 1}, Bad{4, 1}, Bad{1, HUGE_VAL}, Bad{double(NAN), 4}, Bad{1, double(NAN)}}) {
      posenc_rope_scaling s = good(POSENC_ROPE_TYPE_LLAMA3);
      s.low_freq_factor = b.lff;
      s.high_freq_factor = b.hff;
      INFO("lff " << b.lff << ", hff " << b.hff);
      expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
    }
  }
  SECTION("yarn betas, attention factor and mscale") {
    struct Betas {
      double fast, slow;
    };
    for (const Betas &b : {Betas{1, 32}, Betas{2, 2}, Betas{0, 32}, Betas{0.5, 0}, Betas{-1, 0}, Betas{32, -1},
                           Betas{double(NAN), 1}, Betas{HUGE_VAL, 1}}) {
      posenc_rope_scaling s = good(POSENC_ROPE_TYPE_YARN);
      s.beta_fast = b.fast;
      s.beta_slow = b.slow;
      INFO("beta_fast " << b.fast << ", beta_slow " << b.slow);
      expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
    }
    for (posenc_rope_type t : {POSENC_ROPE_TYPE_YARN, POSENC_ROPE_TYPE_LONGROPE})
      for (double a : {-1.0, HUGE_VAL, double(NAN), 0x1p-65, 0x1p65}) {
        posenc_rope_scaling s = good(t);
        s.attention_factor = a;
        expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
      }
    // A negative get_mscale ratio: mscale_all_dim = -10 gives the denominator 1 - ln 4 < 0.
    posenc_rope_scaling s = good(POSENC_ROPE_TYPE_YARN);
    s.mscale = 1.0;
    s.mscale_all_dim = -10.0;
    expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
    s.mscale_all_dim = -1.0;  // 1 - 0.1 ln 4 > 0: a positive ratio, accepted
    std::vector<double> f(64);
    posenc_rope rope;
    CHECK(posenc_rope_init(&rope, 128, 1e4, &s, f.data()) == POSENC_OK);
    s.mscale = -10.0;  // numerator 1 - ln 4 < 0: a negative attention factor
    expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
    s.mscale = double(NAN);
    expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
  }
  SECTION("longrope factor arrays") {
    for (double bad : {0.0, -1.0, HUGE_VAL, double(NAN), -0.0}) {
      for (int which = 0; which < 2; ++which) {
        static double arr[64];
        for (double &x : arr) x = 1.5;
        arr[37] = bad;
        posenc_rope_scaling s = good(POSENC_ROPE_TYPE_LONGROPE);
        (which == 0 ? s.short_factor : s.long_factor) = arr;  // the array not chosen is checked too
        INFO("bad " << bad << " in array " << which);
        expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
      }
    }
    // A frequency of 2^1000: base^0 / 2^-1000.
    static double arr[64];
    for (double &x : arr) x = 1.5;
    arr[0] = 0x1p-1000;
    posenc_rope_scaling s = good(POSENC_ROPE_TYPE_LONGROPE);
    s.short_factor = arr;
    s.long_factor = arr;
    expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
    arr[0] = 0x1.0000000000001p-1000;  // just below 2^1000
    std::vector<double> f(64);
    posenc_rope rope;
    CHECK(posenc_rope_init(&rope, 128, 1e4, &s, f.data()) == POSENC_OK);
  }
  SECTION("unknown type") {
    for (int v : {12, -1, 100, INT32_MIN}) {
      posenc_rope_scaling s = good(POSENC_ROPE_TYPE_YARN);
      std::memcpy(&s.type, &v, sizeof v);
      INFO("type " << v);
      expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, false);
      expect_refused(POSENC_ERR_INVALID, false, 128, 1e4, &s, true);
      expect_refused(POSENC_ERR_NULL, true, 128, 1e4, &s, false);
    }
  }
}

TEST_CASE("determinism: the same call gives the same bits", "[rope_init]") {
  posenc_rope_scaling s = good(POSENC_ROPE_TYPE_YARN);
  s.truncate = 0;
  std::vector<double> a(64), b(64);
  posenc_rope ra, rb;
  REQUIRE(posenc_rope_init(&ra, 128, 1e4, &s, a.data()) == POSENC_OK);
  REQUIRE(posenc_rope_init(&rb, 128, 1e4, &s, b.data()) == POSENC_OK);
  CHECK(std::memcmp(a.data(), b.data(), 64 * sizeof(double)) == 0);
  CHECK(ra.attention_scale == rb.attention_scale);
}

// ---- vLLM's schemes (vllm/model_executor/layers/rotary_embedding/, read at vLLM main of 2026-11), re-typed
// step by step in real arithmetic ----------------------------------------------------------------------------
namespace {

// NTKScalingRotaryEmbedding._compute_inv_freq: fixed, base * s then inv_freq / s ** (2 / r); mixed_b, the base
// kept and inv_freq / exp(a * arange(1, r // 2 + 1) ** b), a = ln(s) / (r / 2) ** b.
void vllm_ntk(mpfr_ptr out, double base, int64_t r, int64_t i, double s, double mixed_b) {
  Big b(kPrec), t(kPrec), a(kPrec);
  if (mixed_b == 0.0) {
    mpfr_set_d(b, base, MPFR_RNDN);
    mpfr_mul_d(b, b, s, MPFR_RNDN);  // base * scaling_factor, exact
    mpfr_log(b, b, MPFR_RNDN);
    mpfr_mul_si(b, b, -2 * long(i), MPFR_RNDN);
    mpfr_div_si(b, b, long(r), MPFR_RNDN);
    mpfr_exp(out, b, MPFR_RNDN);  // 1 / (base s) ** (2i / r)
    mpfr_set_d(t, s, MPFR_RNDN);
    mpfr_log(t, t, MPFR_RNDN);
    mpfr_mul_si(t, t, -2, MPFR_RNDN);
    mpfr_div_si(t, t, long(r), MPFR_RNDN);
    mpfr_exp(t, t, MPFR_RNDN);  // 1 / s ** (2 / r)
    mpfr_mul(out, out, t, MPFR_RNDN);
    return;
  }
  inv_freq(out, base, r, i);
  mpfr_set_d(a, s, MPFR_RNDN);
  mpfr_log(a, a, MPFR_RNDN);
  mpfr_set_si(t, long(r / 2), MPFR_RNDN);
  mpfr_set_d(b, mixed_b, MPFR_RNDN);
  mpfr_pow(t, t, b, MPFR_RNDN);
  mpfr_div(a, a, t, MPFR_RNDN);  // a
  mpfr_set_si(t, long(i + 1), MPFR_RNDN);
  mpfr_pow(t, t, b, MPFR_RNDN);
  mpfr_mul(t, t, a, MPFR_RNDN);
  mpfr_exp(t, t, MPFR_RNDN);  // lambda_1_m
  mpfr_div(out, out, t, MPFR_RNDN);
}

// The YaRN variants' mask: yarn_find_correction_range (floor / ceil, clamped to [0, r - 1]),
// yarn_linear_ramp_mask(low, high, r // 2) with high + 0.001 when equal; mask = (1 - ramp) * e.
void vllm_mask(mpfr_ptr out, double base, int64_t r, int64_t L0, double bf, double bs, double e, int64_t i) {
  Yarn y{base, r, 1.0, L0, bf, bs, 0, 0, true, 0};
  Big low(kPrec), high(kPrec);
  hf_correction_dim(low, bf, y);
  hf_correction_dim(high, bs, y);
  mpfr_floor(low, low);
  mpfr_ceil(high, high);
  if (mpfr_cmp_ui(low, 0) < 0) mpfr_set_ui(low, 0, MPFR_RNDN);
  if (mpfr_cmp_si(high, long(r - 1)) > 0) mpfr_set_si(high, long(r - 1), MPFR_RNDN);
  if (mpfr_equal_p(low, high)) mpfr_add_d(high, high, 0.001, MPFR_RNDN);
  Big span(kPrec);
  mpfr_set_si(out, long(i), MPFR_RNDN);
  mpfr_sub(out, out, low, MPFR_RNDN);
  mpfr_sub(span, high, low, MPFR_RNDN);
  mpfr_div(out, out, span, MPFR_RNDN);
  if (mpfr_cmp_ui(out, 0) < 0) mpfr_set_ui(out, 0, MPFR_RNDN);
  if (mpfr_cmp_ui(out, 1) > 0) mpfr_set_ui(out, 1, MPFR_RNDN);
  mpfr_ui_sub(out, 1, out, MPFR_RNDN);
  mpfr_mul_d(out, out, e, MPFR_RNDN);
}

struct VllmYarn {
  double base;
  int64_t r;
  double factor;
  int64_t L0;
  double bf, bs, e;  // the defaults written out: 32, 1, 1
};

// DeepseekScalingRotaryEmbedding._compute_inv_freq (and YaRN's, e = 1): interpolation (1 - mask) +
// extrapolation mask; Grok1ScalingRotaryEmbedding "yarn_log": exp(ln(extrapolation) mask + ln(interpolation)
// (1 - mask)).
void vllm_yarn_freq(mpfr_ptr out, const VllmYarn &y, int64_t i, bool log_blend) {
  Big m(kPrec), extra(kPrec), inter(kPrec), om(kPrec);
  vllm_mask(m, y.base, y.r, y.L0, y.bf, y.bs, y.e, i);
  inv_freq(extra, y.base, y.r, i);
  mpfr_div_d(inter, extra, y.factor, MPFR_RNDN);  // 1 / (scaling_factor * pos_freqs)
  mpfr_ui_sub(om, 1, m, MPFR_RNDN);
  if (log_blend) {
    mpfr_log(extra, extra, MPFR_RNDN);
    mpfr_log(inter, inter, MPFR_RNDN);
    mpfr_mul(extra, extra, m, MPFR_RNDN);
    mpfr_mul(inter, inter, om, MPFR_RNDN);
    mpfr_add(out, extra, inter, MPFR_RNDN);
    mpfr_exp(out, out, MPFR_RNDN);
    return;
  }
  mpfr_mul(inter, inter, om, MPFR_RNDN);
  mpfr_mul(extra, extra, m, MPFR_RNDN);
  mpfr_add(out, inter, extra, MPFR_RNDN);
}

// yarn_get_mscale(scale, mscale) with coefficient c / d (0.1 = 1 / 10; TeleChat3's 0.07 = 7 / 100).
void vllm_get_mscale(mpfr_ptr out, double scale, double mscale, long c, long d) {
  if (scale <= 1.0) {
    mpfr_set_ui(out, 1, MPFR_RNDN);
    return;
  }
  mpfr_set_d(out, scale, MPFR_RNDN);
  mpfr_log(out, out, MPFR_RNDN);
  mpfr_mul_d(out, out, mscale, MPFR_RNDN);
  mpfr_mul_si(out, out, c, MPFR_RNDN);
  mpfr_div_si(out, out, d, MPFR_RNDN);
  mpfr_add_ui(out, out, 1, MPFR_RNDN);
}

// Grok1ScalingRotaryEmbedding "theta_scale": base ** (ln(L0 s / 2 pi) / ln(L0 / 2 pi)) as the base.
void grok_theta_scale(mpfr_ptr out, double base, int64_t r, int64_t i, double s, int64_t L0) {
  Big num(kPrec), den(kPrec), tp(kPrec), g(kPrec);
  mpfr_const_pi(tp, MPFR_RNDN);
  mpfr_mul_ui(tp, tp, 2, MPFR_RNDN);
  mpfr_set_si(num, long(L0), MPFR_RNDN);
  mpfr_mul_d(num, num, s, MPFR_RNDN);
  mpfr_div(num, num, tp, MPFR_RNDN);
  mpfr_log(num, num, MPFR_RNDN);
  mpfr_set_si(den, long(L0), MPFR_RNDN);
  mpfr_div(den, den, tp, MPFR_RNDN);
  mpfr_log(den, den, MPFR_RNDN);
  mpfr_set_d(g, base, MPFR_RNDN);
  mpfr_log(g, g, MPFR_RNDN);
  mpfr_mul(g, g, num, MPFR_RNDN);
  mpfr_div(g, g, den, MPFR_RNDN);  // ln of theta_scale_exponent
  mpfr_mul_si(g, g, -2 * long(i), MPFR_RNDN);
  mpfr_div_si(g, g, long(r), MPFR_RNDN);
  mpfr_exp(out, g, MPFR_RNDN);
}

posenc_rope_scaling vllm_scaling(posenc_rope_type t, const VllmYarn &y) {
  posenc_rope_scaling s = scaling_of(t);
  s.factor = y.factor;
  s.original_max_positions = y.L0;
  s.beta_fast = y.bf == 32.0 ? 0.0 : y.bf;  // 0 is the default
  s.beta_slow = y.bs == 1.0 ? 0.0 : y.bs;
  s.extrapolation_factor = y.e == 1.0 ? 0.0 : y.e;
  return s;
}

}  // namespace

TEST_CASE("ntk: vLLM's fixed and mixed NTK (NTKScalingRotaryEmbedding)", "[rope_init][vllm]") {
  struct Case {
    int64_t r;
    double base, factor, mixed_b;
  };
  Worst w;
  Big e(kPrec);
  for (const Case &c : {Case{128, 1e4, 4.0, 0.0}, Case{128, 1e4, 8.0, 0.625}, Case{64, 5e5, 2.0, 1.0},
                        Case{128, 1e6, 16.0, 2.5}, Case{4, 1e4, 3.0, 0.0}, Case{2, 1e4, 3.0, 0.5},
                        Case{128, 1e4, 0.5, 0.0}, Case{96, 1e4, 0.25, 0.75}, Case{128, 1e4, 1.0, 0.0}}) {
    posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_NTK);
    s.factor = c.factor;
    s.mixed_b = c.mixed_b;
    INFO("r " << c.r << ", base " << c.base << ", factor " << c.factor << ", mixed_b " << c.mixed_b);
    posenc_rope rope;
    const std::vector<double> f = init_explicit(c.r, c.base, s, &rope);
    CHECK(rope.attention_scale == 1.0);
    for (int64_t i = 0; i < c.r / 2; ++i) {
      vllm_ntk(e, c.base, c.r, i, c.factor, c.mixed_b);
      expect_value(f[size_t(i)], e, w, "ntk f", i);
    }
  }
  WARN("ntk: max " << w.ulp << " double ULP");
  posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_NTK);
  std::vector<double> f(64, -7.0);
  posenc_rope rope;
  CHECK(posenc_rope_init(&rope, 128, 1e4, &s, f.data()) == POSENC_ERR_INVALID);  // factor is required
  s.factor = 2.0;
  for (double b : {-1.0, double(NAN), HUGE_VAL, 1e15, 1e300}) {  // mixed_b ln 64 >= 2^30: refused, at once
    s.mixed_b = b;
    CHECK(posenc_rope_init(&rope, 128, 1e4, &s, f.data()) == POSENC_ERR_INVALID);
  }
  CHECK(f[0] == -7.0);
}

TEST_CASE("deepseek_yarn: vLLM's DeepseekScalingRotaryEmbedding, its mscale defaults and attn_factor",
          "[rope_init][vllm]") {
  // DeepSeek-V2 (r 64, base 1e4, factor 40, original 4096, mscale = mscale_all_dim = 0.707): attention 1;
  // DeepSeek-V3 (both 1.0); a config with mscale alone (vLLM: 0.1 m ln s + 1 over get_mscale(s, 0) = 1);
  // extrapolation_factor and attn_factor as the constructor takes them.
  struct Case {
    VllmYarn y;
    double mscale, mscale_all_dim, attn;  // 0: unset (vLLM's 1, 0, 1)
  };
  Worst w;
  Big e(kPrec), d(kPrec);
  for (const Case &c :
       {Case{{1e4, 64, 40.0, 4096, 32, 1, 1}, 0.707, 0.707, 0}, Case{{1e4, 64, 40.0, 4096, 32, 1, 1}, 1.0, 1.0, 0},
        Case{{1e4, 64, 40.0, 4096, 32, 1, 1}, 0, 0, 0}, Case{{1e4, 64, 40.0, 4096, 32, 1, 1}, 0.707, 0, 0},
        Case{{1e4, 128, 4.0, 32768, 64, 2, 0.5}, 0, 0.5, 1.25},
        Case{{5e5, 128, 0.5, 8192, 32, 1, 0.75}, 2.0, 0, 0.8}}) {
    posenc_rope_scaling s = vllm_scaling(POSENC_ROPE_TYPE_DEEPSEEK_YARN, c.y);
    s.mscale = c.mscale;
    s.mscale_all_dim = c.mscale_all_dim;
    s.attn_factor = c.attn;
    s.truncate = 0;  // not read: vLLM always floors / ceils
    INFO("factor " << c.y.factor << ", mscale " << c.mscale << "/" << c.mscale_all_dim << ", e " << c.y.e);
    posenc_rope rope;
    const std::vector<double> f = init_explicit(c.y.r, c.y.base, s, &rope);
    for (int64_t i = 0; i < c.y.r / 2; ++i) {
      vllm_yarn_freq(e, c.y, i, false);
      expect_value(f[size_t(i)], e, w, "deepseek_yarn f", i);
    }
    vllm_get_mscale(e, c.y.factor, c.mscale == 0.0 ? 1.0 : c.mscale, 1, 10);
    vllm_get_mscale(d, c.y.factor, c.mscale_all_dim, 1, 10);
    mpfr_div(e, e, d, MPFR_RNDN);
    mpfr_mul_d(e, e, c.attn == 0.0 ? 1.0 : c.attn, MPFR_RNDN);
    expect_value(rope.attention_scale, e, w, "deepseek_yarn attention", 0);
  }
  WARN("deepseek_yarn: max " << w.ulp << " double ULP");
  posenc_rope_scaling s = vllm_scaling(POSENC_ROPE_TYPE_DEEPSEEK_YARN, {1e4, 64, 40.0, 4096, 32, 1, 1});
  std::vector<double> f(32, -7.0);
  posenc_rope rope;
  for (double x : {-0.5, 1.5, double(NAN)}) {
    s.extrapolation_factor = x;
    CHECK(posenc_rope_init(&rope, 64, 1e4, &s, f.data()) == POSENC_ERR_INVALID);
  }
  s.extrapolation_factor = 0;
  s.attn_factor = -1.0;
  CHECK(posenc_rope_init(&rope, 64, 1e4, &s, f.data()) == POSENC_ERR_INVALID);
  CHECK(f[0] == -7.0);
}

TEST_CASE("yarn_log and theta_scale: Grok's extra_method (Grok1ScalingRotaryEmbedding)", "[rope_init][vllm]") {
  // Grok-2's geometry (head 128, base 208533496, original 8192, factor 16) and others; the attention scale is
  // 1: Grok1ScalingRotaryEmbedding computes an mscale and leaves it out of its cache.
  Worst w;
  Big e(kPrec);
  for (const VllmYarn &y : {VllmYarn{208533496.0, 128, 16.0, 8192, 8, 1, 1}, VllmYarn{1e4, 128, 4.0, 4096, 32, 1, 1},
                            VllmYarn{1e4, 64, 8.0, 2048, 32, 1, 0.5}, VllmYarn{5e5, 128, 0.5, 8192, 32, 2, 1}}) {
    INFO("base " << y.base << ", factor " << y.factor << ", L0 " << y.L0 << ", e " << y.e);
    posenc_rope_scaling s = vllm_scaling(POSENC_ROPE_TYPE_YARN_LOG, y);
    posenc_rope rope;
    std::vector<double> f = init_explicit(y.r, y.base, s, &rope);
    CHECK(rope.attention_scale == 1.0);
    for (int64_t i = 0; i < y.r / 2; ++i) {
      vllm_yarn_freq(e, y, i, true);
      expect_value(f[size_t(i)], e, w, "yarn_log f", i);
    }
    s = scaling_of(POSENC_ROPE_TYPE_THETA_SCALE);
    s.factor = y.factor;
    s.original_max_positions = y.L0;
    f = init_explicit(y.r, y.base, s, &rope);
    CHECK(rope.attention_scale == 1.0);
    for (int64_t i = 0; i < y.r / 2; ++i) {
      grok_theta_scale(e, y.base, y.r, i, y.factor, y.L0);
      expect_value(f[size_t(i)], e, w, "theta_scale f", i);
    }
  }
  // L0 = 7, the smallest with ln(L0 / 2 pi) > 0 (a large exponent), and a factor below 2 pi / L0 (base' < 1)
  for (double factor : {2.0, 0.5}) {
    posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_THETA_SCALE);
    s.factor = factor;
    s.original_max_positions = 7;
    posenc_rope rope;
    const std::vector<double> f = init_explicit(16, 1.5, s, &rope);
    for (int64_t i = 0; i < 8; ++i) {
      grok_theta_scale(e, 1.5, 16, i, factor, 7);
      expect_value(f[size_t(i)], e, w, "theta_scale f (L0 7)", i);
    }
  }
  WARN("yarn_log / theta_scale: max " << w.ulp << " double ULP");
  posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_THETA_SCALE);
  s.factor = 2.0;
  s.original_max_positions = 6;  // ln(6 / 2 pi) < 0
  std::vector<double> f(64, -7.0);
  posenc_rope rope;
  CHECK(posenc_rope_init(&rope, 128, 1e4, &s, f.data()) == POSENC_ERR_INVALID);
  CHECK(f[0] == -7.0);
}

TEST_CASE("telechat3: YaRN's frequencies, attention (0.07 ln s + 1) attn_factor", "[rope_init][vllm]") {
  Worst w;
  Big e(kPrec);
  for (const VllmYarn &y : {VllmYarn{1e6, 128, 4.0, 32768, 32, 1, 1}, VllmYarn{1e4, 128, 8.0, 8192, 32, 1, 1},
                            VllmYarn{1e6, 128, 0.5, 32768, 32, 1, 1}}) {
    for (double attn : {0.0, 1.5}) {
      posenc_rope_scaling s = vllm_scaling(POSENC_ROPE_TYPE_TELECHAT3, y);
      s.attn_factor = attn;
      posenc_rope rope;
      const std::vector<double> f = init_explicit(y.r, y.base, s, &rope);
      for (int64_t i = 0; i < y.r / 2; ++i) {
        vllm_yarn_freq(e, y, i, false);
        expect_value(f[size_t(i)], e, w, "telechat3 f", i);
      }
      vllm_get_mscale(e, y.factor, 1.0, 7, 100);
      mpfr_mul_d(e, e, attn == 0.0 ? 1.0 : attn, MPFR_RNDN);
      expect_value(rope.attention_scale, e, w, "telechat3 attention", 0);
    }
  }
  WARN("telechat3: max " << w.ulp << " double ULP");
}

TEST_CASE("longrope: vLLM's short_mscale / long_mscale (Phi-3.5-MoE)", "[rope_init][vllm]") {
  // Phi-3.5-MoE-instruct: short_mscale 1.243163121016122, long_mscale 1.243163121016122 in its config; here
  // two values, to see which set is chosen.
  for (int64_t seq : {int64_t(0), int64_t(4096), int64_t(4097)}) {
    posenc_rope_scaling s = scaling_of(POSENC_ROPE_TYPE_LONGROPE);
    s.factor = 32.0;
    s.original_max_positions = 4096;
    s.seq_len = seq;
    s.short_factor = kPhi35ShortFactor;
    s.long_factor = kPhi35LongFactor;
    s.short_mscale = 1.25;
    s.long_mscale = 1.243163121016122;
    posenc_rope rope;
    init_explicit(96, 1e4, s, &rope);
    CHECK(rope.attention_scale == (seq > 4096 ? 1.243163121016122 : 1.25));
    s.short_mscale = 0;  // the short set without its magnitude: HF's sqrt(1 + ln f / ln L0)
    init_explicit(96, 1e4, s, &rope);
    Big e(kPrec);
    hf_longrope_attention(e, 32.0, 4096);
    if (seq <= 4096) CHECK(bits(rope.attention_scale) == bits(nearest_double(e)));
    s.attention_factor = 1.1;  // two magnitudes for one scale
    std::vector<double> f(48, -7.0);
    CHECK(posenc_rope_init(&rope, 96, 1e4, &s, f.data()) == POSENC_ERR_INVALID);
    s.attention_factor = 0;
    s.long_mscale = -1.0;
    CHECK(posenc_rope_init(&rope, 96, 1e4, &s, f.data()) == POSENC_ERR_INVALID);
    CHECK(f[0] == -7.0);
  }
}
