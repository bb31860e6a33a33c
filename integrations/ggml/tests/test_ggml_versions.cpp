// The module's answer to each ggml version, with no ggml at all: this program plays the ggml that loads
// libggml-posenc.so (its path in POSENC_GGML_BACKEND_SO). It exports the functions the module looks up in the
// process (integrations/ggml/abi.hpp, kApiNames; this executable is linked with --export-dynamic), with a
// ggml_version() that returns the version under test, and calls the module's ggml_backend_init as ggml's loader
// does. Each version runs in a child process (the registry is made once per process):
// - inside the window (0.12.0 .. 0.27.x) the registry comes back with that epoch's api_version (2 before 0.27.0,
//   3 from it), one device named posenc, and no log line;
// - outside it (0.11.9, 0.28.0, 1.0.0, a string that is no version) ggml_backend_init returns NULL and logs
//   exactly one line, through ggml's log callback, naming the version and the window.
// And abi.cpp's version parsing and epoch table, directly.
#define CATCH_CONFIG_MAIN
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "abi.hpp"

using namespace posenc_ggml;

namespace {

const char *g_version = "0.0.0";
std::string g_log;
int g_lines = 0;

void log_to_string(int, const char *text, void *) {
  g_log += text;
  ++g_lines;
}

[[noreturn]] void unexpected(const char *what) {
  std::fprintf(stderr, "the module called %s while registering\n", what);
  std::_Exit(97);
}

}  // namespace

// The ggml functions the module looks up (abi.hpp's Api). Registering calls only the first and the log.
extern "C" {
__attribute__((visibility("default"))) const char *ggml_version(void) { return g_version; }
__attribute__((visibility("default"))) const char *ggml_op_name(int) { unexpected("ggml_op_name"); }
__attribute__((visibility("default"))) const char *ggml_type_name(int) { unexpected("ggml_type_name"); }
__attribute__((visibility("default"))) void ggml_log_get(abi::LogCallback *cb, void **user) {
  *cb = log_to_string;
  *user = nullptr;
}
#define POSENC_FAKE(ret, name, ...) \
  __attribute__((visibility("default"))) ret name(__VA_ARGS__) { unexpected(#name); }
POSENC_FAKE(void *, ggml_backend_dev_by_type, int)
POSENC_FAKE(void *, ggml_backend_dev_buffer_type, void *)
POSENC_FAKE(bool, ggml_backend_buft_is_host, void *)
POSENC_FAKE(void *, ggml_backend_dev_init, void *, const char *)
POSENC_FAKE(void *, ggml_backend_dev_backend_reg, void *)
POSENC_FAKE(void *, ggml_backend_reg_get_proc_address, void *, const char *)
POSENC_FAKE(int, ggml_backend_graph_compute, void *, void *)
POSENC_FAKE(void, ggml_backend_free, void *)
POSENC_FAKE(size_t, ggml_graph_overhead_custom, size_t, bool)
POSENC_FAKE(void *, ggml_init, abi::InitParams)
POSENC_FAKE(void, ggml_free, void *)
POSENC_FAKE(void *, ggml_new_graph_custom, void *, size_t, bool)
POSENC_FAKE(void, ggml_graph_add_node, void *, void *)
POSENC_FAKE(int, ggml_graph_n_nodes, void *)
POSENC_FAKE(void *, ggml_graph_node, void *, int)
#undef POSENC_FAKE
}

namespace {

struct Answer {
  int status = -1;       // the child's exit status
  int api_version = -1;  // -1: NULL registry
  int lines = 0;
  std::string log, device;
};

// The module loaded by a child process playing ggml `version`; what it answered, through a pipe.
Answer load_as(const char *version) {
  const char *so = std::getenv("POSENC_GGML_BACKEND_SO");
  REQUIRE(so != nullptr);
  int fd[2];
  REQUIRE(pipe(fd) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fd[0]);
    g_version = version;
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!h) std::_Exit(98);
    auto init = reinterpret_cast<abi::Reg *(*)()>(dlsym(h, "ggml_backend_init"));
    if (!init) std::_Exit(99);
    abi::Reg *reg = init();
    std::string out = std::to_string(reg ? reg->api_version : -1) + "\n" + std::to_string(g_lines) + "\n";
    if (reg && reg->iface.get_device_count(reg) == 1) {
      abi::Device *dev = reg->iface.get_device(reg, 0);
      out += dev->iface.get_name(dev);
    }
    out += "\n" + g_log;
    if (write(fd[1], out.data(), out.size()) != ssize_t(out.size())) std::_Exit(96);
    std::_Exit(0);
  }
  close(fd[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  close(fd[0]);
  Answer a;
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  a.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  const size_t l1 = text.find('\n'), l2 = text.find('\n', l1 + 1), l3 = text.find('\n', l2 + 1);
  if (a.status != 0 || l3 == std::string::npos) return a;
  a.api_version = std::stoi(text.substr(0, l1));
  a.lines = std::stoi(text.substr(l1 + 1, l2 - l1 - 1));
  a.device = text.substr(l2 + 1, l3 - l2 - 1);
  a.log = text.substr(l3 + 1);
  return a;
}

}  // namespace

TEST_CASE("inside the window: the epoch's api_version, one device, nothing logged") {
  const struct {
    const char *version;
    int api;
  } cases[] = {{"0.12.0", 2}, {"0.12.1", 2}, {"0.15.0", 2},  {"0.21.0", 2},    {"0.26.9", 2},
               {"0.27.0", 3}, {"0.27.1", 3}, {"0.27.12", 3}, {"0.21.0-dev", 2}};
  for (const auto &c : cases) {
    INFO("ggml " << c.version);
    const Answer a = load_as(c.version);
    REQUIRE(a.status == 0);
    CHECK(a.api_version == c.api);
    CHECK(a.device == "posenc");
    CHECK(a.lines == 0);
  }
}

TEST_CASE("outside the window: no registry and one log line naming the version and the window") {
  for (const char *v : {"0.11.9", "0.9.4", "0.28.0", "1.0.0", "unknown", ""}) {
    INFO("ggml '" << v << "'");
    const Answer a = load_as(v);
    REQUIRE(a.status == 0);
    CHECK(a.api_version == -1);
    CHECK(a.lines == 1);  // one call of ggml's log callback, with one line
    CHECK(std::count(a.log.begin(), a.log.end(), '\n') == 1);
    CHECK(a.log.find(std::string("ggml ") + (*v ? v : "(none)")) != std::string::npos);
    CHECK(a.log.find("0.12.0 to 0.27.x") != std::string::npos);
  }
}

TEST_CASE("abi: ggml_version()'s string and the epochs") {
  abi::Version v;
  REQUIRE(abi::parse_version("0.27.3", v));
  CHECK((v.major == 0 && v.minor == 27 && v.patch == 3));
  REQUIRE(abi::parse_version("0.12.0-12-gabcdef", v));
  CHECK((v.minor == 12 && v.patch == 0));
  CHECK_FALSE(abi::parse_version("0.27", v));
  CHECK_FALSE(abi::parse_version("v0.27.0", v));
  CHECK_FALSE(abi::parse_version(nullptr, v));
  const abi::Version lo{0, 12, 0}, mid{0, 26, 99}, api3{0, 27, 0}, past{0, 28, 0}, before{0, 11, 99};
  REQUIRE(abi::epoch_of(lo) != nullptr);
  CHECK(abi::epoch_of(lo)->api_version == 2);
  CHECK(abi::epoch_of(mid)->api_version == 2);
  CHECK(abi::epoch_of(api3)->api_version == 3);
  CHECK(abi::epoch_of(past) == nullptr);
  CHECK(abi::epoch_of(before) == nullptr);
}
