// posenc-cli's RoPE mode: cos/sin cache rows of any rotary scheme, printed and/or saved as .npy.
#pragma once

#include <cstdio>

namespace cli {

// argv[0] is "rope"; returns the exit status (0, 1 when the library refuses, 2 for a usage error).
int rope_main(int argc, char **argv);

// The RoPE mode's part of --help.
void rope_help(std::FILE *out);

}  // namespace cli
