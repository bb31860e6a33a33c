// The path kernel calls run on: resolved once, lazily and thread-safely, from POSENC_ISA or the best the
// CPU supports; replaced by posenc_force_isa.
#pragma once

#include "kernel/job.hpp"

namespace posenc {
namespace detail {

struct Path {
  void (*run)(const Job &);
  void (*run_learned)(const LearnedJob &);
  void (*run_rope)(const RopeJob &);
  void (*fill_tables)(Freq &);  // the rotation table of a new spec
};

// nullptr when POSENC_ISA named a path that is unknown or not available here.
const Path *active_path();

// The rotation table of a new frequency table (setup/freq.hpp's FillTables), on the active path: vectorised,
// most of a new spec's setup time. The scalar path's when none is selectable (tests that build tables
// directly under an unavailable POSENC_ISA).
void fill_tables(Freq &f);

// For `posenc info` (not the C ABI): whether this build contains a path (whatever the CPU), and why the
// active path is the one it is.
bool isa_compiled(int isa);
enum class PathChoice {
  kBestAvailable,   // POSENC_ISA unset or empty: the best path compiled in and supported
  kEnvironment,     // POSENC_ISA named an available path
  kForced,          // posenc_force_isa
  kEnvUnavailable,  // POSENC_ISA named a known path that is not available: every kernel call refuses
  kEnvUnknown,      // POSENC_ISA named no path: every kernel call refuses
};
PathChoice path_choice();

}  // namespace detail
}  // namespace posenc
