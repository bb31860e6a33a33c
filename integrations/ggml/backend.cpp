// posenc as a ggml backend (include/posenc/ggml-backend.h, docs/ggml.md): the registry, its one device and
// the backend that computes the RoPE and timestep nodes ggml's scheduler gives it.
//
// Why this works with no change to the program: ggml's scheduler runs a node on the highest-priority backend
// that supports it and whose buffer type is the one the node's backend already uses (pass 3 of
// ggml_backend_sched_split_graph, "upgrade nodes to higher prio backends with compatible buffer types"), and
// llama.cpp puts every ACCEL device before the CPU backend ("add ACCEL backends (such as BLAS)",
// src/llama-context.cpp). The device's buffer type is ggml's CPU buffer type, so the RoPE nodes of a CPU graph
// come here and everything else stays with ggml's CPU backend; the model loader, which places weights in the
// buffer types of ACCEL devices, skips one that is the CPU's.
//
// Built with no ggml header and no ggml source: abi.hpp declares, in posenc's words, the layouts this file
// reads and fills, and the functions it calls (looked up in the process by abi_dl.cpp for the module, linked by
// abi_static.cpp for the archive). posenc_ggml_backend_reg reads the running ggml's ggml_version(), answers
// with the registry of that version's epoch of the backend interface (its api_version), and refuses a version
// outside the window with one log line. Operations and types are recognised by the names ggml gives them.
#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "abi.hpp"
#include "posenc/posenc.h"
#include "rope_node.hpp"

#define POSENC_GGML_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using namespace posenc_ggml;
using abi::Backend;
using abi::Device;
using abi::Reg;
using abi::Tensor;

// Work below this many rotated or written elements runs on the calling thread: a parallel region costs a few
// microseconds, what a decode step's RoPE node takes in all.
constexpr int64_t kElementsPerThread = 1 << 15;
constexpr int kDefaultThreads = 4;  // GGML_DEFAULT_N_THREADS

abi::Api g_api;                       // ggml's functions, filled before the registry is handed out
const abi::Epoch *g_epoch = nullptr;  // the running ggml's epoch

void log_message(int level, const char *fmt, ...) {
  abi::LogCallback cb = nullptr;
  void *user = nullptr;
  if (g_api.log_get) g_api.log_get(&cb, &user);
  char text[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(text, sizeof text, fmt, args);
  va_end(args);
  if (cb)
    cb(level, text, user);
  else
    std::fputs(text, stderr);
}

// --- what the running ggml calls its operations and types --------------------------------------------------

enum class Op : int8_t { Unknown = -1, Other, View, Rope, RopeBack, Timestep };

Op op_from_name(const char *name) {
  static const struct {
    const char *name;
    Op op;
  } known[] = {
      {"NONE", Op::View},      {"VIEW", Op::View}, {"RESHAPE", Op::View},       {"PERMUTE", Op::View},
      {"TRANSPOSE", Op::View}, {"ROPE", Op::Rope}, {"ROPE_BACK", Op::RopeBack}, {"TIMESTEP_EMBEDDING", Op::Timestep}};
  for (const auto &k : known)
    if (name && std::strcmp(name, k.name) == 0) return k.op;
  return Op::Other;
}

Elem elem_from_name(const char *name) {
  if (!name) return Elem::Other;
  if (std::strcmp(name, "f32") == 0) return Elem::F32;
  if (std::strcmp(name, "f16") == 0) return Elem::F16;
  if (std::strcmp(name, "i32") == 0) return Elem::I32;
  return Elem::Other;
}

// The kind of a node's operation and of a tensor's type, from ggml_op_name / ggml_type_name of the value at
// hand (a valid number of the running ggml), remembered per number.
constexpr int kCached = 256;
std::atomic<int8_t> g_ops[kCached];
std::atomic<int8_t> g_types[kCached];
std::once_flag g_cache_once;

void reset_caches() {
  for (auto &o : g_ops) o.store(int8_t(Op::Unknown), std::memory_order_relaxed);
  for (auto &t : g_types) t.store(-1, std::memory_order_relaxed);
}

Op op_of(const Tensor *t) {
  const int op = t->op;
  if (op < 0 || op >= kCached) return op_from_name(g_api.op_name(op));
  int8_t k = g_ops[op].load(std::memory_order_relaxed);
  if (k == int8_t(Op::Unknown)) {
    k = int8_t(op_from_name(g_api.op_name(op)));
    g_ops[op].store(k, std::memory_order_relaxed);
  }
  return Op(k);
}

Elem elem_of(int type) {
  if (type < 0 || type >= kCached) return elem_from_name(g_api.type_name(type));
  int8_t k = g_types[type].load(std::memory_order_relaxed);
  if (k < 0) {
    k = int8_t(elem_from_name(g_api.type_name(type)));
    g_types[type].store(k, std::memory_order_relaxed);
  }
  return Elem(k);
}

View view_of(const Tensor *t) {
  View v;
  v.type = elem_of(t->type);
  for (int i = 0; i < 4; ++i) {
    v.ne[i] = t->ne[i];
    v.nb[i] = t->nb[i];
  }
  v.data = t->data;
  return v;
}

// --- what the backend did, for POSENC_GGML_STATS=1 and posenc_ggml_backend_counts ---------------------------

enum Count { kRope, kRopeBack, kTimestep, kGraphs, kToCpu, kCpuPosition, kCpuFactors, kCpuTimestep, kCountN };
std::atomic<uint64_t> g_counts[kCountN];
std::atomic<int> g_threads_set{0}, g_team_max{1};

void count(Count c) { g_counts[c].fetch_add(1, std::memory_order_relaxed); }

// One line on stderr when the module is unloaded or the process ends, if POSENC_GGML_STATS=1 asked for it.
struct Stats {
  ~Stats() {
    const char *want = std::getenv("POSENC_GGML_STATS");
    if (!want || std::strcmp(want, "1") != 0 || !g_epoch) return;
    uint64_t c[kCountN];
    for (int i = 0; i < kCountN; ++i) c[i] = g_counts[i].load(std::memory_order_relaxed);
    std::fprintf(stderr,
                 "posenc: ggml %s (backend API %d): ROPE %llu, ROPE_BACK %llu, TIMESTEP_EMBEDDING %llu nodes in %llu "
                 "graphs; handed to ggml's CPU backend %llu (position -2^31 %llu, freq_factors 0/inf/NaN %llu, "
                 "timestep not finite or |t| >= 2^31 %llu); threads set %d, largest team %d\n",
                 g_api.version ? g_api.version() : "?", g_epoch->api_version, (unsigned long long)c[kRope],
                 (unsigned long long)c[kRopeBack], (unsigned long long)c[kTimestep], (unsigned long long)c[kGraphs],
                 (unsigned long long)c[kToCpu], (unsigned long long)c[kCpuPosition], (unsigned long long)c[kCpuFactors],
                 (unsigned long long)c[kCpuTimestep], g_threads_set.load(), g_team_max.load());
  }
} g_stats;

// --- the nodes ---------------------------------------------------------------------------------------------

struct Rope {
  Record *record = nullptr;
  int64_t offs = 0;
  View a, b, c, dst;
  bool has_c = false;
};

// The record of a ROPE / ROPE_BACK node whose shape and parameters posenc takes (op_params as ggml's
// ggml_rope_impl writes them in every version of the window: n_dims 1, mode 2, n_ctx_orig 4, the six floats
// 5-10, sections 11-14, n_offs 15; ggml 0.12.0 writes no n_offs and its slot stays 0); record nullptr otherwise.
Rope rope_of(const Tensor *node) {
  Rope r;
  const Tensor *a = node->src[0], *b = node->src[1], *c = node->src[2];
  if (!a || !b) return r;
  r.a = view_of(a);
  r.b = view_of(b);
  r.dst = view_of(node);
  r.has_c = c != nullptr;
  if (c) r.c = view_of(c);
  if (r.dst.type != r.a.type || !r.dst.same_shape(r.a) || r.dst.nb[0] != r.a.nb[0]) return r;
  const int32_t *p = node->op_params;
  const int n_dims = p[1], mode = p[2], n_ctx_orig = p[4], n_offs = p[15];
  float f[6];
  std::memcpy(f, p + 5, sizeof f);
  if (check_shape(r.a, r.b, c ? &r.c : nullptr, n_dims, mode, p + 11)) return r;
  if (n_offs < 0 || n_offs % 2 != 0 || int64_t(n_offs) + n_dims > r.a.ne[0] || (n_offs != 0 && mode == kModeVision))
    return r;
  r.record = intern(make_key(n_dims, mode, n_ctx_orig, op_of(node) == Op::Rope, p + 11, f), pairs_of(mode, n_dims));
  r.offs = n_offs;
  return r;
}

bool timestep_supported(const Tensor *node) {
  const Tensor *t = node->src[0];
  if (!t) return false;
  const View tv = view_of(t), d = view_of(node);
  const int dim = node->op_params[0], max_period = node->op_params[1];
  return tv.type == Elem::F32 && tv.nb[0] == sizeof(float) && d.type == Elem::F32 && dim >= 1 && max_period >= 1 &&
         d.ne[0] == dim && d.ne[1] == tv.ne[0] && d.nb[0] == sizeof(float) && d.nb[1] % sizeof(float) == 0 &&
         d.ne[2] == 1 && d.ne[3] == 1;
}

// --- the backend -------------------------------------------------------------------------------------------

struct Context {
  int n_threads = kDefaultThreads;
  Backend *cpu = nullptr;  // ggml's CPU backend, made on the first node posenc cannot take
};

// fn(ith, nth) on nth threads (OpenMP's team when built with it), or on the calling thread for small work.
template <class Fn>
void parallel(int n_threads, int64_t elements, Fn &&fn) {
  const int64_t useful = std::max<int64_t>(1, elements / kElementsPerThread);
  const int n = int(std::min<int64_t>(n_threads, useful));
#ifdef _OPENMP
  if (n > 1) {
    // n_threads, not n: the team ggml's CPU backend just used on this thread, so that no thread is started or
    // stopped; threads past n have no share.
#pragma omp parallel num_threads(n_threads)
    {
      const int ith = omp_get_thread_num(), nth = std::min(n, omp_get_num_threads());
      if (ith < nth) fn(ith, nth);
      if (ith == 0) {
        int seen = g_team_max.load(std::memory_order_relaxed);
        while (nth > seen && !g_team_max.compare_exchange_weak(seen, nth)) {}
      }
    }
    return;
  }
#endif
  fn(0, 1);
}

using SetThreads = void (*)(Backend *, int);

// One node by ggml's CPU backend, for values posenc cannot take.
int compute_on_cpu(Context &ctx, Tensor *node, Count why) {
  if (!ctx.cpu) {
    Device *dev = g_api.dev_by_type(abi::kDevCpu);
    if (!dev || !(ctx.cpu = g_api.dev_init(dev, nullptr))) return abi::kStatusFailed;
  }
  Reg *reg = g_api.dev_backend_reg(ctx.cpu->device);
  auto set_threads = reinterpret_cast<SetThreads>(g_api.reg_get_proc_address(reg, "ggml_backend_set_n_threads"));
  if (set_threads) set_threads(ctx.cpu, ctx.n_threads);
  const abi::InitParams params = {g_api.graph_overhead_custom(1, false), nullptr, true};
  void *gctx = g_api.init(params);
  if (!gctx) return abi::kStatusAllocFailed;
  void *graph = g_api.new_graph_custom(gctx, 1, false);
  g_api.graph_add_node(graph, node);
  const int st = g_api.graph_compute(ctx.cpu, graph);
  g_api.free(gctx);
  count(kToCpu);
  count(why);
  return st;
}

template <class Share>
int run_shares(Context &ctx, int64_t elements, Share &&share) {
  posenc_status status[512];
  int used = 1;
  parallel(std::min(ctx.n_threads, 512), elements, [&](int ith, int nth) {
    status[ith] = share(ith, nth);
    if (ith == 0) used = nth;
  });
  for (int i = 0; i < used; ++i)
    if (status[i] != POSENC_OK) return abi::kStatusFailed;
  return abi::kStatusSuccess;
}

int compute_rope(Context &ctx, Tensor *node) {
  const Rope r = rope_of(node);
  if (!r.record) return abi::kStatusFailed;  // supports_op said no: the scheduler never sends it
  const FreqSet &set = frequencies(*r.record, r.has_c ? static_cast<const float *>(r.c.data) : nullptr);
  if (!set.ok) return compute_on_cpu(ctx, node, kCpuFactors);
  const Node n = describe(*r.record, set, r.a, r.b, r.dst, r.offs);
  if (!positions_ok(n)) return compute_on_cpu(ctx, node, kCpuPosition);
  return run_shares(ctx, n.dst.nelements(), [&](int ith, int nth) { return rotate_share(n, ith, nth); });
}

int compute_timestep(Context &ctx, Tensor *node) {
  const View t = view_of(node->src[0]), dst = view_of(node);
  if (!timesteps_ok(t)) return compute_on_cpu(ctx, node, kCpuTimestep);
  const int dim = node->op_params[0], max_period = node->op_params[1];
  return run_shares(ctx, dst.nelements(),
                    [&](int ith, int nth) { return timestep_share(t, dst, dim, max_period, ith, nth); });
}

const char *backend_name(Backend *) { return "posenc"; }

void backend_free(Backend *backend) {
  auto *ctx = static_cast<Context *>(backend->context);
  if (ctx->cpu) g_api.backend_free(ctx->cpu);
  delete ctx;
  delete backend;
}

int graph_compute(Backend *backend, void *graph) {
  Context &ctx = *static_cast<Context *>(backend->context);
  const int n = g_api.graph_n_nodes(graph);
  for (int i = 0; i < n; ++i) {
    Tensor *node = g_api.graph_node(graph, i);
    if ((node->flags & abi::kFlagCompute) == 0) continue;
    int st = abi::kStatusSuccess;
    switch (op_of(node)) {
      case Op::View: continue;  // views of what other nodes computed
      case Op::Rope:
        st = compute_rope(ctx, node);
        count(kRope);
        break;
      case Op::RopeBack:
        st = compute_rope(ctx, node);
        count(kRopeBack);
        break;
      case Op::Timestep:
        st = compute_timestep(ctx, node);
        count(kTimestep);
        break;
      default: st = abi::kStatusFailed;  // never sent: supports_op says no
    }
    if (st != abi::kStatusSuccess) return st;
  }
  count(kGraphs);
  return abi::kStatusSuccess;
}

const uint8_t kGuid[16] = {0x70, 0x6f, 0x73, 0x65, 0x6e, 0x63, 0x2d, 0x72,
                           0x6f, 0x70, 0x65, 0x2d, 0x67, 0x67, 0x6d, 0x6c};

void set_n_threads(Backend *backend, int n_threads) {
  // llama.cpp calls each registry's procedure with that registry's backends; be sure this one is posenc's
  if (!backend || n_threads < 1 || backend->iface.get_name != backend_name) return;
  static_cast<Context *>(backend->context)->n_threads = n_threads;
  g_threads_set.store(n_threads, std::memory_order_relaxed);
}

void counts(uint64_t out[5]) {
  for (int i = 0; i < 5; ++i) out[i] = g_counts[i].load(std::memory_order_relaxed);
}

// --- the device and the registry ------------------------------------------------------------------------

std::string &description() {
  static std::string d = std::string("posenc ") + posenc_version() +
                         ": correctly rounded RoPE and timestep embeddings (" + posenc_isa_name(posenc_active_isa()) +
                         ")";
  return d;
}

const char *dev_name(Device *) { return "posenc"; }
const char *dev_description(Device *) { return description().c_str(); }
void dev_memory(Device *, size_t *free, size_t *total) { *free = *total = 0; }
int dev_type(Device *) { return abi::kDevAccel; }

// Field by field into ggml's zeroed struct: the caps that later versions append stay as ggml zeroed them.
void dev_props(Device *dev, abi::DevProps *props) {
  props->name = dev_name(dev);
  props->description = dev_description(dev);
  dev_memory(dev, &props->memory_free, &props->memory_total);
  props->type = dev_type(dev);
  props->device_id = nullptr;
  props->async = props->host_buffer = props->buffer_from_host_ptr = props->events = false;
}

Backend *dev_init(Device *dev, const char *) {
  auto *backend = new Backend{};
  backend->guid = kGuid;
  backend->iface.get_name = backend_name;
  backend->iface.free = backend_free;
  backend->iface.graph_compute = graph_compute;
  backend->device = dev;
  backend->context = new Context;
  return backend;
}

// ggml's CPU buffer type, as the CPU device the running ggml registered gives it (in a GGML_BACKEND_DL build,
// the variant ggml chose for this CPU), so that the scheduler finds the same pointer on both backends.
void *dev_buffer_type(Device *) {
  static std::atomic<void *> buft{nullptr};
  void *b = buft.load(std::memory_order_acquire);
  if (!b) {
    Device *cpu = g_api.dev_by_type(abi::kDevCpu);
    b = cpu ? g_api.dev_buffer_type(cpu) : nullptr;
    buft.store(b, std::memory_order_release);
  }
  return b;
}

// Whether ggml's scheduler can be asked about t without t being placed: a tensor with no buffer of its own or
// through its view source. ggml's scheduler asks supports_op of a node that computes nothing (an input, a view)
// only to place it by its buffer (ggml_backend_sched_backend_from_buffer), so such a node always has one there;
// test-backend-ops asks it of every tensor of a case before any is allocated.
bool unplaced(const Tensor *t) { return !t->buffer && (!t->view_src || !t->view_src->buffer); }

bool dev_supports_op(Device *, const Tensor *op) {
  switch (op_of(op)) {
    case Op::Rope:
    case Op::RopeBack: return rope_of(op).record != nullptr;
    case Op::Timestep: return timestep_supported(op);
    case Op::View: return unplaced(op);  // computes nothing; see unplaced()
    default: return false;
  }
}

bool dev_supports_buft(Device *, void *buft) { return g_api.buft_is_host(buft); }

const char *reg_name(Reg *) { return "posenc"; }
size_t reg_device_count(Reg *) { return 1; }

Device &device();
Device *reg_device(Reg *, size_t index) { return index == 0 ? &device() : nullptr; }

void *reg_proc_address(Reg *, const char *name) {
  if (std::strcmp(name, "ggml_backend_set_n_threads") == 0) return reinterpret_cast<void *>(&set_n_threads);
  if (std::strcmp(name, "posenc_ggml_backend_counts") == 0) return reinterpret_cast<void *>(&counts);
  return nullptr;
}

Reg &registry() {
  static Reg reg = [] {
    Reg r{};
    r.api_version = g_epoch->api_version;
    r.iface.get_name = reg_name;
    r.iface.get_device_count = reg_device_count;
    r.iface.get_device = reg_device;
    r.iface.get_proc_address = reg_proc_address;
    r.context = nullptr;
    return r;
  }();
  return reg;
}

Device &device() {
  static Device dev = [] {
    Device d{};
    d.iface.get_name = dev_name;
    d.iface.get_description = dev_description;
    d.iface.get_memory = dev_memory;
    d.iface.get_type = dev_type;
    d.iface.get_props = dev_props;
    d.iface.init_backend = dev_init;
    d.iface.get_buffer_type = dev_buffer_type;
    d.iface.supports_op = dev_supports_op;
    d.iface.supports_buft = dev_supports_buft;
    d.reg = &registry();
    d.context = nullptr;
    return d;
  }();
  return dev;
}

// The window, for the refusal's log line.
std::string window() {
  const abi::Version lo = abi::kEpochs[0].from, hi = std::end(abi::kEpochs)[-1].until;
  return std::to_string(lo.major) + "." + std::to_string(lo.minor) + "." + std::to_string(lo.patch) + " to " +
         std::to_string(hi.major) + "." + std::to_string(hi.minor - 1) + ".x";
}

Reg *make_registry() {
  const char *missing = nullptr;
  if (!abi::load_api(g_api, &missing)) {
    g_api = abi::Api{};
    std::fprintf(stderr, "posenc: not registered: this ggml exports no %s (posenc supports ggml %s)\n", missing,
                 window().c_str());
    return nullptr;
  }
  const char *version = g_api.version();
  abi::Version v;
  const abi::Epoch *epoch = abi::parse_version(version, v) ? abi::epoch_of(v) : nullptr;
  if (!epoch) {
    log_message(abi::kLogError, "posenc: not registered: ggml %s is outside the versions posenc supports (%s)\n",
                version && *version ? version : "(none)", window().c_str());
    return nullptr;
  }
  g_epoch = epoch;
  std::call_once(g_cache_once, reset_caches);
  float cs[2];
  const posenc_rope probe = posenc_rope_default(2);
  if (posenc_rope_cache_f32(&probe, nullptr, 0, 1, cs, 1, cs + 1, 1) != POSENC_OK) {
    log_message(abi::kLogError, "posenc: not registered: POSENC_ISA names a path (%s) this CPU lacks\n",
                posenc_isa_name(posenc_active_isa()));
    return nullptr;
  }
  return &registry();
}

}  // namespace

// The registry for ggml_backend_register (posenc/ggml-backend.h), or NULL with one log line.
POSENC_GGML_EXPORT Reg *posenc_ggml_backend_reg(void) {
  static Reg *reg = make_registry();
  return reg;
}

// The entry point of a dynamic backend (ggml_backend_load, GGML_BACKEND_PATH): what ggml's GGML_BACKEND_DL_IMPL
// defines in its own backends.
POSENC_GGML_EXPORT Reg *ggml_backend_init(void) { return posenc_ggml_backend_reg(); }
