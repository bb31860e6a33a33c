// posenc-bench --report DIR [--quick]: the benchmark report of an installed posenc (docs/tools.md).
#pragma once

namespace bench {

// Whether the arguments ask for the report (--report DIR or --report=DIR anywhere).
bool wants_report(int argc, char **argv);
// Runs the report pipeline (share/posenc/report/report.py, the steps of scripts/report.sh) with this
// program, the installed posenc-accuracy and posenc; returns only on an error, with the exit status.
int run_report(int argc, char **argv);

}  // namespace bench
