// What the ggml integration's tests share: test-backend-ops-like random inputs, running a call in a child
// process to see whether it stops the program through ggml's abort, and a graph's single output as
// llama.cpp and stable-diffusion.cpp compute it (built in a no_alloc context, placed by ggml-alloc).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

namespace ggml_test {

// ggml's RoPE modes by their initials (normal, NeoX, M-RoPE, interleaved M-RoPE, vision).
namespace modes {
constexpr int N = GGML_ROPE_TYPE_NORMAL, X = GGML_ROPE_TYPE_NEOX, M = GGML_ROPE_TYPE_MROPE, I = GGML_ROPE_TYPE_IMROPE,
              V = GGML_ROPE_TYPE_VISION;
}
// The largest position posenc and ggml's I32 positions take: 2^31 - 1.
constexpr int32_t kMax = 2147483647;

inline uint64_t splitmix(uint64_t &s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline float uniform(uint64_t &s, float lo, float hi) { return lo + (hi - lo) * float(splitmix(s) >> 40) * 0x1p-24f; }

// In a child process: the message of ggml's abort when fn stops the program through it (with SIGABRT), else
// "" (fn returned, or the child ended another way). The child sends the message through a pipe from ggml's
// abort callback, with its own output silenced and the test framework's SIGABRT handler removed.
inline int g_abort_fd = -1;
template <class F>
std::string abort_message(F fn) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    g_abort_fd = fds[1];
    std::signal(SIGABRT, SIG_DFL);
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    ggml_set_abort_callback([](const char *message) {
      const ssize_t n = write(g_abort_fd, message, std::strlen(message));
      (void)n;
    });
    fn();
    _exit(0);
  }
  close(fds[1]);
  std::string message;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) message.append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT ? message : std::string();
}

// fn stops the program through ggml's abort with a message of this integration's.
template <class F>
bool aborts(F fn) {
  const std::string m = abort_message(fn);
  UNSCOPED_INFO("abort message: " << m);
  return m.find("posenc_ggml: ") != std::string::npos;
}

// out as the last node of a graph built in a no_alloc context (out marked as the graph's output), its tensors
// placed by ggml-alloc in the CPU backend's buffer type, computed on `threads` threads by compute().
struct AllocatedGraph {
  ggml_cgraph *gf = nullptr;
  ggml_backend_t cpu = nullptr;
  ggml_gallocr_t alloc = nullptr;
  AllocatedGraph(ggml_context *ctx, ggml_tensor *out, int threads) {
    ggml_set_output(out);
    gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    cpu = ggml_backend_cpu_init();
    REQUIRE(cpu);
    ggml_backend_cpu_set_n_threads(cpu, threads);
    alloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(cpu));
    REQUIRE(ggml_gallocr_alloc_graph(alloc, gf));
  }
  AllocatedGraph(const AllocatedGraph &) = delete;
  AllocatedGraph &operator=(const AllocatedGraph &) = delete;
  ~AllocatedGraph() {
    ggml_gallocr_free(alloc);
    ggml_backend_free(cpu);
  }
  void compute() { REQUIRE(ggml_backend_graph_compute(cpu, gf) == GGML_STATUS_SUCCESS); }
};

}  // namespace ggml_test
