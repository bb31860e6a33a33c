// posenc-bench --report: finds the installed report scripts and programs, then hands over to
// report.py (the one pipeline; scripts/report.sh runs it from a source tree). Where they are is known at
// build time relative to bindir (POSENC_REL_*: meson.build), so that a relocated or --destdir-staged
// install finds its own copies; the absolute install paths (POSENC_ABS_*) are the fallback.
#include "report_mode.hpp"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace bench {
namespace {

std::string self_path() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : "";
}

std::string exe_dir() {
  const std::string self = self_path();
  return self.substr(0, self.rfind('/'));
}

// The file at rel (from this program's directory, unless absolute) or at abs; "" when neither exists.
std::string locate(const char *rel, const char *abs, std::string &tried) {
  const std::string dir = exe_dir();
  for (const std::string &p : {rel[0] == '/' ? std::string(rel) : dir + "/" + rel, std::string(abs)}) {
    if (access(p.c_str(), F_OK) == 0) return p;
    tried += (tried.empty() ? "" : ", ") + p;
  }
  return "";
}

int usage(const char *why) {
  std::fprintf(stderr, "posenc-bench: %s\nusage: posenc-bench --report DIR [--quick]\n", why);
  return 2;
}

}  // namespace

bool wants_report(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--report") || !std::strncmp(argv[i], "--report=", 9)) return true;
  return false;
}

int run_report(int argc, char **argv) {
  std::string out;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!std::strcmp(a, "--quick"))
      quick = true;
    else if (!std::strncmp(a, "--report=", 9))
      out = a + 9;
    else if (!std::strcmp(a, "--report") && i + 1 < argc)
      out = argv[++i];
    else if (!std::strcmp(a, "--report"))
      return usage("--report needs a directory");
    else
      return usage((std::string("--report takes only --quick, not ") + a).c_str());
  }
  if (out.empty()) return usage("--report needs a directory");
  std::string tried;
  const std::string driver = locate(POSENC_REL_REPORT "/report.py", POSENC_ABS_REPORT "/report.py", tried);
  const std::string accuracy = locate(POSENC_REL_ACCURACY, POSENC_ABS_ACCURACY, tried);
  std::string tool_tried;
  const std::string tool = locate(POSENC_REL_TOOL, POSENC_ABS_TOOL, tool_tried);  // optional: the pictures
  if (driver.empty() || accuracy.empty()) {
    std::fprintf(stderr,
                 "posenc-bench: --report needs the installed report scripts and posenc-accuracy (looked for %s); "
                 "run it from `meson install`, or scripts/report.sh in a source tree\n",
                 tried.c_str());
    return 1;
  }
  const char *env = std::getenv("POSENC_PYTHON");
  const std::string python = env && *env ? env : "python3";
  std::string command = "posenc-bench --report " + out + (quick ? " --quick" : "");
  std::vector<std::string> args = {python,      driver,       "--out",  out,         "--bench",
                                   self_path(), "--accuracy", accuracy, "--command", command};
  if (!tool.empty()) args.insert(args.end(), {"--posenc", tool});
  if (quick) args.push_back("--quick");
  std::vector<char *> cargs;
  for (std::string &a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::fflush(stdout);
  execvp(cargs[0], cargs.data());
  std::fprintf(stderr, "posenc-bench: cannot run %s: %s (POSENC_PYTHON names the Python 3 to use)\n", python.c_str(),
               std::strerror(errno));
  return 1;
}

}  // namespace bench
