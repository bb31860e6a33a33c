// llama_check: runs small GGUF models (make_models.py) through libllama's public API and dumps what the
// checks of posenc's ggml backend need (compare.py reads the dumps). One process per run: ggml reads
// GGML_BACKEND_PATH once, in ggml_backend_load_all() (llama_backend_init()), so a vanilla run and a run with
// GGML_BACKEND_PATH=.../libggml-posenc.so are two processes writing two output directories.
//
//   llama_check prompt|far|shift --model M.gguf --out DIR [--threads N] [--kv f16|f32] [--no-eval-cb]
//               [--ctx N] [--seed S] [--n-prompt N] [--prompt-split N] [--n-decode N] [--n-far N]
//               [--starts a,b,c] [--n-shift N] [--delta D] [--layer L] [--fa auto|on|off] [--attn-factor X]
//               [--verbose]
//   llama_check bench --model M.gguf --out DIR --backend libggml-posenc.so [--rounds R] [--thread-counts 1,2]
//               [--n-prompt 2048] [--n-decode 64] [--ubatch 512] [--probe-decode N] [--kv f16|f32] [--fa ...]
//
//   prompt  random token ids (fixed seed) at positions 0 .. n_prompt-1 in two llama_decode calls (split at
//           --prompt-split) with logits for every token, then n_decode single-token steps; dumps all logits.
//   far     n_far tokens of a fresh sequence at each start position (default 0, 1000000, 2^30): dumps layer L's
//           RoPE nodes ("Qcur-L", "Kcur-L"): input, output, positions (src[1]), frequency factors (src[2]),
//           op_params; and the logits.
//   shift   n_shift tokens at 0 .. n_shift-1, llama_memory_seq_add(mem, 0, 0, -1, delta), one more token (the
//           K-shift graph runs first: its RoPE nodes rotate views of the K cache in place), dumps the K-shift
//           RoPE of layer L; then a fresh context decodes the same tokens at delta .. delta+n_shift-1 and dumps
//           its "Kcur-L" RoPE (the keys before they are stored in the cache).
//   bench   speed: llama.cpp with posenc's backend (context B) over without (context A) in one process, paired
//           and alternated, prompt and decode steps timed apart; DIR/bench.json (the report's llama.cpp section,
//           bench/report/llama_section.py; see "bench" below). GGML_BACKEND_PATH must be unset: the driver
//           loads --backend itself once A exists. POSENC_ISA picks posenc's path for the whole process.
//
// --attn-factor sets llama_context_params.yarn_attn_factor, the factor every RoPE output is scaled by: 1+2^-23
// (1.00000012) perturbs all of them by about one float32 ulp, which shows how far the logits move when RoPE
// changes at the level of correct rounding (the sensitivity behind compare.py's tolerances).
//
// Every run counts the ROPE nodes computed, per phase and per llama_decode call, through the context's eval
// callback (unless --no-eval-cb), the splits the scheduler printed (GGML_SCHED_DEBUG=1, parsed from the log),
// and, when a backend registry named "posenc" is loaded, the differences of its cumulative counters
// (registry procedure "posenc_ggml_backend_counts", include/posenc/ggml-backend.h: [0] ROPE, [1] ROPE_BACK,
// [2] TIMESTEP_EMBEDDING, [3] graphs, [4] nodes handed back to ggml's CPU code, counted in 0-2 too).
//
// How the RoPE input is captured exactly: in capture mode the eval callback answers "yes" when asked about
// every node, so the scheduler computes one node at a time and synchronizes (ggml_backend_sched's callback
// path). When it asks about a ROPE node, every earlier node of the graph has been computed and the ROPE node
// has not: its src[0] then holds exactly what the ROPE will read, even when ggml's allocator placed the ROPE
// in place over its input, or the K-shift rotates the cache view in place. The output is read when the
// callback is told the node was computed. Counting mode answers "no" to every node (whole splits at once).
//
// Output: DIR/index.json (what was run, the arrays, the phases, the RoPE nodes) and DIR/<array>.bin, raw
// little-endian float32 or int32 arrays, shapes in index.json listed slowest dimension first (numpy order:
// a ggml tensor with ne = {ne0, ne1, ne2, ne3} is stored as shape [ne3, ne2, ne1, ne0]).
//
// C++17; only llama.h, ggml.h and ggml-backend.h.
#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

#include <sys/stat.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "llama_check: ");
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
  std::exit(1);
}

// writes text to the file at path (or stops the program)
void write_text(const std::string &path, const std::string &text) {
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f) {
    die("cannot write %s", path.c_str());
  }
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

std::string json_str(const std::string &s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += (char)c;
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      r += b;
    } else {
      r += (char)c;
    }
  }
  return r + "\"";
}

std::string json_float(double v) {
  if (!std::isfinite(v)) {
    return std::isnan(v) ? "\"nan\"" : (v > 0 ? "\"inf\"" : "\"-inf\"");
  }
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

template <typename T>
std::string json_list(const std::vector<T> &v) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < v.size(); ++i) {
    o << (i ? ", " : "") << v[i];
  }
  o << "]";
  return o.str();
}

struct Options {
  std::string cmd, model, out;
  int threads = 2;
  ggml_type kv = GGML_TYPE_F16;
  bool eval_cb = true;
  uint32_t n_ctx = 1024;
  uint32_t seed = 42;
  int n_prompt = 300, prompt_split = 200, n_decode = 8, n_far = 16, n_shift = 64;
  std::vector<int64_t> starts = {0, 1000000, 1073741824};
  int64_t delta = 1000000;
  int layer = 0;
  llama_flash_attn_type fa = LLAMA_FLASH_ATTN_TYPE_AUTO;
  float attn_factor = -1.0f;  // llama_context_params.yarn_attn_factor (negative: the model's)
  bool verbose = false;
  // bench
  std::string backend;  // libggml-posenc.so, loaded after the vanilla context exists
  int rounds = 6, n_ubatch = 512, probe_decode = 8;
  std::vector<int64_t> thread_counts = {1, 2};
};

// ---------------------------------------------------------------------------------------------------------
// Output directory: arrays and the index

struct Dump {
  std::string dir;
  std::vector<std::string> arrays;  // JSON objects

  void write(const std::string &name, const char *dtype, const std::vector<int64_t> &shape, const void *data,
             size_t nbytes) {
    const std::string file = name + ".bin";
    FILE *f = std::fopen((dir + "/" + file).c_str(), "wb");
    if (!f || (nbytes && std::fwrite(data, 1, nbytes, f) != nbytes) || std::fclose(f) != 0) {
      die("cannot write %s/%s", dir.c_str(), file.c_str());
    }
    arrays.push_back("{\"name\": " + json_str(name) + ", \"file\": " + json_str(file) +
                     ", \"dtype\": " + json_str(dtype) + ", \"shape\": " + json_list(shape) + "}");
  }
  void f32(const std::string &name, const std::vector<int64_t> &shape, const std::vector<float> &v) {
    write(name, "f32", shape, v.data(), v.size() * sizeof(float));
  }
  void i32(const std::string &name, const std::vector<int64_t> &shape, const std::vector<int32_t> &v) {
    write(name, "i32", shape, v.data(), v.size() * sizeof(int32_t));
  }
};

// ---------------------------------------------------------------------------------------------------------
// Reading tensors from any backend buffer, element order i0 fastest

std::vector<int64_t> np_shape(const ggml_tensor *t) { return {t->ne[3], t->ne[2], t->ne[1], t->ne[0]}; }

std::vector<uint8_t> read_raw(const ggml_tensor *t) {
  const size_t ts = ggml_type_size(t->type);
  if (ggml_blck_size(t->type) != 1) {
    die("tensor %s: quantized type %s not supported", t->name, ggml_type_name(t->type));
  }
  std::vector<uint8_t> out((size_t)ggml_nelements(t) * ts);
  size_t k = 0;
  for (int64_t i3 = 0; i3 < t->ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < t->ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < t->ne[1]; ++i1) {
        const size_t off = i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
        if (t->nb[0] == ts) {
          ggml_backend_tensor_get(t, out.data() + k, off, t->ne[0] * ts);
          k += t->ne[0] * ts;
        } else {
          for (int64_t i0 = 0; i0 < t->ne[0]; ++i0, k += ts) {
            ggml_backend_tensor_get(t, out.data() + k, off + i0 * t->nb[0], ts);
          }
        }
      }
    }
  }
  return out;
}

// v[i] = to_f32 of the i-th 2-byte element (H: ggml_fp16_t or ggml_bf16_t) of raw
template <typename H, typename F>
void widen(const std::vector<uint8_t> &raw, std::vector<float> &v, F to_f32) {
  for (size_t i = 0; i < v.size(); ++i) {
    H h;
    std::memcpy(&h, raw.data() + 2 * i, 2);
    v[i] = to_f32(h);
  }
}

std::vector<float> read_f32(const ggml_tensor *t) {
  const std::vector<uint8_t> raw = read_raw(t);
  const int64_t n = ggml_nelements(t);
  std::vector<float> v(n);
  switch (t->type) {
    case GGML_TYPE_F32: std::memcpy(v.data(), raw.data(), n * sizeof(float)); break;
    case GGML_TYPE_F16: widen<ggml_fp16_t>(raw, v, ggml_fp16_to_fp32); break;
    case GGML_TYPE_BF16: widen<ggml_bf16_t>(raw, v, ggml_bf16_to_fp32); break;
    default: die("tensor %s: type %s not supported", t->name, ggml_type_name(t->type));
  }
  return v;
}

std::vector<int32_t> read_i32(const ggml_tensor *t) {
  if (t->type != GGML_TYPE_I32) {
    die("tensor %s: expected I32, got %s", t->name, ggml_type_name(t->type));
  }
  const std::vector<uint8_t> raw = read_raw(t);
  std::vector<int32_t> v(ggml_nelements(t));
  std::memcpy(v.data(), raw.data(), raw.size());
  return v;
}

// ---------------------------------------------------------------------------------------------------------
// State shared with the eval and log callbacks

constexpr int kCounts = 5;  // posenc_ggml_backend_counts writes 5 counters

struct RopeRecord {
  std::string tag, name, kind, src0_name, type;
  int layer = -1;
  int32_t params[15] = {};
  std::vector<int64_t> ne;
  bool inplace = false;
  std::vector<float> input, output, factors;
  std::vector<int32_t> pos;
  std::vector<int64_t> pos_shape, factors_shape;
  bool done = false;
};

struct Phase {
  std::string name;
  int calls = 0;                           // llama_decode calls
  std::map<std::string, long> rope_kinds;  // q, k, kshift, other
  std::vector<std::map<std::string, long>> per_call;
  long rope = 0;
  bool have_posenc = false;
  uint64_t posenc[kCounts] = {};
  std::vector<std::string> split_graphs;  // "CPU:0" or "CPU:0,posenc:2,CPU:1": backend:n_inputs per split
  double ms = 0;
};

using counts_fn = void (*)(uint64_t *counts);  // posenc_ggml_backend_counts_t

struct State {
  Options opt;
  bool capture = false;     // answer yes for every node, record ROPE nodes of opt.layer
  std::string capture_tag;  // tag of the records being made
  std::vector<RopeRecord> records;
  std::map<const ggml_tensor *, size_t> pending;
  std::vector<Phase> phases;
  Phase *cur = nullptr;
  std::map<std::string, long> call_kinds;
  counts_fn posenc_counts = nullptr;
  FILE *log = nullptr;
  std::string logbuf;  // the current log line(s), for the SPLIT lines
  std::string fa;      // flash attention as the context resolved it
};

std::string classify(const ggml_tensor *t, int *layer) {
  const char *n = t->name;
  if (std::strncmp(n, "Qcur-", 5) == 0 || std::strncmp(n, "Kcur-", 5) == 0) {
    *layer = std::atoi(n + 5);
    return n[0] == 'Q' ? "q" : "k";
  }
  // the K-shift's ROPE: in place over a view of the K cache "cache_k_l<il>" (scheduler copies are named
  // "<backend>#<tensor>#<copy>", hence the substring search)
  for (const ggml_tensor *s = t->src[0]; s; s = s->view_src) {
    const char *p = std::strstr(s->name, "cache_k_l");
    if (p) {
      *layer = std::atoi(p + 9);
      return "kshift";
    }
  }
  *layer = -1;
  return "other";
}

bool eval_cb(ggml_tensor *t, bool ask, void *ud) {
  State &st = *(State *)ud;
  if (t->op != GGML_OP_ROPE) {
    return st.capture;
  }
  if (ask) {
    int layer;
    const std::string kind = classify(t, &layer);
    if (st.cur) {
      st.cur->rope++;
      st.cur->rope_kinds[kind]++;
    }
    st.call_kinds[kind]++;
    if (st.capture && layer == st.opt.layer && kind != "other") {
      RopeRecord r;
      r.tag = st.capture_tag;
      r.name = t->name;
      r.kind = kind;
      r.layer = layer;
      r.src0_name = t->src[0]->name;
      r.type = ggml_type_name(t->type);
      std::memcpy(r.params, t->op_params, sizeof r.params);
      r.ne = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
      r.inplace = t->data == t->src[0]->data;
      // the input, immediately before this node runs (all earlier nodes computed, see the header)
      r.input = read_f32(t->src[0]);
      r.pos = read_i32(t->src[1]);
      r.pos_shape = np_shape(t->src[1]);
      if (t->src[2]) {
        r.factors = read_f32(t->src[2]);
        r.factors_shape = np_shape(t->src[2]);
      }
      st.pending[t] = st.records.size();
      st.records.push_back(std::move(r));
    }
    return st.capture;
  }
  auto it = st.pending.find(t);
  if (it != st.pending.end()) {
    RopeRecord &r = st.records[it->second];
    r.output = read_f32(t);
    r.done = true;
    st.pending.erase(it);
  }
  return true;
}

void parse_splits(State &st) {
  // "\n## SPLIT #%d: %s # %d inputs" (ggml_backend_sched_print_assignments, GGML_SCHED_DEBUG >= 1)
  size_t p;
  while ((p = st.logbuf.find("## SPLIT #")) != std::string::npos) {
    const size_t e = st.logbuf.find(" inputs", p);
    if (e == std::string::npos) {
      return;  // incomplete
    }
    int idx = 0, nin = 0;
    char name[128] = {0};
    if (std::sscanf(st.logbuf.c_str() + p, "## SPLIT #%d: %127s # %d inputs", &idx, name, &nin) == 3 && st.cur) {
      const std::string item = std::string(name) + ":" + std::to_string(nin);
      if (idx == 0 || st.cur->split_graphs.empty()) {
        st.cur->split_graphs.push_back(item);
      } else {
        st.cur->split_graphs.back() += "," + item;
      }
    }
    st.logbuf.erase(0, e + 7);
  }
  if (st.logbuf.size() > 4096) {
    st.logbuf.erase(0, st.logbuf.size() - 256);
  }
}

void log_cb(ggml_log_level level, const char *text, void *ud) {
  State &st = *(State *)ud;
  if (st.log) {
    std::fputs(text, st.log);
  }
  // "llama_context: flash_attn    = enabled" or "... Flash Attention was auto, set to enabled"
  if (const char *p = std::strstr(text, "flash_attn    = ")) {
    st.fa = p + 16;
  } else if (const char *q = std::strstr(text, "Flash Attention was auto, set to ")) {
    st.fa = q + 33;
  }
  while (!st.fa.empty() && (st.fa.back() == '\n' || st.fa.back() == ' ')) {
    st.fa.pop_back();
  }
  if (level == GGML_LOG_LEVEL_DEBUG || level == GGML_LOG_LEVEL_CONT) {
    st.logbuf += text;
    parse_splits(st);
  }
  if (st.opt.verbose || level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN) {
    if (level != GGML_LOG_LEVEL_DEBUG || st.opt.verbose) {
      std::fputs(text, stderr);
    }
  }
}

void posenc_read(State &st, uint64_t c[kCounts]) {
  uint64_t buf[16] = {};  // room to spare should the procedure ever write more
  if (st.posenc_counts) {
    st.posenc_counts(buf);
  }
  std::memcpy(c, buf, kCounts * sizeof(uint64_t));
}

struct PhaseScope {
  State &st;
  uint64_t before[kCounts];
  int64_t t0;
  PhaseScope(State &s, const std::string &name) : st(s) {
    st.phases.emplace_back();
    st.cur = &st.phases.back();
    st.cur->name = name;
    posenc_read(st, before);
    t0 = ggml_time_us();
  }
  ~PhaseScope() {
    uint64_t after[kCounts];
    posenc_read(st, after);
    st.cur->have_posenc = st.posenc_counts != nullptr;
    for (int i = 0; i < kCounts; ++i) {
      st.cur->posenc[i] = after[i] - before[i];
    }
    st.cur->ms = (ggml_time_us() - t0) / 1000.0;
    st.cur = nullptr;
  }
};

// ---------------------------------------------------------------------------------------------------------
// libllama

struct Run {
  State &st;
  llama_model *model = nullptr;
  const llama_vocab *vocab = nullptr;
  int n_vocab = 0, n_layer = 0;
  std::vector<llama_token> tokens;

  explicit Run(State &s) : st(s) {}

  // loads --model and draws n_tokens random token ids (fixed seed), special tokens (0, 1, 2) excluded
  void load(int n_tokens) {
    llama_model_params mp = llama_model_default_params();
    model = llama_model_load_from_file(st.opt.model.c_str(), mp);
    if (!model) {
      die("cannot load %s", st.opt.model.c_str());
    }
    vocab = llama_model_get_vocab(model);
    n_vocab = llama_vocab_n_tokens(vocab);
    n_layer = llama_model_n_layer(model);
    std::mt19937 rng(st.opt.seed);
    std::uniform_int_distribution<int> dist(3, n_vocab - 1);
    for (int i = 0; i < n_tokens; ++i) {
      tokens.push_back(dist(rng));
    }
  }

  llama_context *new_context() {
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = st.opt.n_ctx;
    cp.n_batch = 512;
    cp.n_ubatch = 512;
    cp.n_seq_max = 1;
    cp.n_threads = st.opt.threads;
    cp.n_threads_batch = st.opt.threads;
    cp.type_k = st.opt.kv;
    cp.type_v = st.opt.kv;
    cp.flash_attn_type = st.opt.fa;
    cp.yarn_attn_factor = st.opt.attn_factor;
    cp.no_perf = false;
    if (st.opt.eval_cb) {
      cp.cb_eval = eval_cb;
      cp.cb_eval_user_data = &st;
    }
    llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
      die("llama_init_from_model failed");
    }
    return ctx;
  }

  // decodes tokens[first .. first+n) at positions pos0 .. pos0+n-1 of seq 0; logits for all or the last
  std::vector<float> decode(llama_context *ctx, int first, int n, int64_t pos0, bool all_logits) {
    llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; ++i) {
      b.token[i] = tokens[first + i];
      b.pos[i] = (llama_pos)(pos0 + i);
      b.n_seq_id[i] = 1;
      b.seq_id[i][0] = 0;
      b.logits[i] = all_logits || i == n - 1;
    }
    b.n_tokens = n;
    st.call_kinds.clear();
    const int32_t rc = llama_decode(ctx, b);
    llama_synchronize(ctx);  // the phase's counters are read after this
    llama_batch_free(b);
    if (rc != 0) {
      die("llama_decode returned %d (%d tokens at position %" PRId64 ")", rc, n, pos0);
    }
    if (st.cur) {
      st.cur->calls++;
      st.cur->per_call.push_back(st.call_kinds);
    }
    std::vector<float> logits;
    for (int i = all_logits ? 0 : n - 1; i < n; ++i) {
      const float *l = llama_get_logits_ith(ctx, i);
      if (!l) {
        die("no logits for token %d", i);
      }
      logits.insert(logits.end(), l, l + n_vocab);
    }
    return logits;
  }
};

std::string kinds_json(const std::map<std::string, long> &m) {
  std::string s = "{";
  for (auto it = m.begin(); it != m.end(); ++it) {
    s += (it == m.begin() ? "" : ", ") + json_str(it->first) + ": " + std::to_string(it->second);
  }
  return s + "}";
}

void write_index(const State &st, const Run &run, const Dump &dump, const std::string &extra) {
  std::ostringstream o;
  const Options &opt = st.opt;
  char desc[256] = {0};
  llama_model_desc(run.model, desc, sizeof desc);
  o << "{\n";
  o << "  \"subcommand\": " << json_str(opt.cmd) << ",\n";
  o << "  \"model\": " << json_str(opt.model) << ",\n";
  o << "  \"model_desc\": " << json_str(desc) << ",\n";
  o << "  \"rope_type\": " << (int)llama_model_rope_type(run.model) << ",\n";
  o << "  \"n_vocab\": " << run.n_vocab << ", \"n_layer\": " << run.n_layer
    << ", \"n_head\": " << llama_model_n_head(run.model) << ", \"n_head_kv\": " << llama_model_n_head_kv(run.model)
    << ", \"n_embd\": " << llama_model_n_embd(run.model) << ",\n";
  o << "  \"threads\": " << opt.threads << ", \"kv\": " << json_str(ggml_type_name(opt.kv))
    << ", \"n_ctx\": " << opt.n_ctx << ", \"seed\": " << opt.seed
    << ", \"eval_cb\": " << (opt.eval_cb ? "true" : "false") << ", \"layer\": " << opt.layer
    << ", \"flash_attn\": " << json_str(llama_flash_attn_type_name(opt.fa))
    << ", \"flash_attn_resolved\": " << json_str(st.fa) << ", \"attn_factor\": " << json_float(opt.attn_factor)
    << ",\n";
  o << "  \"ggml_backend_path\": " << json_str(std::getenv("GGML_BACKEND_PATH") ? std::getenv("GGML_BACKEND_PATH") : "")
    << ",\n";
  o << "  \"registries\": [";
  for (size_t i = 0; i < ggml_backend_reg_count(); ++i) {
    o << (i ? ", " : "") << json_str(ggml_backend_reg_name(ggml_backend_reg_get(i)));
  }
  o << "],\n  \"devices\": [";
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    ggml_backend_dev_t d = ggml_backend_dev_get(i);
    o << (i ? ", " : "") << "{\"name\": " << json_str(ggml_backend_dev_name(d))
      << ", \"description\": " << json_str(ggml_backend_dev_description(d))
      << ", \"type\": " << (int)ggml_backend_dev_type(d) << "}";
  }
  o << "],\n  \"posenc_backend\": " << (st.posenc_counts ? "true" : "false") << ",\n";
  o << extra;
  o << "  \"phases\": [\n";
  for (size_t i = 0; i < st.phases.size(); ++i) {
    const Phase &p = st.phases[i];
    o << "    {\"name\": " << json_str(p.name) << ", \"calls\": " << p.calls << ", \"ms\": " << json_float(p.ms)
      << ", \"rope_cb\": " << (opt.eval_cb ? std::to_string(p.rope) : "null")
      << ", \"rope_cb_kinds\": " << kinds_json(p.rope_kinds) << ", \"rope_cb_per_call\": [";
    for (size_t j = 0; j < p.per_call.size(); ++j) {
      o << (j ? ", " : "") << kinds_json(p.per_call[j]);
    }
    o << "], \"posenc\": ";
    if (p.have_posenc) {
      o << "{\"rope\": " << p.posenc[0] << ", \"rope_back\": " << p.posenc[1]
        << ", \"timestep_embedding\": " << p.posenc[2] << ", \"graphs\": " << p.posenc[3]
        << ", \"cpu_fallback\": " << p.posenc[4] << "}";
    } else {
      o << "null";
    }
    o << ", \"split_graphs\": [";
    for (size_t j = 0; j < p.split_graphs.size(); ++j) {
      o << (j ? ", " : "") << json_str(p.split_graphs[j]);
    }
    o << "]}" << (i + 1 < st.phases.size() ? "," : "") << "\n";
  }
  o << "  ],\n  \"rope_nodes\": [\n";
  for (size_t i = 0; i < st.records.size(); ++i) {
    const RopeRecord &r = st.records[i];
    float fp[6];
    std::memcpy(fp, r.params + 5, sizeof fp);
    const std::string base = "rope" + std::to_string(i);
    o << "    {\"id\": " << json_str(base) << ", \"tag\": " << json_str(r.tag) << ", \"name\": " << json_str(r.name)
      << ", \"kind\": " << json_str(r.kind) << ", \"layer\": " << r.layer << ", \"src0\": " << json_str(r.src0_name)
      << ", \"type\": " << json_str(r.type) << ", \"ne\": " << json_list(r.ne)
      << ", \"inplace\": " << (r.inplace ? "true" : "false") << ",\n     \"op_params\": {\"n_dims\": " << r.params[1]
      << ", \"mode\": " << r.params[2] << ", \"n_ctx_orig\": " << r.params[4]
      << ", \"freq_base\": " << json_float(fp[0]) << ", \"freq_scale\": " << json_float(fp[1])
      << ", \"ext_factor\": " << json_float(fp[2]) << ", \"attn_factor\": " << json_float(fp[3])
      << ", \"beta_fast\": " << json_float(fp[4]) << ", \"beta_slow\": " << json_float(fp[5]) << ", \"sections\": ["
      << r.params[11] << ", " << r.params[12] << ", " << r.params[13] << ", " << r.params[14] << "]"
      << ", \"raw\": " << json_list(std::vector<int32_t>(r.params, r.params + 15)) << "},\n"
      << "     \"input\": " << json_str(base + "_in") << ", \"output\": " << json_str(base + "_out")
      << ", \"pos\": " << json_str(base + "_pos")
      << ", \"freq_factors\": " << (r.factors.empty() ? "null" : json_str(base + "_ff")) << "}"
      << (i + 1 < st.records.size() ? "," : "") << "\n";
  }
  o << "  ],\n  \"arrays\": [\n";
  for (size_t i = 0; i < dump.arrays.size(); ++i) {
    o << "    " << dump.arrays[i] << (i + 1 < dump.arrays.size() ? "," : "") << "\n";
  }
  o << "  ]\n}\n";
  write_text(dump.dir + "/index.json", o.str());
}

void dump_records(State &st, Dump &dump) {
  for (size_t i = 0; i < st.records.size(); ++i) {
    RopeRecord &r = st.records[i];
    if (!r.done) {
      die("RoPE node %s (%s) was asked about but never reported computed", r.name.c_str(), r.tag.c_str());
    }
    const std::string base = "rope" + std::to_string(i);
    const std::vector<int64_t> shape = {r.ne[3], r.ne[2], r.ne[1], r.ne[0]};
    dump.f32(base + "_in", shape, r.input);
    dump.f32(base + "_out", shape, r.output);
    dump.i32(base + "_pos", r.pos_shape, r.pos);
    if (!r.factors.empty()) {
      dump.f32(base + "_ff", r.factors_shape, r.factors);
    }
  }
}

void print_phases(const State &st) {
  for (const Phase &p : st.phases) {
    std::string splits;
    if (!p.split_graphs.empty()) {
      splits = " splits " +
               std::to_string(std::count(p.split_graphs.back().begin(), p.split_graphs.back().end(), ',') + 1) + " [" +
               p.split_graphs.back() + "]";
    }
    std::fprintf(stderr, "  %-14s %2d calls %8.1f ms  rope(cb) %s%s  posenc %s%s\n", p.name.c_str(), p.calls, p.ms,
                 st.opt.eval_cb ? std::to_string(p.rope).c_str() : "-",
                 st.opt.eval_cb ? (" " + kinds_json(p.rope_kinds)).c_str() : "",
                 p.have_posenc ? std::to_string(p.posenc[0]).c_str() : "none", splits.c_str());
  }
}

std::vector<int64_t> parse_list(const char *s) {
  std::vector<int64_t> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    v.push_back(std::stoll(item));
  }
  return v;
}

Options parse(int argc, char **argv) {
  Options o;
  if (argc < 2) {
    die("usage: llama_check prompt|far|shift|bench --model M.gguf --out DIR [options] (see the source's header)");
  }
  o.cmd = argv[1];
  if (o.cmd != "prompt" && o.cmd != "far" && o.cmd != "shift" && o.cmd != "bench") {
    die("unknown subcommand %s", o.cmd.c_str());
  }
  if (o.cmd == "bench") {
    o.n_prompt = 2048;
    o.n_decode = 64;
  }
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> const char * {
      if (i + 1 >= argc) {
        die("%s needs a value", a.c_str());
      }
      return argv[++i];
    };
    if (a == "--model")
      o.model = val();
    else if (a == "--out")
      o.out = val();
    else if (a == "--threads")
      o.threads = std::atoi(val());
    else if (a == "--kv") {
      const std::string k = val();
      if (k == "f16")
        o.kv = GGML_TYPE_F16;
      else if (k == "f32")
        o.kv = GGML_TYPE_F32;
      else if (k == "bf16")
        o.kv = GGML_TYPE_BF16;
      else
        die("--kv f16|f32|bf16");
    } else if (a == "--no-eval-cb")
      o.eval_cb = false;
    else if (a == "--ctx")
      o.n_ctx = std::atoi(val());
    else if (a == "--seed")
      o.seed = std::strtoul(val(), nullptr, 10);
    else if (a == "--n-prompt")
      o.n_prompt = std::atoi(val());
    else if (a == "--prompt-split")
      o.prompt_split = std::atoi(val());
    else if (a == "--n-decode")
      o.n_decode = std::atoi(val());
    else if (a == "--n-far")
      o.n_far = std::atoi(val());
    else if (a == "--starts")
      o.starts = parse_list(val());
    else if (a == "--n-shift")
      o.n_shift = std::atoi(val());
    else if (a == "--delta")
      o.delta = std::stoll(val());
    else if (a == "--layer")
      o.layer = std::atoi(val());
    else if (a == "--fa") {
      const std::string k = val();
      o.fa = k == "on"    ? LLAMA_FLASH_ATTN_TYPE_ENABLED
             : k == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                          : LLAMA_FLASH_ATTN_TYPE_AUTO;
    } else if (a == "--attn-factor")
      o.attn_factor = std::strtof(val(), nullptr);
    else if (a == "--verbose")
      o.verbose = true;
    else if (a == "--backend")
      o.backend = val();
    else if (a == "--rounds")
      o.rounds = std::atoi(val());
    else if (a == "--ubatch")
      o.n_ubatch = std::atoi(val());
    else if (a == "--probe-decode")
      o.probe_decode = std::atoi(val());
    else if (a == "--thread-counts")
      o.thread_counts = parse_list(val());
    else
      die("unknown option %s", a.c_str());
  }
  if (o.model.empty() || o.out.empty()) {
    die("--model and --out are required");
  }
  if (o.cmd == "far" && !o.eval_cb) {
    die("far needs the eval callback");
  }
  if (o.cmd == "bench") {
    if (o.backend.empty()) {
      die("bench needs --backend libggml-posenc.so");
    }
    if (o.rounds < 1 || o.n_ubatch < 1 || o.n_prompt < 1 || o.n_decode < 1 || o.thread_counts.empty()) {
      die("bench: --rounds, --ubatch, --n-prompt, --n-decode and --thread-counts must be positive");
    }
    return o;
  }
  if (o.prompt_split <= 0 || o.prompt_split > o.n_prompt) {
    o.prompt_split = o.n_prompt;
  }
  if (o.n_prompt > 512 || o.n_far > 512 || o.n_shift > 512) {
    die("at most 512 tokens per batch (n_batch)");
  }
  return o;
}

// ---------------------------------------------------------------------------------------------------------
// bench: llama.cpp with posenc's backend (B) over vanilla llama.cpp (A), paired, in one process
//
// ggml_backend_load_all() (llama_backend_init) runs with GGML_BACKEND_PATH unset, so the registry holds ggml's
// CPU backend only when the model and context A are made; llama_init_from_model adds every ACCEL device the
// registry has at that moment (src/llama-context.cpp, "add ACCEL backends"). Then ggml_backend_load(--backend)
// registers posenc's device and context B is made: B's scheduler has it, A's does not. Both share the model's
// weights. Each thread count (llama_set_n_threads on both) first runs the probes, then `rounds` rounds in the
// order A,B then B,A: in each, both memories are cleared and each context decodes the prompt of n_prompt random
// tokens in one llama_decode (n_batch = n_prompt, llama.cpp's default n_ubatch 512 unless --ubatch: 4 graphs for
// 2048 tokens; logits of the last token only, as a user's prompt), A's and B's in the round's order; then the
// n_decode single-token llama_decode calls of the two contexts, each timed, interleaved step by step (A B, B A,
// A B, ...), so that the two series of steps share the host's drift and pair step by step.
//
// The probes are two more contexts (A' before the load, B' after it) made with GGML_SCHED_DEBUG=1, so that
// the scheduler prints its splits (parsed from the log as in the other subcommands), and with an eval callback
// that answers yes for every node: each node is then computed alone and synchronized, and the time from the
// question about a ROPE node to its report is that node's own time on its backend (a one-node graph: for A's
// ggml operation this includes the CPU backend's start of its threads, which inside A's whole graph it does
// not pay; B's RoPE nodes are each a split of their own anyway, so this is what B pays in its timed runs). A
// probe pass decodes one ubatch of the prompt (the shape of each of the timed prompt's graphs) and probe_decode
// steps; 6 passes alternate A' and B', the first discarded, the fastest of the other 5 kept. The timed contexts have no
// callback and GGML_SCHED_DEBUG unset. posenc's counters (registry procedure "posenc_ggml_backend_counts") are read
// around every timed phase: they must move during B's phases only. POSENC_ISA (read by posenc at its first kernel call)
// selects posenc's SIMD path: one path per process.

struct Probe {
  using clock = std::chrono::steady_clock;
  clock::time_point start;
  bool open = false;
  long nodes = 0;
  double us = 0;
};

bool probe_cb(ggml_tensor *t, bool ask, void *ud) {
  Probe &p = *(Probe *)ud;
  if (t->op == GGML_OP_ROPE) {
    if (ask) {
      p.start = Probe::clock::now();
      p.open = true;
    } else if (p.open) {
      p.us += std::chrono::duration<double, std::micro>(Probe::clock::now() - p.start).count();
      p.nodes++;
      p.open = false;
    }
  }
  return true;  // every node alone
}

// "model name (family F, model M, stepping S)", as the report's machine table names the CPU
std::string read_cpu_name() {
  FILE *f = std::fopen("/proc/cpuinfo", "r");
  if (!f) {
    return "?";
  }
  std::map<std::string, std::string> kv;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    const char *c = std::strchr(line, ':');
    if (!c) {
      if (!kv.empty()) break;  // the first processor's block ends
      continue;
    }
    std::string k(line, c - line), v(c + 1);
    while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.pop_back();
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.erase(0, 1);
    while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
    kv.emplace(k, v);
  }
  std::fclose(f);
  std::string name = kv.count("model name") ? kv["model name"] : "?";
  if (kv.count("cpu family")) {
    name += " (family " + kv["cpu family"] + ", model " + kv["model"] + ", stepping " + kv["stepping"] + ")";
  }
  return name;
}

std::string read_loadavg() {
  double l[3] = {0, 0, 0};
  if (FILE *f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) != 3) l[0] = l[1] = l[2] = -1;
    std::fclose(f);
  }
  return "[" + json_float(l[0]) + ", " + json_float(l[1]) + ", " + json_float(l[2]) + "]";
}

std::string meta(const llama_model *m, const std::string &key) {
  char buf[256] = {0};
  return llama_model_meta_val_str(m, key.c_str(), buf, sizeof buf) >= 0 ? std::string(buf) : std::string();
}

int count_splits(const std::string &graph) {
  return graph.empty() ? 0 : (int)std::count(graph.begin(), graph.end(), ',') + 1;
}

int run_bench(State &st) {
  const Options &opt = st.opt;
  using clock = std::chrono::steady_clock;
  auto secs = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  if (std::getenv("GGML_BACKEND_PATH")) {
    die("bench loads posenc's backend itself (--backend) after the vanilla context: unset GGML_BACKEND_PATH");
  }
  const std::string load_start = read_loadavg();
  llama_log_set(log_cb, &st);
  llama_backend_init();
  if (ggml_backend_reg_by_name("posenc")) {
    die("a registry named posenc was loaded by ggml_backend_load_all(): the vanilla context would have it");
  }
  Run run(st);
  run.load(opt.n_prompt + opt.n_decode);

  auto make = [&](bool probe, Probe *pr) {
    if (probe)
      setenv("GGML_SCHED_DEBUG", "1", 1);
    else
      unsetenv("GGML_SCHED_DEBUG");
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = opt.n_prompt + opt.n_decode;
    cp.n_batch = std::max(opt.n_prompt, opt.n_ubatch);
    cp.n_ubatch = opt.n_ubatch;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = (int)opt.thread_counts[0];
    cp.type_k = cp.type_v = opt.kv;
    cp.flash_attn_type = opt.fa;
    cp.no_perf = false;  // llama_perf_context: how many graphs were reused
    if (probe) {
      cp.cb_eval = probe_cb;
      cp.cb_eval_user_data = pr;
    }
    llama_context *ctx = llama_init_from_model(run.model, cp);
    if (!ctx) {
      die("llama_init_from_model failed");
    }
    unsetenv("GGML_SCHED_DEBUG");
    return ctx;
  };
  Probe probe[2];
  llama_context *ctx[2], *pctx[2];
  ctx[0] = make(false, nullptr);
  pctx[0] = make(true, &probe[0]);
  ggml_backend_reg_t reg = ggml_backend_load(opt.backend.c_str());
  if (!reg || std::strcmp(ggml_backend_reg_name(reg), "posenc") != 0) {
    die("ggml_backend_load(%s) did not register posenc's backend", opt.backend.c_str());
  }
  st.posenc_counts = (counts_fn)ggml_backend_reg_get_proc_address(reg, "posenc_ggml_backend_counts");
  if (!st.posenc_counts) {
    die("posenc's registry has no procedure posenc_ggml_backend_counts");
  }
  const std::string device = ggml_backend_dev_description(ggml_backend_reg_dev_get(reg, 0));
  ctx[1] = make(false, nullptr);
  pctx[1] = make(true, &probe[1]);
  const char *names[2] = {"A", "B"};

  // tokens[first, first + n) at positions first.. in one llama_decode, logits of the last only
  auto decode = [&](llama_context *c, int first, int n) { run.decode(c, first, n, first, false); };
  auto counts_now = [&](uint64_t c[kCounts]) { posenc_read(st, c); };

  std::ostringstream o;
  char desc[256] = {0};
  llama_model_desc(run.model, desc, sizeof desc);
  const std::string arch = meta(run.model, "general.architecture");
  o << "{\n  \"subcommand\": \"bench\",\n  \"model\": " << json_str(opt.model)
    << ",\n  \"model_desc\": " << json_str(desc) << ",\n  \"arch\": " << json_str(arch)
    << ", \"rope_type\": " << (int)llama_model_rope_type(run.model) << ", \"n_layer\": " << run.n_layer
    << ", \"n_embd\": " << llama_model_n_embd(run.model) << ", \"n_head\": " << llama_model_n_head(run.model)
    << ", \"n_head_kv\": " << llama_model_n_head_kv(run.model)
    << ", \"head_dim\": " << json_str(meta(run.model, arch + ".attention.key_length"))
    << ", \"n_rot\": " << json_str(meta(run.model, arch + ".rope.dimension_count"))
    << ", \"n_ff\": " << json_str(meta(run.model, arch + ".feed_forward_length")) << ", \"n_vocab\": " << run.n_vocab
    << ", \"n_params\": " << llama_model_n_params(run.model) << ", \"model_bytes\": " << llama_model_size(run.model)
    << ",\n  \"rope_sections\": " << json_str(meta(run.model, arch + ".rope.dimension_sections"))
    << ", \"rope_freq_base\": " << json_str(meta(run.model, arch + ".rope.freq_base"))
    << ",\n  \"n_prompt\": " << opt.n_prompt << ", \"n_decode\": " << opt.n_decode
    << ", \"n_batch\": " << std::max(opt.n_prompt, opt.n_ubatch) << ", \"n_ubatch\": " << opt.n_ubatch
    << ", \"n_ctx\": " << llama_n_ctx(ctx[0]) << ", \"kv\": " << json_str(ggml_type_name(opt.kv))
    << ", \"flash_attn\": " << json_str(st.fa) << ", \"rounds\": " << opt.rounds << ", \"seed\": " << opt.seed
    << ",\n  \"cpu\": " << json_str(read_cpu_name()) << ",\n  \"posenc_device\": " << json_str(device)
    << ", \"posenc_isa_env\": " << json_str(std::getenv("POSENC_ISA") ? std::getenv("POSENC_ISA") : "")
    << ", \"backend\": " << json_str(opt.backend) << ",\n  \"load_avg_start\": " << load_start
    << ",\n  \"threads\": [\n";
  std::fprintf(stderr, "llama_check bench %s: %s, posenc device %s, %d rounds\n", opt.model.c_str(), desc,
               device.c_str(), opt.rounds);

  for (size_t ti = 0; ti < opt.thread_counts.size(); ++ti) {
    const int nt = (int)opt.thread_counts[ti];
    for (int v = 0; v < 2; ++v) {
      llama_set_n_threads(ctx[v], nt, nt);
      llama_set_n_threads(pctx[v], nt, nt);
    }
    // the probes: splits and RoPE node times (one ubatch of the prompt, then probe_decode steps)
    o << "    {\"threads\": " << nt << ",\n     \"probe\": {";
    // passes alternate A and B; the first touches the buffers and makes the tables; of the others, the
    // fastest is kept (a one-node graph of a millisecond or less: what the host's other tenants add is noise)
    constexpr int kPasses = 6;
    const int n_pp = std::min(opt.n_ubatch, opt.n_prompt);
    std::vector<double> us_prompt[2], us_decode[2];
    long nodes_prompt[2] = {}, nodes_decode[2] = {};
    uint64_t posenc_prompt[2] = {}, posenc_decode[2] = {};
    std::string graph_prompt[2], graph_decode[2];
    for (int pass = 0; pass < kPasses; ++pass) {
      for (int v = 0; v < 2; ++v) {
        llama_memory_clear(llama_get_memory(pctx[v]), true);
        st.phases.clear();
        st.phases.reserve(2);
        probe[v] = Probe();
        uint64_t c0[kCounts], c1[kCounts], c2[kCounts];
        counts_now(c0);
        {
          PhaseScope ps(st, "probe_prompt");
          decode(pctx[v], 0, n_pp);
        }
        const Probe pp = probe[v];
        counts_now(c1);
        probe[v] = Probe();
        {
          PhaseScope ps(st, "probe_decode");
          for (int i = 0; i < opt.probe_decode; ++i) {
            decode(pctx[v], n_pp + i, 1);
          }
        }
        counts_now(c2);
        const Probe pd = probe[v];
        if (pass == 0) {
          continue;
        }
        us_prompt[v].push_back(pp.us);
        us_decode[v].push_back(pd.us);
        nodes_prompt[v] = pp.nodes;
        nodes_decode[v] = pd.nodes;
        posenc_prompt[v] = c1[0] - c0[0];
        posenc_decode[v] = c2[0] - c1[0];
        graph_prompt[v] = st.phases[0].split_graphs.empty() ? "" : st.phases[0].split_graphs.back();
        graph_decode[v] = st.phases[1].split_graphs.empty() ? "" : st.phases[1].split_graphs.back();
      }
    }
    auto list = [](const std::vector<double> &v) {
      std::string r = "[";
      for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + json_float(v[i]);
      return r + "]";
    };
    for (int v = 0; v < 2; ++v) {
      const std::string &gp = graph_prompt[v], &gd = graph_decode[v];
      const double mp = *std::min_element(us_prompt[v].begin(), us_prompt[v].end());
      const double md = *std::min_element(us_decode[v].begin(), us_decode[v].end());
      o << (v ? ",\n               " : "") << json_str(names[v]) << ": {\"prompt_tokens\": " << n_pp
        << ", \"splits_prompt\": " << count_splits(gp) << ", \"splits_decode\": " << count_splits(gd)
        << ", \"split_graph_prompt\": " << json_str(gp) << ", \"split_graph_decode\": " << json_str(gd)
        << ", \"rope_nodes_prompt\": " << nodes_prompt[v] << ", \"rope_us_prompt\": " << json_float(mp)
        << ", \"rope_us_prompt_passes\": " << list(us_prompt[v]) << ", \"decode_steps\": " << opt.probe_decode
        << ", \"rope_nodes_decode\": " << nodes_decode[v] << ", \"rope_us_decode\": " << json_float(md)
        << ", \"rope_us_decode_passes\": " << list(us_decode[v]) << ", \"posenc_rope_prompt\": " << posenc_prompt[v]
        << ", \"posenc_rope_decode\": " << posenc_decode[v] << "}";
      std::fprintf(stderr,
                   "  %d thread(s) probe %s: splits prompt %d decode %d [%s]; RoPE nodes %.1f us per "
                   "ubatch (%ld), %.2f us per step (%ld), fastest of %d passes\n",
                   nt, names[v], count_splits(gp), count_splits(gd), gd.c_str(), mp, nodes_prompt[v],
                   md / opt.probe_decode, nodes_decode[v], kPasses - 1);
    }
    st.phases.clear();
    o << "},\n     \"rounds\": [\n";
    // warm-up: one ubatch and a few steps on each context (graphs allocated, pages touched)
    for (int v = 0; v < 2; ++v) {
      llama_memory_clear(llama_get_memory(ctx[v]), true);
      decode(ctx[v], 0, std::min(opt.n_ubatch, opt.n_prompt));
      for (int i = 0; i < 4; ++i) decode(ctx[v], std::min(opt.n_ubatch, opt.n_prompt) + i, 1);
    }
    uint64_t total[2][2][kCounts] = {};  // [variant][prompt, decode]
    for (int r = 0; r < opt.rounds; ++r) {
      // the prompts in the round's order, then the decode steps of the two contexts interleaved one by one
      // (A B, B A, A B, ... from the round's order), so that the two step series share the host's drift
      const int order[2] = {r % 2, 1 - r % 2};
      double prompt_s[2];
      std::vector<double> steps[2];
      for (int k = 0; k < 2; ++k) {
        const int v = order[k];
        llama_memory_clear(llama_get_memory(ctx[v]), true);
        uint64_t c0[kCounts], c1[kCounts];
        counts_now(c0);
        const auto t0 = clock::now();
        decode(ctx[v], 0, opt.n_prompt);
        prompt_s[v] = secs(t0, clock::now());
        counts_now(c1);
        for (int i = 0; i < kCounts; ++i) total[v][0][i] += c1[i] - c0[i];
      }
      for (int i = 0; i < opt.n_decode; ++i) {
        for (int k = 0; k < 2; ++k) {
          const int v = order[(k + i) % 2];
          uint64_t c0[kCounts], c1[kCounts];
          counts_now(c0);
          const auto s0 = clock::now();
          decode(ctx[v], opt.n_prompt + i, 1);
          steps[v].push_back(secs(s0, clock::now()));
          counts_now(c1);
          for (int j = 0; j < kCounts; ++j) total[v][1][j] += c1[j] - c0[j];
        }
      }
      std::string parts[2];
      for (int v = 0; v < 2; ++v) {
        double dsum = 0;
        for (double x : steps[v]) dsum += x;
        std::ostringstream p;
        p << json_str(names[v]) << ": {\"prompt_s\": " << json_float(prompt_s[v])
          << ", \"decode_s\": " << json_float(dsum) << ", \"steps_s\": [";
        for (size_t i = 0; i < steps[v].size(); ++i) p << (i ? ", " : "") << json_float(steps[v][i]);
        p << "]}";
        parts[v] = p.str();
        std::fprintf(stderr, "  %d thread(s) round %d %s: prompt %.3f s, decode %.3f ms/step\n", nt, r, names[v],
                     prompt_s[v], 1e3 * dsum / opt.n_decode);
      }
      o << "       {\"order\": " << json_str(r % 2 ? "BA" : "AB") << ", " << parts[0] << ",\n        " << parts[1]
        << "}" << (r + 1 < opt.rounds ? "," : "") << "\n";
    }
    o << "     ],\n     \"posenc_counts\": {";
    for (int v = 0; v < 2; ++v) {
      o << (v ? ", " : "") << json_str(names[v]) << ": {";
      for (int ph = 0; ph < 2; ++ph) {
        const uint64_t *c = total[v][ph];
        o << (ph ? ", " : "") << json_str(ph ? "decode" : "prompt") << ": {\"rope\": " << c[0]
          << ", \"rope_back\": " << c[1] << ", \"timestep_embedding\": " << c[2] << ", \"graphs\": " << c[3]
          << ", \"cpu_fallback\": " << c[4] << "}";
      }
      o << "}";
    }
    o << "}}" << (ti + 1 < opt.thread_counts.size() ? "," : "") << "\n";
    if (total[0][0][0] || total[0][1][0] || total[0][0][3] || total[0][1][3]) {
      die("posenc's counters moved while context A ran: A has posenc's device");
    }
    if (!total[1][0][0] || !total[1][1][0]) {
      die("posenc's counters did not move while context B ran: B computed no RoPE node on posenc's device");
    }
  }
  o << "  ],\n  \"graphs_reused\": {\"A\": " << llama_perf_context(ctx[0]).n_reused
    << ", \"B\": " << llama_perf_context(ctx[1]).n_reused
    << "}, \"decode_calls\": " << (opt.rounds * opt.n_decode + 4) * (int)opt.thread_counts.size()
    << ",\n  \"load_avg_end\": " << read_loadavg() << "\n}\n";
  for (int v = 0; v < 2; ++v) {
    llama_free(ctx[v]);
    llama_free(pctx[v]);
  }
  llama_model_free(run.model);
  llama_backend_free();
  const std::string path = opt.out + "/bench.json";
  write_text(path, o.str());
  if (st.log) {
    std::fclose(st.log);
  }
  std::fprintf(stderr, "llama_check bench: wrote %s\n", path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  static State st;
  st.opt = parse(argc, argv);
  const Options &opt = st.opt;
  if (mkdir(opt.out.c_str(), 0755) != 0 && errno != EEXIST) {
    die("cannot create %s", opt.out.c_str());
  }
  st.log = std::fopen((opt.out + "/llama.log").c_str(), "w");
  if (opt.cmd == "bench") {
    return run_bench(st);
  }
  // the scheduler prints its splits when it (re)allocates a graph; read once, in ggml_backend_sched_new
  setenv("GGML_SCHED_DEBUG", "1", 0);
  llama_log_set(log_cb, &st);
  llama_backend_init();

  if (ggml_backend_reg_t reg = ggml_backend_reg_by_name("posenc")) {
    st.posenc_counts = (counts_fn)ggml_backend_reg_get_proc_address(reg, "posenc_ggml_backend_counts");
    if (!st.posenc_counts) {
      die("a backend registry named posenc is loaded but has no procedure posenc_ggml_backend_counts");
    }
  }

  Run run(st);
  run.load(std::max({opt.n_prompt + opt.n_decode, opt.n_far, opt.n_shift + 1}));
  const llama_rope_type rope_type = llama_model_rope_type(run.model);
  const bool mrope = rope_type == LLAMA_ROPE_TYPE_MROPE || rope_type == LLAMA_ROPE_TYPE_IMROPE;

  Dump dump{opt.out, {}};
  std::string extra;
  std::fprintf(stderr, "llama_check %s %s: %s, %d threads, KV %s, eval callback %s, posenc backend %s\n",
               opt.cmd.c_str(), opt.model.c_str(), ggml_backend_reg_by_name("posenc") ? "posenc" : "vanilla",
               opt.threads, ggml_type_name(opt.kv), opt.eval_cb ? "on" : "off", st.posenc_counts ? "loaded" : "absent");

  if (opt.cmd == "prompt") {
    llama_context *ctx = nullptr;
    {
      PhaseScope ps(st, "init");
      ctx = run.new_context();
    }
    std::vector<float> lp, ld;
    {
      PhaseScope ps(st, "prompt");
      lp = run.decode(ctx, 0, opt.prompt_split, 0, true);
      if (opt.prompt_split < opt.n_prompt) {
        std::vector<float> l2 =
            run.decode(ctx, opt.prompt_split, opt.n_prompt - opt.prompt_split, opt.prompt_split, true);
        lp.insert(lp.end(), l2.begin(), l2.end());
      }
    }
    {
      PhaseScope ps(st, "decode");
      for (int i = 0; i < opt.n_decode; ++i) {
        std::vector<float> l = run.decode(ctx, opt.n_prompt + i, 1, opt.n_prompt + i, true);
        ld.insert(ld.end(), l.begin(), l.end());
      }
    }
    const llama_perf_context_data perf = llama_perf_context(ctx);
    extra += "  \"graphs_reused\": " + std::to_string(perf.n_reused) + ",\n";
    std::vector<int32_t> toks(run.tokens.begin(), run.tokens.begin() + opt.n_prompt + opt.n_decode);
    dump.i32("tokens", {(int64_t)toks.size()}, toks);
    dump.f32("logits_prompt", {opt.n_prompt, run.n_vocab}, lp);
    dump.f32("logits_decode", {opt.n_decode, run.n_vocab}, ld);
    llama_free(ctx);
  } else if (opt.cmd == "far") {
    llama_context *ctx = nullptr;
    {
      PhaseScope ps(st, "init");
      ctx = run.new_context();
    }
    st.capture = true;
    std::vector<int64_t> starts_ok;
    for (int64_t s : opt.starts) {
      llama_memory_clear(llama_get_memory(ctx), true);
      st.capture_tag = "far@" + std::to_string(s);
      PhaseScope ps(st, st.capture_tag);
      std::vector<float> l = run.decode(ctx, 0, opt.n_far, s, true);
      dump.f32("logits_far@" + std::to_string(s), {opt.n_far, run.n_vocab}, l);
      starts_ok.push_back(s);
    }
    st.capture = false;
    extra += "  \"starts\": " + json_list(starts_ok) + ", \"n_far\": " + std::to_string(opt.n_far) + ",\n";
    std::vector<int32_t> toks(run.tokens.begin(), run.tokens.begin() + opt.n_far);
    dump.i32("tokens", {(int64_t)toks.size()}, toks);
    llama_free(ctx);
  } else {  // shift
    extra += "  \"delta\": " + std::to_string(opt.delta) + ", \"n_shift\": " + std::to_string(opt.n_shift) + ",\n";
    llama_context *ctx = nullptr;
    {
      PhaseScope ps(st, "init");
      ctx = run.new_context();
    }
    llama_memory_t mem = llama_get_memory(ctx);
    const bool can_shift = llama_memory_can_shift(mem);
    if (mrope || !can_shift) {
      // llama_kv_cache::seq_add asserts n_pos_per_embd() == 1: no context shift for M-RoPE models
      const char *why = mrope ? "seq_add() is only supported for n_pos_per_embd() == 1 (M-RoPE: 4 positions per token)"
                              : "llama_memory_can_shift() is false";
      std::fprintf(stderr, "  shift skipped: %s\n", why);
      extra += "  \"skipped\": " + json_str(why) + ",\n";
    } else {
      st.capture = opt.eval_cb;
      st.capture_tag = "prefill";
      {
        PhaseScope ps(st, "shift_prefill");
        run.decode(ctx, 0, opt.n_shift, 0, false);
      }
      llama_memory_seq_add(mem, 0, 0, -1, (llama_pos)opt.delta);
      st.capture_tag = "kshift";
      std::vector<float> la;
      {
        PhaseScope ps(st, "shift_apply");
        la = run.decode(ctx, opt.n_shift, 1, opt.delta + opt.n_shift, false);
      }
      llama_free(ctx);
      ctx = nullptr;
      {
        PhaseScope ps(st, "init_direct");
        ctx = run.new_context();
      }
      st.capture_tag = "direct";
      {
        PhaseScope ps(st, "direct_prefill");
        run.decode(ctx, 0, opt.n_shift, opt.delta, false);
      }
      st.capture_tag = "direct_decode";
      std::vector<float> lb;
      {
        PhaseScope ps(st, "direct_decode");
        lb = run.decode(ctx, opt.n_shift, 1, opt.delta + opt.n_shift, false);
      }
      st.capture = false;
      dump.f32("logits_after_shift", {1, run.n_vocab}, la);
      dump.f32("logits_direct", {1, run.n_vocab}, lb);
      std::vector<int32_t> toks(run.tokens.begin(), run.tokens.begin() + opt.n_shift + 1);
      dump.i32("tokens", {(int64_t)toks.size()}, toks);
    }
    if (ctx) {
      llama_free(ctx);
    }
  }
  dump_records(st, dump);
  write_index(st, run, dump, extra);
  print_phases(st);
  llama_model_free(run.model);
  llama_backend_free();
  if (st.log) {
    std::fclose(st.log);
  }
  return 0;
}
