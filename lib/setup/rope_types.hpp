// The one definition of each rope type of posenc_rope_init (docs/architecture.md, "Add a RoPE scheme"; docs/rope.md,
// "One row per rope type"), one row per type in posenc_rope_type's order:
//
//   X(ENUM, name, summary, fields, accepted, transformers, elsewhere, aliases)
//
//   ENUM, name    the C enumerator's suffix (POSENC_ROPE_TYPE_<ENUM>) and the one spelling every interface uses
//   summary       the formula in one line: docs/rope.md's row
//   fields        the posenc_rope_scaling fields the scheme reads, by the dict keys that carry them (the `posenc
//                 rope` options that apply, the keys posenc.rope_init reads)
//   accepted      further keys posenc.rope_init takes for the type: checked (rope_dim) or passed over as the runtime
//                 that writes them does (Grok's class takes attn_factor and leaves it out of its cache)
//   transformers  the keys transformers' init function of the type reads ("-": transformers has no such type;
//                 posenc.torch's RotaryEmbedding follows these)
//   elsewhere     keys another runtime reads for the type to change the values, which this scheme does not: refused
//                 by name, never silently read as a default (docs/rope.md, "The keys of a scaling dict")
//   aliases       other names configurations give the type
//
// Key lists are space-separated. posenc_rope_type_keys (lib/abi/enum_names.cpp) serves every column but ENUM to the
// `posenc` tool, the Python binding and posenc.torch; tools/check_rope_types.py (meson test rope-types) holds
// docs/rope.md's table, the tool's help, the family objects and tests/test_rope_init.cpp to it. Each type's code
// is its family's object, `const Family kFamily<ENUM>` (setup/rope_family.hpp), in its family's file of
// lib/setup/schemes/: its refusals, frequencies and attention factor.
#pragma once

// clang-format off
#define POSENC_ROPE_TYPE_LIST(X)                                                                                        \
  X(DEFAULT, default, "f_i = base^(-2i/r)",                                                                             \
    "", "", "", "", "openpangu")                                                                                         \
  X(LINEAR, linear, "f_i = base^(-2i/r) / factor",                                                                      \
    "factor", "", "factor", "", "")                                                                                      \
  X(DYNAMIC, dynamic, "base' = base (factor L / L0 - factor + 1)^(r/(r-2)), or base alpha^(r/(r-2))",                  \
    "factor original_max_position_embeddings seq_len alpha", "", "factor", "", "xdrope")                                 \
  X(YARN, yarn, "YaRN: base^(-2i/r) and it / factor blended by the ramp of beta_fast, beta_slow; get_mscale",          \
    "factor original_max_position_embeddings beta_fast beta_slow mscale mscale_all_dim truncate attention_factor", "",  \
    "factor beta_fast beta_slow mscale mscale_all_dim attention_factor",                                                 \
    "extrapolation_factor attn_factor apply_yarn_scaling", "")                                                           \
  X(LLAMA3, llama3, "Llama 3.1: wavelengths past L0 / low_freq_factor / factor, below L0 / high_freq_factor kept",   \
    "factor original_max_position_embeddings low_freq_factor high_freq_factor", "",                                      \
    "factor low_freq_factor high_freq_factor", "", "")                                                                   \
  X(LONGROPE, longrope, "f_i = base^(-2i/r) / ext_i, the short or long factors by seq_len; sqrt(1 + ln f / ln L0)",     \
    "factor original_max_position_embeddings seq_len short_mscale long_mscale short_factor long_factor "                 \
    "attention_factor", "", "factor short_factor long_factor attention_factor", "", "su")                                \
  X(PROPORTIONAL, proportional, "the first floor(p r / 2) pairs at base^(-2i/r) / factor, the others 0",                \
    "factor partial_rotary_factor", "", "factor partial_rotary_factor", "", "")                                          \
  X(NTK, ntk, "f_i = (base s)^(-2i/r) s^(-2/r); mixed_b: base^(-2i/r) s^(-((i+1)/h)^b)",                                \
    "factor mixed_b", "", "-", "", "")                                                                                   \
  X(DEEPSEEK_YARN, deepseek_yarn, "YaRN with extrapolation_factor; attn_factor mscale(mscale) / mscale(mscale_all_dim)", \
    "factor original_max_position_embeddings beta_fast beta_slow mscale mscale_all_dim extrapolation_factor "            \
    "attn_factor", "rope_dim is_deepseek_v4", "-", "", "deepseek_llama_scaling")                                         \
  X(YARN_LOG, yarn_log, "Grok-1: f_i = base^(-2i/r) s^(-(1 - m_i)), m_i = e (1 - ramp_i); attention 1",                 \
    "factor original_max_position_embeddings beta_fast beta_slow extrapolation_factor",                                 \
    "scaling_factor extra_method attn_factor", "-", "", "")                                                              \
  X(THETA_SCALE, theta_scale, "Grok-1: base' = base^(ln(L0 s / 2 pi) / ln(L0 / 2 pi)); attention 1",                    \
    "factor original_max_position_embeddings",                                                                           \
    "scaling_factor extra_method beta_fast beta_slow extrapolation_factor attn_factor", "-", "", "")                     \
  X(TELECHAT3, telechat3, "YaRN's frequencies; attention (0.07 ln s + 1) attn_factor",                                  \
    "factor original_max_position_embeddings beta_fast beta_slow extrapolation_factor attn_factor", "", "-", "",        \
    "telechat3_yarn")
// clang-format on
