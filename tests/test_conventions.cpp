// Each framework convention of docs/conventions.md (docs/contract.md section 1): the framework's published formula,
// transcribed step by step (its frequencies as exp(k * -log(b) / D), its position origin, its layout and padding) and
// evaluated exactly in MPFR, against posenc with the spec docs/conventions.md gives for it. Since posenc returns the
// correctly rounded value of the same real number, the rows must match bit for bit.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "support/paths.hpp"
#include "support/reference.hpp"

namespace {

constexpr mpfr_prec_t kPrec = 400;

// sin and cos of p * scale * exp(k * -log(base) / denominator), correctly rounded to float.
ref::Pair framework_pair(double base, double denominator, double k, double p, double scale) {
  ref::Big lb(kPrec), f(kPrec), a(kPrec), s(kPrec), c(kPrec);
  mpfr_set_d(lb, base, MPFR_RNDN);
  mpfr_log(lb, lb, MPFR_RNDN);                 // math.log(base)
  mpfr_div_d(lb, lb, denominator, MPFR_RNDN);  // / D
  mpfr_mul_d(f, lb, -k, MPFR_RNDN);            // arange * -increment
  mpfr_exp(f, f, MPFR_RNDN);                   // exp(...)
  mpfr_mul_d(a, f, p, MPFR_RNDN);              // positions * frequencies
  mpfr_mul_d(a, a, scale, MPFR_RNDN);
  if (mpfr_zero_p(a)) return ref::Pair{0.0f, 1.0f};
  mpfr_sin_cos(s, c, a, MPFR_RNDN);
  return ref::Pair{mpfr_get_flt(s, MPFR_RNDN), mpfr_get_flt(c, MPFR_RNDN)};
}

// posenc's rows for explicit positions, on every path, compared with the framework's rows.
void expect_rows(const posenc_spec &spec, const std::vector<int64_t> &positions, const std::vector<float> &want) {
  const int64_t d = spec.d_model, n = int64_t(positions.size());
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      std::vector<float> got(n * d, -9.0f);
      REQUIRE(posenc_rows_f32(&spec, positions.data(), n, got.data(), d) == POSENC_OK);
      int64_t diff = 0;
      for (int64_t e = 0; e < n * d; ++e) diff += ref::bits(got[e]) != ref::bits(want[e]);
      INFO("path " << posenc_isa_name(isa) << ", d_model " << d);
      CHECK(diff == 0);
    });
}

}  // namespace

TEST_CASE("Vaswani et al. / the PyTorch tutorial", "[conventions]") {
  // div_term = exp(arange(0, d, 2) * (-log(10000) / d)); pe[:, 0::2] = sin(pos * div_term);
  // pe[:, 1::2] = cos(pos * div_term); positions from 0.
  for (int64_t d : {4, 64, 512}) {
    std::vector<int64_t> pos;
    std::vector<float> want;
    for (int64_t p = 0; p < 40; ++p) {
      pos.push_back(p * 37);
      for (int64_t j = 0; j < d; j += 2) {
        const ref::Pair v = framework_pair(10000.0, double(d), double(j), double(p * 37), 1.0);
        want.push_back(v.s);
        want.push_back(v.c);
      }
    }
    expect_rows(posenc_spec_default(d), pos, want);  // interleaved, base 1e4, D = h
  }
}

TEST_CASE("tensor2tensor get_timing_signal_1d", "[conventions]") {
  // num_timescales = channels // 2; increment = log(max/min) / max(num_timescales - 1, 1);
  // inv_timescales = min * exp(arange(num_timescales) * -increment); scaled = position * inv_timescales;
  // concat(sin, cos), padded with channels % 2 zero columns; position = arange(length) + start_index.
  struct Case {
    int64_t channels;
    double min_ts, max_ts;
  };
  for (const Case &c : {Case{64, 1.0, 1e4}, Case{33, 0.5, 1e3}, Case{2, 1.0, 1e4}, Case{128, 2.0, 1e5}}) {
    const int64_t h = c.channels / 2;
    const double den = double(std::max<int64_t>(h - 1, 1));
    std::vector<int64_t> pos;
    std::vector<float> want;
    for (int64_t p = 5; p < 35; ++p) {  // start_index = 5
      pos.push_back(p);
      std::vector<float> sn, cs;
      for (int64_t i = 0; i < h; ++i) {
        const ref::Pair v = framework_pair(c.max_ts / c.min_ts, den, double(i), double(p), c.min_ts);
        sn.push_back(v.s);
        cs.push_back(v.c);
      }
      want.insert(want.end(), sn.begin(), sn.end());
      want.insert(want.end(), cs.begin(), cs.end());
      if (c.channels % 2) want.push_back(0.0f);
    }
    posenc_spec s = posenc_spec_default(c.channels);
    s.layout = POSENC_SIN_COS_HALVES;
    s.base = c.max_ts / c.min_ts;
    s.freq_denominator = den;
    s.position_scale = c.min_ts;
    expect_rows(s, pos, want);
  }
}

TEST_CASE("fairseq SinusoidalPositionalEmbedding with make_positions and padding_idx", "[conventions]") {
  // get_embedding: emb = exp(arange(half_dim) * -(log(10000) / (half_dim - 1))); emb = arange(n)[:, None]
  // * emb; cat(sin, cos); zero column for odd dim; emb[padding_idx] = 0.
  // make_positions: mask = tokens != padding_idx; (cumsum(mask) * mask) + padding_idx.
  const int64_t padding_idx = 1;
  const std::vector<std::vector<int64_t>> batch = {{5, 9, 13, 2, 1, 1}, {1, 1, 7, 7, 8, 2}, {4, 4, 4, 4, 4, 4}};
  for (int64_t d : {16, 17, 512}) {
    const int64_t h = d / 2;
    std::vector<int64_t> pos;
    std::vector<float> want;
    for (const auto &tokens : batch) {
      int64_t count = 0;
      for (int64_t t : tokens) {
        const bool real = t != padding_idx;
        count += real;
        const int64_t fairseq_pos = (real ? count : 0) + padding_idx;
        pos.push_back(fairseq_pos == padding_idx ? POSENC_PAD : fairseq_pos);  // the zeroed row
        std::vector<float> row(d, 0.0f);
        if (fairseq_pos != padding_idx)
          for (int64_t i = 0; i < h; ++i) {
            const ref::Pair v = framework_pair(10000.0, double(h - 1), double(i), double(fairseq_pos), 1.0);
            row[i] = v.s;
            row[h + i] = v.c;
          }
        want.insert(want.end(), row.begin(), row.end());
      }
    }
    posenc_spec s = posenc_spec_default(d);
    s.layout = POSENC_SIN_COS_HALVES;
    s.freq_denominator = double(h - 1);
    expect_rows(s, pos, want);
  }
}

TEST_CASE("CTranslate2 / OpenNMT-tf SinusoidalPositionEncoder", "[conventions]") {
  // log_timescale_increment = log(10000) / (depth / 2 - 1); inv = exp(range(depth / 2) * -increment);
  // positions = range(1, timesteps + 1); concat(sin(positions * inv), cos(positions * inv)).
  for (int64_t depth : {8, 512, 1024}) {
    const int64_t h = depth / 2;
    std::vector<float> want;
    for (int64_t p = 1; p <= 20; ++p) {
      std::vector<float> sn, cs;
      for (int64_t i = 0; i < h; ++i) {
        const ref::Pair v = framework_pair(10000.0, double(h - 1), double(i), double(p), 1.0);
        sn.push_back(v.s);
        cs.push_back(v.c);
      }
      want.insert(want.end(), sn.begin(), sn.end());
      want.insert(want.end(), cs.begin(), cs.end());
    }
    posenc_spec s = posenc_spec_default(depth);
    s.layout = POSENC_SIN_COS_HALVES;
    s.freq_denominator = double(h - 1);
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        std::vector<float> got(20 * depth);
        REQUIRE(posenc_table_f32(&s, 1, 20, got.data(), depth) == POSENC_OK);  // first position 1
        int64_t diff = 0;
        for (size_t e = 0; e < got.size(); ++e) diff += ref::bits(got[e]) != ref::bits(want[e]);
        CHECK(diff == 0);
      });
  }
}

TEST_CASE("ggml timestep_embedding", "[conventions]") {
  // half = dim / 2; freq = exp(-log(max_period) * j / half); arg = t * freq;
  // embed[j] = cos(arg); embed[j + half] = sin(arg); a zero last column for odd dim.
  for (int64_t dim : {320, 33}) {
    for (double max_period : {10000.0, 500.0}) {
      const int64_t half = dim / 2;
      std::vector<int64_t> pos;
      std::vector<float> want;
      for (int64_t t : {0, 1, 10, 999, 500, 37}) {
        pos.push_back(t);
        std::vector<float> row(dim, 0.0f);
        for (int64_t j = 0; j < half; ++j) {
          const ref::Pair v = framework_pair(max_period, double(half), double(j), double(t), 1.0);
          row[j] = v.c;
          row[j + half] = v.s;
        }
        want.insert(want.end(), row.begin(), row.end());
      }
      posenc_spec s = posenc_spec_default(dim);
      s.layout = POSENC_COS_SIN_HALVES;
      s.base = max_period;
      expect_rows(s, pos, want);
    }
  }
}

TEST_CASE("diffusers get_timestep_embedding", "[conventions]") {
  // exponent = -log(max_period) * arange(half_dim) / (half_dim - downscale_freq_shift); emb = exp(exponent);
  // emb = timesteps[:, None] * emb[None, :]; emb = scale * emb; cat(sin, cos); flip_sin_to_cos swaps the
  // halves; odd dims get a zero column.
  struct Case {
    int64_t dim;
    bool flip;
    double shift, scale, max_period;
  };
  for (const Case &c : {Case{320, true, 0.0, 1.0, 10000.0}, Case{256, false, 1.0, 1.0, 10000.0},
                        Case{33, true, 1.0, 1000.0, 10000.0}, Case{64, false, 0.0, 0.5, 100.0}}) {
    const int64_t half = c.dim / 2;
    std::vector<int64_t> pos;
    std::vector<float> want;
    for (int64_t t : {0, 1, 981, 261, 999}) {
      pos.push_back(t);
      std::vector<float> row(c.dim, 0.0f);
      for (int64_t i = 0; i < half; ++i) {
        // arange(half) * (-log(max_period) / (half - shift)), then times the timestep and the scale
        const ref::Pair v = framework_pair(c.max_period, double(half) - c.shift, double(i), double(t), c.scale);
        row[c.flip ? half + i : i] = v.s;
        row[c.flip ? i : half + i] = v.c;
      }
      want.insert(want.end(), row.begin(), row.end());
    }
    posenc_spec s = posenc_spec_default(c.dim);
    s.layout = c.flip ? POSENC_COS_SIN_HALVES : POSENC_SIN_COS_HALVES;
    s.base = c.max_period;
    s.freq_denominator = double(half) - c.shift;
    s.position_scale = c.scale;
    expect_rows(s, pos, want);
  }
}

TEST_CASE("Hugging Face MarianSinusoidalPositionalEmbedding (even dims)", "[conventions]") {
  // position_enc[pos][j] = pos / 10000^(2 (j // 2) / dim); out[:, :dim/2] = sin(position_enc[:, 0::2]);
  // out[:, dim/2:] = cos(position_enc[:, 1::2]): sin and cos halves with w_i = 10000^(-2i/dim), D = h.
  // (the product contract first filed Marian under the interleaved layout; its code writes halves. Odd dims give the
  // sin half one more column than the cos half, a layout posenc does not produce.)
  for (int64_t dim : {8, 512}) {
    const int64_t h = dim / 2;
    std::vector<int64_t> pos;
    std::vector<float> want;
    for (int64_t p = 0; p < 30; ++p) {
      pos.push_back(p * 11);
      std::vector<float> row(dim);
      for (int64_t i = 0; i < h; ++i) {
        // 10000^(2i/dim) = exp(2i * log(10000) / dim): the same real number as exp(i * -log(10000) / h)
        const ref::Pair v = framework_pair(10000.0, double(dim), double(2 * i), double(p * 11), 1.0);
        row[i] = v.s;
        row[h + i] = v.c;
      }
      want.insert(want.end(), row.begin(), row.end());
    }
    posenc_spec s = posenc_spec_default(dim);
    s.layout = POSENC_SIN_COS_HALVES;
    expect_rows(s, pos, want);
  }
}
