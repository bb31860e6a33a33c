// posenc: the command-line face of the library (docs/tools.md). `posenc COMMAND [OPTIONS]`; the manual of
// each command is in help.cpp, the exit statuses in cli.hpp.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli.hpp"
#include "posenc/posenc.hpp"

namespace {

bool is_help(const char *a) { return !std::strcmp(a, "--help") || !std::strcmp(a, "-h"); }

int run(const std::string &command, int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (is_help(argv[i])) {
      std::fputs(cli::manual(command), stdout);
      return cli::kExitOk;
    }
  if (command == "table") return cli::table_main(argc, argv);
  if (command == "rope") return cli::rope_main(argc, argv);
  if (command == "info") return cli::info_main(argc, argv);
  return cli::check_main(argc, argv);
}

int usage(const std::string &who, const std::string &why) {
  std::fprintf(stderr, "%s: %s\nTry '%s --help'.\n", who.c_str(), why.c_str(), who.c_str());
  return cli::kExitUsage;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) return usage("posenc", "no command (table, rope, info or check)");
  const std::string command = argv[1];
  if (is_help(argv[1])) {
    std::fputs(cli::manual("posenc"), stdout);
    return cli::kExitOk;
  }
  if (command == "--version") {
    std::printf("posenc %s\n", posenc_version());
    return cli::kExitOk;
  }
  if (command == "help") {
    if (argc > 3) return usage("posenc", "help takes at most one command");
    const char *text = cli::manual(argc == 3 ? argv[2] : "posenc");
    if (!text) return usage("posenc", std::string("no command '") + argv[2] + "'");
    std::fputs(text, stdout);
    return cli::kExitOk;
  }
  if (!cli::manual(command) || command == "posenc") return usage("posenc", "no command '" + command + "'");
  const std::string who = "posenc " + command;
  try {
    return run(command, argc - 1, argv + 1);
  } catch (const cli::Usage &e) {
    return usage(who, e.what());
  } catch (const posenc::error &e) {
    // An unavailable path asked for by the environment is not the command line's doing: say so.
    const char *env = std::getenv("POSENC_ISA");
    const std::string hint = e.status() == POSENC_ERR_UNSUPPORTED && env && *env
                                 ? std::string(" (POSENC_ISA=") + env + "; posenc info says why)"
                                 : "";
    std::fprintf(stderr, "%s: %s%s\n", who.c_str(), posenc_status_string(e.status()), hint.c_str());
    return cli::kExitFailed;
  } catch (const cli::IoError &e) {
    std::fprintf(stderr, "%s: %s\n", who.c_str(), e.what());
    return cli::kExitFailed;
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "%s: out of memory\n", who.c_str());
    return cli::kExitFailed;
  }
}
