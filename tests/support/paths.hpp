// Helpers to run a check on every path this build has and this CPU supports.
#pragma once

#include <vector>

#include "posenc/posenc.h"

namespace ref {

// The paths to test: every available one, or only the one POSENC_ISA names when it is set (the suite
// also runs once per forced path).
std::vector<posenc_isa> paths();

// Runs fn() with the path forced, restoring the previous path after.
template <class Fn>
void on_path(posenc_isa isa, Fn fn) {
  const posenc_isa before = posenc_active_isa();
  posenc_force_isa(isa);
  fn();
  posenc_force_isa(before);
}

}  // namespace ref
