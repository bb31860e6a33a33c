// posenc/ggml.h: ggml's RoPE builders, and its timestep embedding (at the end), as ggml custom operations
// computed by posenc (docs/ggml.md).
//
// A builder checks what ggml's builder and CPU operation check, interns the parameter set (rope_node.hpp), and
// returns ggml_custom_4d / ggml_custom_inplace with the record as userdata; the operation then runs on ggml's
// threads, thread ith of nth rotating its share of the rows (rope_node.cpp). Where posenc cannot take a value,
// the builder or the operation stops the program through ggml's abort, as GGML_ASSERT does.
#include <cstdint>
#include <cstring>

#include <ggml.h>

#include "abi.hpp"
#include "posenc/ggml.h"
#include "posenc/posenc.h"
#include "rope_node.hpp"

// The backend module reads ggml_tensor through its own declaration (abi.hpp): the twins, compiled against a
// ggml's ggml.h, check it against that ggml's.
#define POSENC_GGML_SAME_FIELD(f) \
  static_assert(offsetof(ggml_tensor, f) == offsetof(posenc_ggml::abi::Tensor, f), "abi.hpp: ggml_tensor::" #f);
POSENC_GGML_SAME_FIELD(type)
POSENC_GGML_SAME_FIELD(buffer)
POSENC_GGML_SAME_FIELD(ne)
POSENC_GGML_SAME_FIELD(nb)
POSENC_GGML_SAME_FIELD(op)
POSENC_GGML_SAME_FIELD(op_params)
POSENC_GGML_SAME_FIELD(flags)
POSENC_GGML_SAME_FIELD(src)
POSENC_GGML_SAME_FIELD(view_src)
POSENC_GGML_SAME_FIELD(view_offs)
POSENC_GGML_SAME_FIELD(data)
POSENC_GGML_SAME_FIELD(name)
POSENC_GGML_SAME_FIELD(extra)
static_assert(sizeof(ggml_tensor) == sizeof(posenc_ggml::abi::Tensor), "abi.hpp: sizeof(ggml_tensor)");
static_assert(GGML_TENSOR_FLAG_COMPUTE == posenc_ggml::abi::kFlagCompute && GGML_STATUS_SUCCESS == 0 &&
                  GGML_ROPE_TYPE_NEOX == posenc_ggml::kModeNeox && GGML_ROPE_TYPE_MROPE == posenc_ggml::kModeMrope &&
                  GGML_ROPE_TYPE_VISION == posenc_ggml::kModeVision,
              "abi.hpp and rope_node.hpp: ggml.h's constants");
#undef POSENC_GGML_SAME_FIELD

namespace {

using namespace posenc_ggml;

// A ggml tensor as rope_node.cpp reads it (types by this build's ggml.h: the twins are compiled against the
// ggml they run in).
View view_of(const ggml_tensor *t) {
  View v;
  v.type = t->type == GGML_TYPE_F32   ? Elem::F32
           : t->type == GGML_TYPE_F16 ? Elem::F16
           : t->type == GGML_TYPE_I32 ? Elem::I32
                                      : Elem::Other;
  for (int i = 0; i < 4; ++i) {
    v.ne[i] = t->ne[i];
    v.nb[i] = t->nb[i];
  }
  v.data = t->data;
  return v;
}

// Our op_params slots (int32 indices), after the custom operation's own parameters (function, task count,
// userdata: 24 bytes): the record, and n_offs where ggml's own rope keeps it.
constexpr int kRecordParam = 12, kOffsParam = 15;
static_assert(sizeof(ggml_custom_op_t) + 2 * sizeof(void *) <= 12 * sizeof(int32_t) && sizeof(void *) <= 8,
              "our op_params slots follow the custom operation's parameters");

[[noreturn]] void fail(const char *what, int line) { ggml_abort(__FILE__, line, "posenc_ggml: %s", what); }
#define POSENC_GGML_REQUIRE(cond, what) \
  do {                                  \
    if (!(cond)) fail(what, __LINE__);  \
  } while (0)

void check_status(posenc_status st) {
  if (st == POSENC_ERR_OUT_OF_RANGE) fail("a position of -2^31 (posenc takes |p| < 2^31)", __LINE__);
  POSENC_GGML_REQUIRE(st == POSENC_OK, "posenc rejected the rotation");
}

void op(ggml_tensor *dst, int ith, int nth, void *userdata) {
  Record &r = *static_cast<Record *>(userdata);
  const ggml_tensor *a = dst->src[0], *b = dst->src[1], *c = dst->src[2];
  const FreqSet &set = frequencies(r, c ? static_cast<const float *>(c->data) : nullptr);
  POSENC_GGML_REQUIRE(set.ok, "freq_factors posenc cannot take (0, inf or NaN)");
  check_status(
      rotate_share(describe(r, set, view_of(a), view_of(b), view_of(dst), dst->op_params[kOffsParam]), ith, nth));
}

// --- the builders ------------------------------------------------------------------------------------------

ggml_tensor *build(ggml_context *ctx, ggml_tensor *a, ggml_tensor *b, ggml_tensor *c, int n_dims, const int *sections,
                   int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor, float attn_factor,
                   float beta_fast, float beta_slow, bool inplace, bool forward) {
  POSENC_GGML_REQUIRE(a && b, "a and b are required");
  int32_t sec[4] = {0, 0, 0, 0};
  if (known_mode(mode) && is_multi(mode)) {
    POSENC_GGML_REQUIRE(sections != nullptr, "the multi modes need sections (posenc_ggml_rope_multi)");
    for (int i = 0; i < 4; ++i) sec[i] = sections[i];
  }
  const View cv = c ? view_of(c) : View{};
  if (const char *problem = check_shape(view_of(a), view_of(b), c ? &cv : nullptr, n_dims, mode, sec))
    fail(problem, __LINE__);
  const float f[6] = {freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow};
  Record *record = intern(make_key(n_dims, mode, n_ctx_orig, forward, sec, f), pairs_of(mode, n_dims));
  POSENC_GGML_REQUIRE(record != nullptr,
                      "parameters posenc cannot take (freq_base, freq_scale or attn_factor <= 0 or not finite, a NaN "
                      "YaRN ramp, or a magnitude attn_factor (1 + 0.1 ln(1/freq_scale)) outside [2^-64, 2^64])");
  ggml_tensor *args[3] = {a, b, c};
  ggml_tensor *result = inplace ? ggml_custom_inplace(ctx, a, args + 1, c ? 2 : 1, op, GGML_N_TASKS_MAX, record)
                                : ggml_custom_4d(ctx, a->type, a->ne[0], a->ne[1], a->ne[2], a->ne[3], args, c ? 3 : 2,
                                                 op, GGML_N_TASKS_MAX, record);
  std::memcpy(&result->op_params[kRecordParam], &record, sizeof record);
  result->op_params[kOffsParam] = 0;
  return result;
}

// --- the timestep embedding ----------------------------------------------------------------------------------
//
// ggml_timestep_embedding(ctx, timesteps, dim, max_period): row i of the [dim, n] F32 result is the embedding of
// the F32 timestep i, cos/sin halves with base max_period and D = dim / 2 (posenc::spec::ggml_timestep), an odd
// dim ending with a 0.0 column, as ggml's CPU operation writes it. dim and max_period are kept by value in the
// result's op_params (no userdata, nothing owned or interned); the operation builds the posenc_spec on its
// stack. Thread ith of nth writes rows [n ith / nth, n (ith + 1) / nth) (rope_node.cpp, timestep_share).
constexpr int kDimParam = 12, kPeriodParam = 13;

void timestep_op(ggml_tensor *dst, int ith, int nth, void *) {
  const posenc_status st = timestep_share(view_of(dst->src[0]), view_of(dst), dst->op_params[kDimParam],
                                          dst->op_params[kPeriodParam], ith, nth);
  if (st == POSENC_ERR_OUT_OF_RANGE) fail("a timestep that is not finite or has |t| >= 2^31", __LINE__);
  POSENC_GGML_REQUIRE(st == POSENC_OK, "posenc rejected the timestep embedding");
}

}  // namespace

extern "C" {

// One builder of posenc/ggml.h through build(): `dims` its parameters from n_dims to mode, in parentheses;
// inplace, or a new tensor; forward, or the backward operation (ggml_rope_*_back).
#define POSENC_GGML_UNPAREN(...) __VA_ARGS__
#define POSENC_GGML_ROPE_BUILDER(name, dims, sections, inplace, forward)                                           \
  ggml_tensor *name(ggml_context *ctx, ggml_tensor *a, ggml_tensor *b, ggml_tensor *c, POSENC_GGML_UNPAREN dims,   \
                    int n_ctx_orig, float freq_base, float freq_scale, float ext_factor, float attn_factor,        \
                    float beta_fast, float beta_slow) {                                                            \
    return build(ctx, a, b, c, n_dims, sections, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor, \
                 beta_fast, beta_slow, inplace, forward);                                                          \
  }
POSENC_GGML_ROPE_BUILDER(posenc_ggml_rope_ext, (int n_dims, int mode), nullptr, false, true)
POSENC_GGML_ROPE_BUILDER(posenc_ggml_rope_ext_inplace, (int n_dims, int mode), nullptr, true, true)
POSENC_GGML_ROPE_BUILDER(posenc_ggml_rope_ext_back, (int n_dims, int mode), nullptr, false, false)
POSENC_GGML_ROPE_BUILDER(posenc_ggml_rope_multi, (int n_dims, int sections[4], int mode), sections, false, true)
POSENC_GGML_ROPE_BUILDER(posenc_ggml_rope_multi_inplace, (int n_dims, int sections[4], int mode), sections, true, true)
POSENC_GGML_ROPE_BUILDER(posenc_ggml_rope_multi_back, (int n_dims, int sections[4], int mode), sections, false, false)

int posenc_ggml_is_rope(const ggml_tensor *t) {
  if (!t || t->op != GGML_OP_CUSTOM) return 0;
  ggml_custom_op_t fun;
  std::memcpy(&fun, t->op_params, sizeof fun);  // the custom operation's parameters start with its function
  return fun == &op ? 1 : 0;
}

ggml_tensor *posenc_ggml_rope_set_offset(ggml_tensor *a, int n_offs) {
  POSENC_GGML_REQUIRE(posenc_ggml_is_rope(a), "posenc_ggml_rope_set_offset needs a posenc_ggml rope result");
  const Record *record;
  std::memcpy(&record, &a->op_params[kRecordParam], sizeof record);
  const Record &r = *record;
  POSENC_GGML_REQUIRE(r.key.mode != kModeVision, "VISION takes no offset");
  POSENC_GGML_REQUIRE(n_offs >= 0 && n_offs % 2 == 0 && int64_t(n_offs) + r.key.n_dims <= a->ne[0],
                      "n_offs must be even, >= 0, and n_offs + n_dims <= ne0");
  a->op_params[kOffsParam] = n_offs;
  return a;
}

ggml_tensor *posenc_ggml_timestep_embedding(ggml_context *ctx, ggml_tensor *timesteps, int dim, int max_period) {
  POSENC_GGML_REQUIRE(timesteps != nullptr, "timesteps is required");
  POSENC_GGML_REQUIRE(timesteps->type == GGML_TYPE_F32 && timesteps->nb[0] == sizeof(float),
                      "timesteps must be F32 with contiguous elements");
  POSENC_GGML_REQUIRE(dim >= 1, "dim must be at least 1");
  POSENC_GGML_REQUIRE(max_period >= 1, "max_period must be at least 1");
  ggml_tensor *args[1] = {timesteps};
  ggml_tensor *result =
      ggml_custom_4d(ctx, GGML_TYPE_F32, dim, timesteps->ne[0], 1, 1, args, 1, timestep_op, GGML_N_TASKS_MAX, nullptr);
  result->op_params[kDimParam] = dim;
  result->op_params[kPeriodParam] = max_period;
  return result;
}

}  // extern "C"
