// posenc-cli rope: the cos/sin cache of a rotary scheme (posenc_rope_cache_f32) for a range or a list of
// positions, printed and/or saved as .npy, as a cos||sin table (vLLM's cos_sin_cache) or as separate cos and
// sin tables (ONNX Runtime's cos_cache / sin_cache). The scheme is a model preset of posenc.hpp or built from
// explicit options through posenc_rope_init, exactly as a caller of the C ABI would build it.
#include "rope.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "npy.hpp"
#include "posenc/posenc.hpp"

namespace cli {
namespace {

struct RopeOptions {
  const char *preset = nullptr;
  int64_t rotary_dim = 0;  // 0: not given
  double base = 1.0e4;
  bool have_type = false;
  posenc_rope_scaling scaling = [] {
    posenc_rope_scaling s = posenc::rope_scaling_of(posenc::rope_type::default_);
    s.truncate = 1;  // HF's default, which the options mirror
    return s;
  }();
  std::vector<double> short_factor, long_factor;
  const char *pairs = nullptr;
  bool have_position_scale = false, have_attention_scale = false;
  double position_scale = 1.0, attention_scale = 1.0;
  int64_t positions = 10, first = 0;
  bool have_list = false;
  std::vector<int64_t> list;
  bool separate = false;
  const char *npy = nullptr;
  bool print = false, info = false;
  int decimals = 6;
  const char *isa = nullptr;
};

const char *const kPresets = "llama2, llama3.1, mistral-7b-v0.2, qwen2, qwen2-yarn, phi3-mini-128k,\n"
                             "                           deepseek-v2, deepseek-v3, gpt-neox-20b, gpt-j-6b";

[[noreturn]] void rope_usage(const std::string &why) {
  std::fprintf(stderr,
               "posenc-cli rope: %s\nusage: posenc-cli rope (--preset NAME | --rotary-dim R [--base B] "
               "[--rope-type TYPE ...]) [--positions N] [--first P | --position-list P,P,...] "
               "[--cache-layout cos-sin|separate] [--npy FILE] [--print] [--info] [--decimals K] [--isa NAME]\n"
               "       posenc-cli --help lists every option\n",
               why.c_str());
  std::exit(2);
}

double number(const char *s, const char *opt) {
  char *end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || *end) rope_usage(std::string("not a number for ") + opt);
  return v;
}

int64_t integer(const char *s, const char *opt) {
  char *end = nullptr;
  const long long v = std::strtoll(s, &end, 10);
  if (end == s || *end) rope_usage(std::string("not an integer for ") + opt);
  return int64_t(v);
}

std::vector<double> numbers(const char *s, const char *opt) {
  std::vector<double> out;
  std::string all(s);
  size_t at = 0;
  while (at <= all.size()) {
    const size_t comma = all.find(',', at);
    const std::string item = all.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    out.push_back(number(item.c_str(), opt));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

// Positions: integers, or "pad" for POSENC_PAD (a zero row).
std::vector<int64_t> position_list(const char *s) {
  std::vector<int64_t> out;
  std::string all(s);
  size_t at = 0;
  while (at <= all.size()) {
    const size_t comma = all.find(',', at);
    const std::string item = all.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    out.push_back(item == "pad" ? POSENC_PAD : integer(item.c_str(), "--position-list"));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

posenc_rope_type type_of(const char *s) {
  const char *names[] = {"default", "linear", "dynamic", "yarn", "llama3", "longrope"};
  for (int v = 0; v < 6; ++v)
    if (!std::strcmp(s, names[v])) return posenc_rope_type(v);
  rope_usage(std::string("unknown --rope-type ") + s);
}

RopeOptions parse(int argc, char **argv) {
  RopeOptions o;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!std::strcmp(a, "--print")) {
      o.print = true;
      continue;
    }
    if (!std::strcmp(a, "--info")) {
      o.info = true;
      continue;
    }
    if (i + 1 >= argc) rope_usage(std::string("missing value or unknown option ") + a);
    const char *v = argv[++i];
    posenc_rope_scaling &s = o.scaling;
    if (!std::strcmp(a, "--preset")) o.preset = v;
    else if (!std::strcmp(a, "--rotary-dim")) o.rotary_dim = integer(v, a);
    else if (!std::strcmp(a, "--base")) o.base = number(v, a);
    else if (!std::strcmp(a, "--rope-type")) s.type = type_of(v), o.have_type = true;
    else if (!std::strcmp(a, "--factor")) s.factor = number(v, a);
    else if (!std::strcmp(a, "--original")) s.original_max_positions = integer(v, a);
    else if (!std::strcmp(a, "--seq-len")) s.seq_len = integer(v, a);
    else if (!std::strcmp(a, "--beta-fast")) s.beta_fast = number(v, a);
    else if (!std::strcmp(a, "--beta-slow")) s.beta_slow = number(v, a);
    else if (!std::strcmp(a, "--mscale")) s.mscale = number(v, a);
    else if (!std::strcmp(a, "--mscale-all-dim")) s.mscale_all_dim = number(v, a);
    else if (!std::strcmp(a, "--truncate")) s.truncate = int(integer(v, a));
    else if (!std::strcmp(a, "--low-freq-factor")) s.low_freq_factor = number(v, a);
    else if (!std::strcmp(a, "--high-freq-factor")) s.high_freq_factor = number(v, a);
    else if (!std::strcmp(a, "--short-factor")) o.short_factor = numbers(v, a);
    else if (!std::strcmp(a, "--long-factor")) o.long_factor = numbers(v, a);
    else if (!std::strcmp(a, "--attention-factor")) s.attention_factor = number(v, a);
    else if (!std::strcmp(a, "--pairs")) o.pairs = v;
    else if (!std::strcmp(a, "--position-scale")) o.position_scale = number(v, a), o.have_position_scale = true;
    else if (!std::strcmp(a, "--attention-scale")) o.attention_scale = number(v, a), o.have_attention_scale = true;
    else if (!std::strcmp(a, "--positions")) o.positions = integer(v, a);
    else if (!std::strcmp(a, "--first")) o.first = integer(v, a);
    else if (!std::strcmp(a, "--position-list")) o.list = position_list(v), o.have_list = true;
    else if (!std::strcmp(a, "--cache-layout")) {
      if (!std::strcmp(v, "separate")) o.separate = true;
      else if (std::strcmp(v, "cos-sin")) rope_usage(std::string("unknown --cache-layout ") + v);
    } else if (!std::strcmp(a, "--npy")) o.npy = v;
    else if (!std::strcmp(a, "--decimals")) o.decimals = int(integer(v, a));
    else if (!std::strcmp(a, "--isa")) o.isa = v;
    else rope_usage(std::string("unknown option ") + a);
  }
  if (!o.preset && o.rotary_dim == 0) rope_usage("give --preset NAME or --rotary-dim R");
  if (o.preset && (o.have_type || !o.short_factor.empty() || !o.long_factor.empty()))
    rope_usage("a preset carries its own scaling: no --rope-type or factor lists with --preset");
  if (!o.npy && !o.info) o.print = true;
  // dynamic and longrope read the current sequence length; as HF does, the largest position + 1 by default.
  if (o.scaling.seq_len == 0) {
    int64_t last = o.have_list ? -1 : o.first + o.positions - 1;
    for (int64_t p : o.list)
      if (p != POSENC_PAD && p > last) last = p;
    o.scaling.seq_len = last + 1 > 1 ? last + 1 : 1;
  }
  return o;
}

// The preset of posenc.hpp; --rotary-dim applies to the presets whose head size varies across a family.
posenc::rope preset(const RopeOptions &o) {
  const std::string p = o.preset;
  const int64_t r = o.rotary_dim ? o.rotary_dim : 128;
  const bool sized = p == "llama2" || p == "llama3.1" || p == "mistral-7b-v0.2" || p == "qwen2" || p == "qwen2-yarn";
  if (!sized && o.rotary_dim) rope_usage("--rotary-dim does not apply to preset " + p);
  if (p == "llama2") return posenc::rope::llama2(r);
  if (p == "llama3.1") return posenc::rope::llama3_1(r);
  if (p == "mistral-7b-v0.2") return posenc::rope::mistral_7b_v02(r);
  if (p == "qwen2") return posenc::rope::qwen2(r);
  if (p == "qwen2-yarn") return posenc::rope::qwen2(r, true);
  if (p == "phi3-mini-128k") return posenc::rope::phi3_mini_128k(o.scaling.seq_len);
  if (p == "deepseek-v2") return posenc::rope::deepseek_v2();
  if (p == "deepseek-v3") return posenc::rope::deepseek_v3();
  if (p == "gpt-neox-20b") return posenc::rope::gpt_neox_20b();
  if (p == "gpt-j-6b") return posenc::rope::gpt_j_6b();
  rope_usage("unknown preset " + p + " (posenc-cli --help lists them)");
}

posenc::rope build(RopeOptions &o) {
  posenc::rope r = o.preset ? preset(o) : [&] {
    o.scaling.short_factor = o.short_factor.empty() ? nullptr : o.short_factor.data();
    o.scaling.long_factor = o.long_factor.empty() ? nullptr : o.long_factor.data();
    const int64_t h = o.rotary_dim / 2;
    if ((!o.short_factor.empty() && int64_t(o.short_factor.size()) != h) ||
        (!o.long_factor.empty() && int64_t(o.long_factor.size()) != h))
      rope_usage("--short-factor and --long-factor need rotary_dim / 2 values each");
    return posenc::rope::init(o.rotary_dim, o.base, o.have_type ? &o.scaling : nullptr);
  }();
  if (o.pairs) {
    if (!std::strcmp(o.pairs, "halves")) r = r.with_pairs(posenc::rope_pairs::halves);
    else if (!std::strcmp(o.pairs, "interleaved")) r = r.with_pairs(posenc::rope_pairs::interleaved);
    else rope_usage(std::string("unknown --pairs ") + o.pairs);
  }
  if (o.have_position_scale) r = r.with_position_scale(o.position_scale);
  if (o.have_attention_scale) r = r.with_attention_scale(o.attention_scale);
  return r;
}

bool force(const char *name) {
  for (int v = POSENC_ISA_SCALAR; v <= POSENC_ISA_NEON; ++v)
    if (!std::strcmp(name, posenc_isa_name(posenc_isa(v)))) return posenc_force_isa(posenc_isa(v)) == POSENC_OK;
  return false;
}

void print_info(const posenc::rope &r) {
  std::printf("rotary_dim %lld\npairs %s\nbase %.17g\nposition_scale %.17g\nattention_scale %.17g\n",
              (long long)r.rotary_dim(), r.pairs() == posenc::rope_pairs::halves ? "halves" : "interleaved", r.base(),
              r.position_scale(), r.attention_scale());
  std::printf("freq");
  if (r.freq().size() == 0) std::printf(" base^(-2i/r)");
  for (double f : r.freq()) std::printf(" %.17g", f);
  std::printf("\n");
}

void print_rows(const char *title, const float *t, int64_t n, int64_t cols, int decimals) {
  if (title) std::printf("%s\n", title);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t e = 0; e < cols; ++e)
      std::printf("%.*f%c", decimals, double(t[size_t(row * cols + e)]), e + 1 < cols ? ' ' : '\n');
}

// FILE.npy -> FILE_cos.npy and FILE_sin.npy
std::string with_suffix(const char *path, const char *suffix) {
  std::string p = path;
  if (p.size() > 4 && p.compare(p.size() - 4, 4, ".npy") == 0) p.resize(p.size() - 4);
  return p + suffix + ".npy";
}

}  // namespace

void rope_help(std::FILE *out) {
  std::fprintf(out,
      "RoPE mode: the cos/sin cache rows of a rotary scheme (posenc_rope_cache_f32)\n"
      "  posenc-cli rope --preset llama3.1 --positions 4 --first 131068\n"
      "  posenc-cli rope --rotary-dim 64 --base 1e4 --rope-type yarn --factor 40 --original 4096 \\\n"
      "                  --mscale 0.707 --mscale-all-dim 0.707 --position-list 0,4095,pad,163839 --npy ds.npy\n"
      "  scheme, either:\n"
      "    --preset NAME          %s\n"
      "                           (--rotary-dim R for llama2, llama3.1, mistral-7b-v0.2, qwen2, qwen2-yarn;\n"
      "                           phi3-mini-128k's factors follow --seq-len, see below)\n"
      "    or --rotary-dim R      r, even (required without a preset), with --base B (default 1e4) and\n"
      "       --rope-type default|linear|dynamic|yarn|llama3|longrope (posenc_rope_init) with its parameters:\n"
      "       --factor F  --original N (original_max_position_embeddings)\n"
      "       --seq-len N (dynamic, longrope: the current length; default the largest position + 1, as HF)\n"
      "       --beta-fast B --beta-slow B --mscale M --mscale-all-dim M --truncate 0|1 (yarn; truncate\n"
      "       defaults to 1, HF's default)\n"
      "       --low-freq-factor L --high-freq-factor H (llama3)\n"
      "       --short-factor a,b,... --long-factor a,b,... (longrope, r/2 values each)\n"
      "       --attention-factor A (yarn, longrope; 0 = derived)\n"
      "    then, on either: --pairs halves|interleaved --position-scale S --attention-scale M (overrides)\n"
      "  positions: --positions N [--first P] (a range, default 10 from 0), or --position-list P,P,...\n"
      "             (integers, or pad for POSENC_PAD: a zero row)\n"
      "  output:    --cache-layout cos-sin (default: rows of r values, cos then sin, vLLM's cos_sin_cache)\n"
      "             or separate (a cos table and a sin table of r/2 columns each, ONNX Runtime's caches);\n"
      "             --npy FILE (cos-sin: one (n, r) array; separate: FILE_cos.npy and FILE_sin.npy, a\n"
      "             trailing .npy of FILE dropped first), --print (the default without --npy or --info),\n"
      "             --info (the spec's fields and frequencies), --decimals K (default 6), --isa NAME\n",
      kPresets);
}

int rope_main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help")) {
      rope_help(stdout);
      return 0;
    }
  RopeOptions o = parse(argc, argv);
  if (o.isa && !force(o.isa)) rope_usage("that path is not available here");
  try {
    const posenc::rope r = build(o);
    if (o.info) print_info(r);
    const int64_t n = o.have_list ? int64_t(o.list.size()) : o.positions, width = r.rotary_dim(), h = width / 2;
    if (n < 0 || (n > 0 && width > (int64_t(1) << 40) / n)) rope_usage("bad --positions or --rotary-dim");
    if (!o.print && !o.npy) return 0;
    const posenc::positions pos = o.have_list ? posenc::positions(o.list) : posenc::positions(o.first);
    if (!o.separate) {
      std::vector<float> t(size_t(n * width));
      r.cache(pos, posenc::rows_view<float>(t.data(), n, width));
      if (o.print) print_rows(nullptr, t.data(), n, width, o.decimals);
      if (o.npy && !write_npy(o.npy, t.data(), n, width)) {
        std::perror(o.npy);
        return 1;
      }
    } else {
      std::vector<float> c(size_t(n * h)), s(size_t(n * h));
      r.cache(pos, posenc::rows_view<float>(c.data(), n, h), posenc::rows_view<float>(s.data(), n, h));
      if (o.print) {
        print_rows("cos", c.data(), n, h, o.decimals);
        print_rows("sin", s.data(), n, h, o.decimals);
      }
      if (o.npy) {
        const std::string cp = with_suffix(o.npy, "_cos"), sp = with_suffix(o.npy, "_sin");
        for (const auto &[path, data] : {std::make_pair(cp, &c), std::make_pair(sp, &s)})
          if (!write_npy(path.c_str(), data->data(), n, h)) {
            std::perror(path.c_str());
            return 1;
          }
      }
    }
  } catch (const posenc::error &e) {
    std::fprintf(stderr, "posenc-cli rope: %s\n", posenc_status_string(e.status()));
    return 1;
  }
  return 0;
}

}  // namespace cli
