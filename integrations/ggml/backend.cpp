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
// Built against ggml's internal src/ggml-backend-impl.h (the interface structs, filled by name: their layout
// differs between versions) and the operation numbers of its ggml.h; posenc_ggml_backend_reg checks at run
// time that the ggml in the process names those operations alike.
#include <ggml-backend-impl.h>
#include <ggml-backend.h>
#include <ggml.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "posenc/ggml-backend.h"
#include "posenc/posenc.h"
#include "rope_node.hpp"

#ifndef POSENC_GGML_BUILT_VERSION
#define POSENC_GGML_BUILT_VERSION "unknown"
#endif
#define POSENC_GGML_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using namespace posenc_ggml;

// Work below this many rotated or written elements runs on the calling thread: a parallel region costs a few
// microseconds, what a decode step's RoPE node takes in all.
constexpr int64_t kElementsPerThread = 1 << 15;

std::atomic<uint64_t> g_counts[5];

void log_message(ggml_log_level level, const char *fmt, ...) {
  ggml_log_callback cb = nullptr;
  void *user = nullptr;
  ggml_log_get(&cb, &user);
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

// --- the nodes ---------------------------------------------------------------------------------------------

struct Rope {
  Record *record = nullptr;
  int64_t offs = 0;
};

// The record of a ROPE / ROPE_BACK node whose shape and parameters posenc takes (op_params as ggml's
// ggml_rope_impl writes them: n_dims 1, mode 2, n_ctx_orig 4, the six floats 5-10, sections 11-14, n_offs 15;
// ggml 0.12.0 writes no n_offs and its slot stays 0); record nullptr otherwise.
Rope rope_of(const ggml_tensor *node) {
  Rope r;
  const ggml_tensor *a = node->src[0], *b = node->src[1], *c = node->src[2];
  if (!a || !b || node->type != a->type || !ggml_are_same_shape(node, a) || node->nb[0] != a->nb[0]) return r;
  const int32_t *p = node->op_params;
  const int n_dims = p[1], mode = p[2], n_ctx_orig = p[4], n_offs = p[15];
  float f[6];
  std::memcpy(f, p + 5, sizeof f);
  if (check_shape(a, b, c, n_dims, mode, p + 11)) return r;
  if (n_offs < 0 || n_offs % 2 != 0 || int64_t(n_offs) + n_dims > a->ne[0] || (n_offs != 0 && mode == kModeVision))
    return r;
  r.record = intern(make_key(n_dims, mode, n_ctx_orig, node->op == GGML_OP_ROPE, p + 11, f), pairs_of(mode, n_dims));
  r.offs = n_offs;
  return r;
}

bool timestep_supported(const ggml_tensor *node) {
  const ggml_tensor *t = node->src[0];
  const int dim = node->op_params[0], max_period = node->op_params[1];
  return t && t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float) && node->type == GGML_TYPE_F32 && dim >= 1 &&
         max_period >= 1 && node->ne[0] == dim && node->ne[1] == t->ne[0] && node->nb[0] == sizeof(float) &&
         node->nb[1] % sizeof(float) == 0 && ggml_nrows(node) == node->ne[1];
}

// --- the backend -------------------------------------------------------------------------------------------

struct Context {
  int n_threads = GGML_DEFAULT_N_THREADS;
  ggml_backend_t cpu = nullptr;  // ggml's CPU backend, made on the first node posenc cannot take
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
    }
    return;
  }
#endif
  fn(0, 1);
}

// One node by ggml's CPU backend, for values posenc cannot take.
ggml_status compute_on_cpu(Context &ctx, ggml_tensor *node) {
  if (!ctx.cpu) {
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!dev || !(ctx.cpu = ggml_backend_dev_init(dev, nullptr))) return GGML_STATUS_FAILED;
  }
  ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(ggml_backend_get_device(ctx.cpu));
  auto set_threads = reinterpret_cast<ggml_backend_set_n_threads_t>(
      ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads"));
  if (set_threads) set_threads(ctx.cpu, ctx.n_threads);
  const ggml_init_params params = {ggml_graph_overhead_custom(1, false), nullptr, true};
  ggml_context *gctx = ggml_init(params);
  if (!gctx) return GGML_STATUS_ALLOC_FAILED;
  ggml_cgraph *graph = ggml_new_graph_custom(gctx, 1, false);
  ggml_graph_add_node(graph, node);
  const ggml_status st = ggml_backend_graph_compute(ctx.cpu, graph);
  ggml_free(gctx);
  g_counts[4].fetch_add(1, std::memory_order_relaxed);
  return st;
}

ggml_status compute_rope(Context &ctx, ggml_tensor *node) {
  const Rope r = rope_of(node);
  if (!r.record) return GGML_STATUS_FAILED;  // supports_op said no: the scheduler never sends it
  const ggml_tensor *c = node->src[2];
  const FreqSet &set = frequencies(*r.record, c ? static_cast<const float *>(c->data) : nullptr);
  if (!set.ok) return compute_on_cpu(ctx, node);
  const Node n = describe(*r.record, set, node->src[0], node->src[1], node, r.offs);
  if (!positions_ok(n)) return compute_on_cpu(ctx, node);
  posenc_status status[512];
  int used = 1;
  parallel(std::min(ctx.n_threads, 512), ggml_nelements(node), [&](int ith, int nth) {
    status[ith] = rotate_share(n, ith, nth);
    if (ith == 0) used = nth;
  });
  for (int i = 0; i < used; ++i)
    if (status[i] != POSENC_OK) return GGML_STATUS_FAILED;
  return GGML_STATUS_SUCCESS;
}

ggml_status compute_timestep(Context &ctx, ggml_tensor *node) {
  const ggml_tensor *t = node->src[0];
  if (!timesteps_ok(t)) return compute_on_cpu(ctx, node);
  const int dim = node->op_params[0], max_period = node->op_params[1];
  posenc_status status[512];
  int used = 1;
  parallel(std::min(ctx.n_threads, 512), ggml_nelements(node), [&](int ith, int nth) {
    status[ith] = timestep_share(t, node, dim, max_period, ith, nth);
    if (ith == 0) used = nth;
  });
  for (int i = 0; i < used; ++i)
    if (status[i] != POSENC_OK) return GGML_STATUS_FAILED;
  return GGML_STATUS_SUCCESS;
}

const char *backend_name(ggml_backend_t) { return "posenc"; }

void backend_free(ggml_backend_t backend) {
  auto *ctx = static_cast<Context *>(backend->context);
  if (ctx->cpu) ggml_backend_free(ctx->cpu);
  delete ctx;
  delete backend;
}

ggml_status graph_compute(ggml_backend_t backend, ggml_cgraph *graph) {
  Context &ctx = *static_cast<Context *>(backend->context);
  const int n = ggml_graph_n_nodes(graph);
  for (int i = 0; i < n; ++i) {
    ggml_tensor *node = ggml_graph_node(graph, i);
    if ((node->flags & GGML_TENSOR_FLAG_COMPUTE) == 0) continue;
    ggml_status st = GGML_STATUS_SUCCESS;
    switch (node->op) {
      case GGML_OP_NONE:
      case GGML_OP_VIEW:
      case GGML_OP_RESHAPE:
      case GGML_OP_PERMUTE:
      case GGML_OP_TRANSPOSE: continue;  // views of what other nodes computed
      case GGML_OP_ROPE:
      case GGML_OP_ROPE_BACK:
        st = compute_rope(ctx, node);
        g_counts[node->op == GGML_OP_ROPE ? 0 : 1].fetch_add(1, std::memory_order_relaxed);
        break;
      case GGML_OP_TIMESTEP_EMBEDDING:
        st = compute_timestep(ctx, node);
        g_counts[2].fetch_add(1, std::memory_order_relaxed);
        break;
      default: st = GGML_STATUS_FAILED;  // never sent: supports_op says no
    }
    if (st != GGML_STATUS_SUCCESS) return st;
  }
  g_counts[3].fetch_add(1, std::memory_order_relaxed);
  return GGML_STATUS_SUCCESS;
}

ggml_guid_t backend_guid() {
  static ggml_guid guid = {0x70, 0x6f, 0x73, 0x65, 0x6e, 0x63, 0x2d, 0x72,
                           0x6f, 0x70, 0x65, 0x2d, 0x67, 0x67, 0x6d, 0x6c};
  return &guid;
}

void set_n_threads(ggml_backend_t backend, int n_threads) {
  if (!backend || n_threads < 1 || std::strcmp(ggml_backend_name(backend), "posenc") != 0) return;
  static_cast<Context *>(backend->context)->n_threads = n_threads;
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

const char *dev_name(ggml_backend_dev_t) { return "posenc"; }
const char *dev_description(ggml_backend_dev_t) { return description().c_str(); }
void dev_memory(ggml_backend_dev_t, size_t *free, size_t *total) { *free = *total = 0; }
enum ggml_backend_dev_type dev_type(ggml_backend_dev_t) { return GGML_BACKEND_DEVICE_TYPE_ACCEL; }

void dev_props(ggml_backend_dev_t dev, ggml_backend_dev_props *props) {
  *props = ggml_backend_dev_props{};
  props->name = dev_name(dev);
  props->description = dev_description(dev);
  props->type = dev_type(dev);
  dev_memory(dev, &props->memory_free, &props->memory_total);
}

ggml_backend_t dev_init(ggml_backend_dev_t dev, const char *) {
  auto *backend = new ggml_backend{};
  backend->guid = backend_guid();
  backend->iface.get_name = backend_name;
  backend->iface.free = backend_free;
  backend->iface.graph_compute = graph_compute;
  backend->device = dev;
  backend->context = new Context;
  return backend;
}

ggml_backend_buffer_type_t dev_buffer_type(ggml_backend_dev_t) { return ggml_backend_cpu_buffer_type(); }

bool dev_supports_op(ggml_backend_dev_t, const ggml_tensor *op) {
  switch (op->op) {
    case GGML_OP_ROPE:
    case GGML_OP_ROPE_BACK: return rope_of(op).record != nullptr;
    case GGML_OP_TIMESTEP_EMBEDDING: return timestep_supported(op);
    default: return false;
  }
}

bool dev_supports_buft(ggml_backend_dev_t, ggml_backend_buffer_type_t buft) { return ggml_backend_buft_is_host(buft); }

const char *reg_name(ggml_backend_reg_t) { return "posenc"; }
size_t reg_device_count(ggml_backend_reg_t) { return 1; }

ggml_backend_device &device();
ggml_backend_dev_t reg_device(ggml_backend_reg_t, size_t index) { return index == 0 ? &device() : nullptr; }

void *reg_proc_address(ggml_backend_reg_t, const char *name) {
  if (std::strcmp(name, "ggml_backend_set_n_threads") == 0) return reinterpret_cast<void *>(&set_n_threads);
  if (std::strcmp(name, "posenc_ggml_backend_counts") == 0) return reinterpret_cast<void *>(&counts);
  return nullptr;
}

ggml_backend_reg &registry() {
  static ggml_backend_reg reg = [] {
    ggml_backend_reg r{};
    r.api_version = GGML_BACKEND_API_VERSION;
    r.iface.get_name = reg_name;
    r.iface.get_device_count = reg_device_count;
    r.iface.get_device = reg_device;
    r.iface.get_proc_address = reg_proc_address;
    r.context = nullptr;
    return r;
  }();
  return reg;
}

ggml_backend_device &device() {
  static ggml_backend_device dev = [] {
    ggml_backend_device d{};
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

// The operations and types the backend reads, with the names ggml gives them: a ggml whose enums differ from
// the headers this file was built with names them otherwise.
bool same_ggml(std::string &why) {
  static const struct {
    ggml_op op;
    const char *name;
  } ops[] = {{GGML_OP_NONE, "NONE"},           {GGML_OP_VIEW, "VIEW"},
             {GGML_OP_RESHAPE, "RESHAPE"},     {GGML_OP_PERMUTE, "PERMUTE"},
             {GGML_OP_TRANSPOSE, "TRANSPOSE"}, {GGML_OP_ROPE, "ROPE"},
             {GGML_OP_ROPE_BACK, "ROPE_BACK"}, {GGML_OP_TIMESTEP_EMBEDDING, "TIMESTEP_EMBEDDING"}};
  static const struct {
    ggml_type type;
    const char *name;
  } types[] = {{GGML_TYPE_F32, "f32"}, {GGML_TYPE_F16, "f16"}, {GGML_TYPE_I32, "i32"}};
  for (const auto &o : ops)
    if (std::strcmp(ggml_op_name(o.op), o.name) != 0) {
      why = std::string("operation ") + std::to_string(int(o.op)) + " is " + ggml_op_name(o.op) + ", not " + o.name;
      return false;
    }
  for (const auto &t : types)
    if (std::strcmp(ggml_type_name(t.type), t.name) != 0) {
      why = std::string("type ") + std::to_string(int(t.type)) + " is " + ggml_type_name(t.type) + ", not " + t.name;
      return false;
    }
  return true;
}

}  // namespace

POSENC_GGML_EXPORT ggml_backend_reg_t posenc_ggml_backend_reg(void) {
  static ggml_backend_reg_t reg = []() -> ggml_backend_reg_t {
    std::string why;
    if (!same_ggml(why)) {
      log_message(GGML_LOG_LEVEL_ERROR,
                  "posenc: not registered: built against ggml %s, running in ggml %s, whose numbering differs (%s); "
                  "build the backend against this ggml (scripts/build_ggml_backend.sh)\n",
                  POSENC_GGML_BUILT_VERSION, ggml_version(), why.c_str());
      return nullptr;
    }
    float cs[2];
    const posenc_rope probe = posenc_rope_default(2);
    if (posenc_rope_cache_f32(&probe, nullptr, 0, 1, cs, 1, cs + 1, 1) != POSENC_OK) {
      log_message(GGML_LOG_LEVEL_ERROR, "posenc: not registered: POSENC_ISA names a path (%s) this CPU lacks\n",
                  posenc_isa_name(posenc_active_isa()));
      return nullptr;
    }
    return &registry();
  }();
  return reg;
}

// The entry point of a dynamic backend (ggml_backend_load, GGML_BACKEND_PATH): ggml's GGML_BACKEND_DL_IMPL.
POSENC_GGML_EXPORT ggml_backend_reg_t ggml_backend_init(void) { return posenc_ggml_backend_reg(); }
