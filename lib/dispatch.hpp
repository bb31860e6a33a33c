// The path kernel calls run on: resolved once, lazily and thread-safely, from POSENC_ISA or the best the
// CPU supports; replaced by posenc_force_isa.
#pragma once

#include "job.hpp"

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

}  // namespace detail
}  // namespace posenc
