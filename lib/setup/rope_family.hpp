// A scheme family's definition: the code of posenc_rope_init's rope types (lib/setup/rope_types.hpp has each type's
// row: its name, parameters, keys and documentation), one file per family in lib/setup/schemes/. A family file
// defines `const Family kFamily<ENUM>` for each type of its family: its refusals and parameters (read), when its
// spec is plain base^(-2i/r) (plain), its frequency range (top), the error amplification of its exact evaluation
// (amplification), and its frequencies (constants, freq) for Scheme::freq. rope_init.cpp runs the checks every
// type shares and the Ziv rounding; a type of the list without its family object is a link error.
#pragma once

#include <cmath>
#include <cstdint>

#include "posenc/posenc.h"
#include "setup/mp.hpp"
#include "setup/rope_scheme.hpp"
#include "setup/rope_types.hpp"

namespace posenc {
namespace detail {
namespace scheme {

struct Family {
  // The spec may come without a freq array: plain base^(-2i/r) then (default; linear, as a position scale).
  bool array_optional = false;
  // The scaling's pointers, checked before anything is INVALID (POSENC_ERR_NULL); nullptr: it has none.
  posenc_status (*pointers)(const posenc_rope_scaling &sc) = nullptr;
  // The scaling's fields validated into s (r, h, base are set and valid, rotated = h, factor = 1) and the
  // attention scale (1 unless set): POSENC_OK, or the refusal's status.
  posenc_status (*read)(const posenc_rope_scaling &sc, Scheme &s, double *attention) = nullptr;
  // Whether the spec is plain base^(-2i/r), written without frequencies, and then its position scale (1 unless
  // set); have_array: the caller gave a freq array.
  bool (*plain)(const Scheme &s, bool have_array, double *position_scale) = nullptr;
  // An upper bound of log2(f_i / base^(-2i/r)) over the pairs (the cheap frequency-range check).
  double (*top)(const Scheme &s) = nullptr;
  // The error amplification of the exact evaluation: 1 + |G| for exp(-(i/h) G), plus what the family's
  // cancellations and clamps cost (docs/rope.md).
  double (*amplification)(const Scheme &s) = nullptr;
  // The per-level constants beyond Scheme::level's common ones (G = ln base, ln factor, 1 / factor, e), made
  // before rho = exp(-G / h): a family whose power has another base changes G here. nullptr: none.
  void (*constants)(Scheme &s, Scheme::Level &l, int n) = nullptr;
  // f_i at l's precision (n limbs) from inv = exp(-(i/h) G).
  Num (*freq)(Scheme &s, Scheme::Level &l, int n, int64_t i, const Num &inv) = nullptr;
};

#define POSENC_DECLARE_FAMILY(ENUM, ...) extern const Family kFamily##ENUM;
POSENC_ROPE_TYPE_LIST(POSENC_DECLARE_FAMILY)
#undef POSENC_DECLARE_FAMILY

// The family of rope type `type` (nullptr outside the list).
const Family *family_of(int type);

// What several families share (defined once, in rope_init.cpp: no inline function is emitted in several objects,
// which the ODR check of the built archive refuses, tools/check_isa_objects.py).
double plain_amplification(const Scheme &s);                                    // 1 + |ln base|
double factor_top(const Scheme &s);                                             // max(0, -log2 factor)
Num return_inv(Scheme &s, Scheme::Level &l, int n, int64_t i, const Num &inv);  // f_i = inv
bool never_plain(const Scheme &s, bool have_array, double *position_scale);     // always explicit frequencies
// a in [2^-64, 2^64] and finite, as the attention scale
posenc_status explicit_attention(double a, double *out);

}  // namespace scheme
}  // namespace detail
}  // namespace posenc
