// The posenc command (cli/, issue 17) run as a user runs it: a child process, its exit status, its
// standard output and error. Its tables and caches are compared with the library's own calls in this
// process, with golden digests (tests/test_golden.cpp, tests/test_rope.cpp) and the seeds' table; the
// bf16 / f16 outputs with conversions written out independently (support/halves.hpp, support/rope.hpp).
// `posenc check` must fail when a path is one ULP wrong: POSENC_TOOL_HOOKED is the same program linked
// with the test build of the dispatcher (tests/meson.build), which honours POSENC_TEST_WRONG_PATH.
// Environment (tests/meson.build): POSENC_TOOL, POSENC_TOOL_HOOKED, POSENC_TOOLS_DOC (docs/tools.md).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "dispatch/cpu.hpp"
#include "dispatch/dispatch.hpp"
#include "posenc/posenc.hpp"
#include "support/halves.hpp"
#include "support/rope.hpp"
#include "support/sha256.hpp"

extern char **environ;

namespace {

std::string env_path(const char *name) {
  const char *v = std::getenv(name);
  if (!v || !*v) FAIL(name << " is not set (tests/meson.build sets it)");
  return v;
}
std::string tool() { return env_path("POSENC_TOOL"); }
std::string hooked() { return env_path("POSENC_TOOL_HOOKED"); }

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Result {
  int status = -1;
  std::string out, err;
};

// A scratch directory for the run's files, removed at exit.
struct Scratch {
  std::string dir;
  Scratch() {
    char t[] = "/tmp/posenc-tools.XXXXXX";
    if (!mkdtemp(t)) FAIL("mkdtemp");
    dir = t;
  }
  ~Scratch() { std::system(("rm -rf '" + dir + "'").c_str()); }
  std::string path(const std::string &name) const { return dir + "/" + name; }
};
const Scratch &scratch() {
  static const Scratch s;
  return s;
}

// Runs program with args; env entries "NAME=value" set a variable, "NAME" removes it. With tty, standard
// output is a terminal (a pseudo-terminal whose output is discarded).
Result run(const std::string &program, const std::vector<std::string> &args, const std::vector<std::string> &env = {},
           bool tty = false) {
  std::map<std::string, std::string> vars;
  for (char **e = environ; *e; ++e) {
    const std::string kv = *e;
    vars[kv.substr(0, kv.find('='))] = kv;
  }
  for (const std::string &kv : env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos)
      vars.erase(kv);
    else
      vars[kv.substr(0, eq)] = kv;
  }
  std::vector<std::string> envs;
  for (const auto &kv : vars) envs.push_back(kv.second);
  std::vector<char *> cenv, cargs = {const_cast<char *>(program.c_str())};
  for (std::string &s : envs) cenv.push_back(s.data());
  cenv.push_back(nullptr);
  std::vector<std::string> a = args;
  for (std::string &s : a) cargs.push_back(s.data());
  cargs.push_back(nullptr);
  const std::string out = scratch().path("stdout"), err = scratch().path("stderr");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  int master = -1;
  if (tty) {
    master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) FAIL("no pseudo-terminal");
    posix_spawn_file_actions_addopen(&fa, 1, ptsname(master), O_WRONLY | O_NOCTTY, 0);
  } else {
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  }
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid;
  const int rc = posix_spawn(&pid, program.c_str(), &fa, nullptr, cargs.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) FAIL("cannot run " << program << ": " << std::strerror(rc));
  int ws = 0;
  waitpid(pid, &ws, 0);
  if (master >= 0) close(master);
  Result r;
  r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  r.out = tty ? "" : slurp(out);
  r.err = slurp(err);
  return r;
}
Result posenc_run(const std::vector<std::string> &args, const std::vector<std::string> &env = {}) {
  return run(tool(), args, env);
}

std::string describe(const std::vector<std::string> &args) {
  std::string s = "posenc";
  for (const std::string &a : args) s += " " + a;
  return s;
}

// A successful run's standard output.
std::string ok_out(const std::vector<std::string> &args, const std::vector<std::string> &env = {}) {
  const Result r = posenc_run(args, env);
  INFO(describe(args) << "\nstderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());
  return r.out;
}

template <class T>
std::vector<T> from_bytes(const std::string &b) {
  REQUIRE(b.size() % sizeof(T) == 0);
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}
template <class T>
std::string to_bytes(const std::vector<T> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(T));
}

std::string sha256(const std::string &b) {
  ref::Sha256 h;
  h.update(b.data(), b.size());
  return h.hex();
}

// A .npy file of version 1.0: its dtype, its shape and its data.
struct Npy {
  std::string descr;
  int64_t rows = -1, cols = -1;
  std::string data;
};
Npy parse_npy(const std::string &f) {
  Npy n;
  REQUIRE(f.size() >= 10);
  REQUIRE(f.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) == 0);
  const size_t len = size_t((unsigned char)f[8]) | size_t((unsigned char)f[9]) << 8;
  REQUIRE((10 + len) % 64 == 0);
  const std::string dict = f.substr(10, len);
  REQUIRE(dict.back() == '\n');
  // {'descr': 'DESCR', 'fortran_order': False, 'shape': (ROWS, COLS), } and the padding
  const std::string head = "{'descr': '", mid = "', 'fortran_order': False, 'shape': (";
  REQUIRE(dict.rfind(head, 0) == 0);
  const size_t d_end = dict.find(mid), comma = dict.find(", ", d_end + mid.size()), close = dict.find("), }");
  REQUIRE(d_end != std::string::npos);
  REQUIRE(comma != std::string::npos);
  REQUIRE(close != std::string::npos);
  REQUIRE(dict.find_first_not_of(' ', close + 4) == dict.size() - 1);
  n.descr = dict.substr(head.size(), d_end - head.size());
  n.rows = std::stoll(dict.substr(d_end + mid.size(), comma - d_end - mid.size()));
  n.cols = std::stoll(dict.substr(comma + 2, close - comma - 2));
  n.data = f.substr(10 + len);
  return n;
}

std::vector<std::string> lines(const std::string &s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}
std::vector<std::string> fields(const std::string &line, char sep) {
  std::vector<std::string> out;
  std::string f;
  std::istringstream in(line);
  while (std::getline(in, f, sep)) out.push_back(f);
  return out;
}

// The library's table for a spec and positions (a run from first, or a list), in each dtype.
std::vector<float> lib_f32(const posenc::spec &s, int64_t first, int64_t n, const std::vector<int64_t> &list = {}) {
  const int64_t rows = list.empty() ? n : int64_t(list.size());
  std::vector<float> t(size_t(rows * s.d_model()));
  posenc::rows_view<float> v(t.data(), rows, s.d_model());
  if (list.empty())
    posenc::table_f32(s, first, v);
  else
    posenc::rows_f32(s, list, v);
  return t;
}

// Every path the ABI names (posenc.h's enumerators run from 0 to POSENC_ISA_COUNT).
const std::vector<posenc_isa> kAllIsas = [] {
  std::vector<posenc_isa> v;
  for (int i = 0; i < POSENC_ISA_COUNT; ++i) v.push_back(posenc_isa(i));
  return v;
}();

std::vector<std::string> available_paths() {
  std::vector<std::string> p;
  for (posenc_isa isa : kAllIsas)
    if (posenc_isa_available(isa)) p.push_back(posenc_isa_name(isa));
  return p;
}

}  // namespace

// ---- manuals ---------------------------------------------------------------------------------------

TEST_CASE("tools: every manual, from --help, -h and help COMMAND", "[tools]") {
  CHECK(ok_out({"--help"}) == cli::manual("posenc"));
  CHECK(ok_out({"help"}) == cli::manual("posenc"));
  CHECK(ok_out({"--version"}) == std::string("posenc ") + posenc_version() + "\n");
  for (const std::string &c : cli::commands()) {
    const std::string text = cli::manual(c);
    INFO(c);
    CHECK(text.rfind("NAME\n    posenc " + c + " - ", 0) == 0);
    CHECK(text.find("\nSYNOPSIS\n    posenc " + c) != std::string::npos);
    CHECK(ok_out({c, "--help"}) == text);
    CHECK(ok_out({c, "-h"}) == text);
    CHECK(ok_out({"help", c}) == text);
    CHECK(ok_out({c, "--d-model", "6", "--help"}) == text);  // --help wins over the other options
    CHECK(std::string(cli::manual("posenc")).find("\n    " + c + " ") != std::string::npos);
  }
}

TEST_CASE("tools: docs/tools.md describes every option of every manual", "[tools][docs]") {
  const std::string doc = slurp(env_path("POSENC_TOOLS_DOC"));
  REQUIRE(!doc.empty());
  for (const std::string &c : cli::commands()) {
    const std::string text = cli::manual(c);
    int options = 0;
    for (size_t at = text.find("--"); at != std::string::npos; at = text.find("--", at + 2)) {
      size_t end = at + 2;
      while (end < text.size() &&
             (std::islower((unsigned char)text[end]) || std::isdigit((unsigned char)text[end]) || text[end] == '-'))
        ++end;
      if (end == at + 2) continue;
      const std::string option = text.substr(at, end - at);
      ++options;
      INFO("posenc " << c << " " << option);
      CHECK(doc.find("`" + option) != std::string::npos);
    }
    CHECK(options > 0);
    CHECK(doc.find("posenc " + c) != std::string::npos);
  }
}

// ---- errors ------------------------------------------------------------------------------------------

TEST_CASE("tools: usage errors exit 2 with a message and print nothing else", "[tools]") {
  const std::string f = scratch().path("unused.npy");
  const std::vector<std::vector<std::string>> bad = {
      {},
      {"bogus"},
      {"help", "bogus"},
      {"help", "table", "rope"},
      {"table"},
      {"table", "--d-model"},
      {"table", "--d-model", "x"},
      {"table", "--d-model", "6x"},
      {"table", "--d-model", "99999999999999999999"},
      {"table", "--d-model", "6", "--bogus"},
      {"table", "--d-model", "6", "stray"},
      {"table", "--d-model", "6", "--layout", "diagonal"},
      {"table", "--d-model", "6", "--preset", "bert"},
      {"table", "--d-model", "6", "--max-period", "100"},
      {"table", "--d-model", "6", "--preset", "ggml", "--padding-idx", "0"},
      {"table", "--d-model", "6", "--preset", "fairseq", "--flip-sin-to-cos"},
      {"table", "--d-model", "6", "--min-timescale", "2"},
      {"table", "--d-model", "6", "--position-list", "1,2", "--first", "3"},
      {"table", "--d-model", "6", "--position-list", "1,2", "--positions", "3"},
      {"table", "--d-model", "6", "--position-list", "1,,2"},
      {"table", "--d-model", "6", "--position-list", "1,x"},
      {"table", "--d-model", "6", "--positions", "-1"},
      {"table", "--d-model", "6", "--base", "ten"},
      {"table", "--d-model", "6", "--format", "npy", "--decimals", "3", "-o", f},
      {"table", "--d-model", "6", "--decimals", "99"},
      {"table", "--d-model", "6", "--flip-sin-to-cos=yes"},
      {"table", "--d-model", "6", "--isa", "sse2"},
      {"table", "--d-model", "6", "--dtype", "f64"},
      {"table", "--d-model", "6", "--format", "json"},
      {"table", "--d-model", "1000000", "--positions", "2000000"},
      {"rope"},
      {"rope", "--preset", "llama9"},
      {"rope", "--preset", "llama2", "--rope-type", "yarn"},
      {"rope", "--preset", "llama2", "--base", "5e5"},
      {"rope", "--preset", "llama3.1", "--factor", "8"},
      {"rope", "--preset", "llama3.1", "--seq-len", "8"},
      {"rope", "--preset", "gpt-j-6b", "--rotary-dim", "32"},
      {"rope", "--rotary-dim", "64", "--factor", "2"},
      {"rope", "--rotary-dim", "64", "--rope-type", "linear", "--beta-fast", "3"},
      {"rope", "--rotary-dim", "64", "--rope-type", "llama3", "--short-factor", "1"},
      {"rope", "--rotary-dim", "8", "--rope-type", "longrope", "--factor", "2", "--original", "16", "--short-factor",
       "1,2", "--long-factor", "1,2,3,4"},
      {"rope", "--rotary-dim", "64", "--cache-layout", "nhwc"},
      {"rope", "--rotary-dim", "64", "--rope-type", "yarn", "--truncate", "2"},
      {"rope", "--rotary-dim", "64", "--pairs", "diagonal"},
      {"rope", "--preset", "qwen2-vl", "--sections", "16,24,24"},
      {"rope", "--preset", "pixtral", "--rotary-dim", "64"},
      {"rope", "--rotary-dim", "64", "--sections-layout", "vision"},
      {"rope", "--rotary-dim", "64", "--sections", "1,2,3,4,5"},
      {"rope", "--rotary-dim", "64", "--sections", "8,x"},
      {"rope", "--rotary-dim", "64", "--sections", "8,pad"},
      {"rope", "--rotary-dim", "64", "--sections", "8,8", "--sections-layout", "diagonal"},
      {"rope", "--preset", "qwen2-vl", "--axis-positions", "1,2/3,4"},
      {"rope", "--preset", "qwen2-vl", "--axis-positions", "1,2/3,4/5"},
      {"rope", "--preset", "qwen2-vl", "--axis-positions", "1,2/3,4/5,6/7,8/9,10"},
      {"rope", "--preset", "qwen2-vl", "--axis-positions", "1,x/3,4/5,6"},
      {"rope", "--preset", "qwen2-vl", "--axis-positions", "1/2/3", "--first", "3"},
      {"rope", "--preset", "qwen2-vl", "--axis-positions", "1/2/3", "--positions", "1"},
      {"rope", "--preset", "qwen2-vl", "--position-list", "3", "--axis-positions", "1/2/3"},
      {"rope", "--preset", "llama2", "--axis-positions", "1,2/3,4"},
      {"rope", "--rotary-dim", "64", "--sections", "16,16", "--axis-positions", "1/2/3"},
      {"info", "--verbose"},
      {"info", "--json=1"},
      {"check", "--fast"},
      {"check", "--quiet=yes"},
  };
  for (const auto &args : bad) {
    const Result r = posenc_run(args);
    INFO(describe(args) << "\nstdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("posenc", 0) == 0);
    CHECK(r.err.find("Try 'posenc") != std::string::npos);
    CHECK(lines(r.err).size() == 2);
  }
  CHECK(access(f.c_str(), F_OK) != 0);  // nothing written
  // binary formats are not written to a terminal; text is
  for (const char *format : {"npy", "raw"}) {
    const Result r = run(tool(), {"table", "--d-model", "6", "--format", format}, {}, true);
    INFO(format << ": " << r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find("terminal") != std::string::npos);
  }
  CHECK(run(tool(), {"table", "--d-model", "6"}, {}, true).status == 0);
  CHECK(run(tool(), {"table", "--d-model", "6", "--format", "raw", "-o", scratch().path("t.raw")}, {}, true).status ==
        0);
}

TEST_CASE("tools: library refusals exit 1 with posenc_status_string", "[tools]") {
  struct Case {
    std::vector<std::string> args, env;
    posenc_status status;
  };
  const std::vector<Case> cases = {
      {{"table", "--d-model", "0"}, {}, POSENC_ERR_INVALID},
      {{"table", "--d-model", "6", "--base", "-1"}, {}, POSENC_ERR_INVALID},
      {{"table", "--d-model", "6", "--base", "nan"}, {}, POSENC_ERR_INVALID},
      {{"table", "--d-model", "6", "--denominator", "-2"}, {}, POSENC_ERR_INVALID},
      {{"table", "--d-model", "1", "--preset", "fairseq"}, {}, POSENC_ERR_INVALID},  // D = h - 1 = -1
      {{"table", "--d-model", "6", "--position-list", "0,2147483648"}, {}, POSENC_ERR_OUT_OF_RANGE},
      {{"table", "--d-model", "6", "--first", "2147483645"}, {}, POSENC_ERR_OUT_OF_RANGE},
      {{"table", "--d-model", "6"}, {"POSENC_ISA=bogus"}, POSENC_ERR_UNSUPPORTED},
      {{"rope", "--rotary-dim", "7"}, {}, POSENC_ERR_INVALID},
      {{"rope", "--rotary-dim", "64", "--rope-type", "yarn"}, {}, POSENC_ERR_INVALID},
      {{"rope", "--rotary-dim", "64", "--attention-scale", "0"}, {}, POSENC_ERR_INVALID},
      {{"rope", "--preset", "llama2", "--position-list", "-2147483648"}, {}, POSENC_ERR_OUT_OF_RANGE},
      {{"rope", "--preset", "llama2", "--dtype", "bf16", "--position-list", "2147483648"}, {}, POSENC_ERR_OUT_OF_RANGE},
      {{"rope", "--preset", "llama2"}, {"POSENC_ISA=neon" /* x86 */}, POSENC_ERR_UNSUPPORTED},
      {{"rope", "--rotary-dim", "64", "--sections", "16,-1,16"}, {}, POSENC_ERR_INVALID},
      {{"rope", "--rotary-dim", "64", "--sections", "16,16,1"}, {}, POSENC_ERR_INVALID},  // past r/2
      {{"rope", "--rotary-dim", "64", "--sections", "0,0"}, {}, POSENC_ERR_INVALID},
      {{"rope", "--preset", "qwen2-vl", "--axis-positions", "1/pad/3"}, {}, POSENC_ERR_OUT_OF_RANGE},
      {{"rope", "--preset", "pixtral", "--axis-positions", "1,2/3,2147483648"}, {}, POSENC_ERR_OUT_OF_RANGE},
      {{"rope", "--preset", "glm-4v", "--dtype", "f16", "--axis-positions", "pad/2147483648/0"},
       {},
       POSENC_ERR_OUT_OF_RANGE},
  };
  for (const Case &c : cases) {
    if (!c.env.empty() && c.env[0] == "POSENC_ISA=neon" && posenc_isa_available(POSENC_ISA_NEON)) continue;
    const Result r = posenc_run(c.args, c.env);
    INFO(describe(c.args) << "\nstderr: " << r.err);
    CHECK(r.status == 1);
    CHECK(r.out.empty());
    const std::string hint = c.env.empty() ? "" : " (" + c.env[0] + "; posenc info says why)";
    CHECK(r.err == "posenc " + c.args[0] + ": " + posenc_status_string(c.status) + hint + "\n");
  }
  // a path this machine lacks, asked for by --isa: the library's refusal of posenc_force_isa
  for (posenc_isa isa : kAllIsas) {
    if (posenc_isa_available(isa)) continue;
    const Result r = posenc_run({"table", "--d-model", "6", "--isa", posenc_isa_name(isa)});
    INFO(posenc_isa_name(isa));
    CHECK(r.status == 1);
    CHECK(r.err == std::string("posenc table: ") + posenc_status_string(POSENC_ERR_UNSUPPORTED) + "\n");
  }
  // a file that cannot be written
  const Result r = posenc_run({"table", "--d-model", "6", "-o", scratch().path("no/such/dir.txt")});
  CHECK(r.status == 1);
  CHECK(r.err.find("No such file or directory") != std::string::npos);
}

// ---- posenc table ----------------------------------------------------------------------------------

TEST_CASE("tools: table prints the seeds' d = 6 table", "[tools][seeds]") {
  // the rows of the seeds' NumPy code (tests/test_seeds.cpp)
  const std::vector<std::string> rows =
      lines(ok_out({"table", "--d-model", "6", "--positions", "10", "--decimals", "4"}));
  REQUIRE(rows.size() == 10);
  CHECK(rows[0] == "0.0000 1.0000 0.0000 1.0000 0.0000 1.0000");
  CHECK(rows[1] == "0.8415 0.5403 0.0464 0.9989 0.0022 1.0000");
  CHECK(rows[9] == "0.4121 -0.9111 0.4057 0.9140 0.0194 0.9998");
  // the default: 10 rows from 0, each value with the digits that give its bits back
  const std::vector<std::string> exact = lines(ok_out({"table", "--d-model", "6"}));
  REQUIRE(exact.size() == 10);
  const std::vector<float> t = lib_f32(posenc::spec(6), 0, 10);
  std::string row1;
  for (int e = 0; e < 6; ++e) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.9g", e ? " " : "", double(t[size_t(6 + e)]));
    row1 += buf;
  }
  CHECK(exact[1] == row1);
  CHECK(exact[1].rfind("0.841470957 0.540302277 0.04639922", 0) == 0);
}

TEST_CASE("tools: table reproduces the golden digests on every path", "[tools][golden]") {
  // tests/test_golden.cpp: SHA-256 of MPFR's correctly rounded tables
  struct Golden {
    std::vector<std::string> args;
    const char *sha256;
  };
  const std::vector<Golden> goldens = {
      {{"--d-model", "64", "--positions", "64"}, "84f6dfc6b5108aea633cb0fc00c93e4a6d15e97f7e8ae29210a3dc02d2843dde"},
      {{"--d-model", "33", "--layout", "sin-cos-halves", "--base", "1e6", "--first", "-100", "--positions", "32"},
       "561a90058300ea1a1aaaad546bd5b338836caa9ac284824ae6ac86f79ed8486e"},
      {{"--d-model", "130", "--layout", "cos-sin-halves", "--denominator", "64", "--position-list",
        "0,1,1000000,2147483647,-12345,pad,7"},
       "9183432ea0a12e4b5dcbbb66d62e8e2c68ed0d847a0494e9ab05f7f5544116dd"},
      {{"--d-model", "48", "--base", "2", "--denominator", "0.5", "--scale", "0x1p100", "--first", "2147483608",
        "--positions", "39"},
       "61bc310d0943be9746c6420a2ba4f8af431a926f4cb1576dbdebcb2fe3914c82"},
  };
  for (const std::string &isa : available_paths())
    for (const Golden &g : goldens) {
      std::vector<std::string> args = {"table", "--format", "raw", "--isa", isa};
      args.insert(args.end(), g.args.begin(), g.args.end());
      INFO(describe(args));
      CHECK(sha256(ok_out(args)) == g.sha256);
    }
}

TEST_CASE("tools: table formats and dtypes are the library's values", "[tools]") {
  const posenc::spec s = posenc::spec(13).with_layout(posenc::layout::sin_cos_halves).with_base(500.0);
  const std::vector<int64_t> list = {0, 7, POSENC_PAD, -3, 2147483647};
  const std::vector<std::string> spec_args = {"table",          "--d-model", "13", "--layout",
                                              "sin-cos-halves", "--base",    "500"};
  for (bool use_list : {false, true}) {
    const std::vector<float> f = lib_f32(s, -4, 6, use_list ? list : std::vector<int64_t>{});
    const int64_t rows = use_list ? int64_t(list.size()) : 6;
    std::vector<std::string> base = spec_args;
    if (use_list)
      base.insert(base.end(), {"--position-list", "0,7,pad,-3,2147483647"});
    else
      base.insert(base.end(), {"--first", "-4", "--positions", "6"});
    std::vector<uint16_t> bf(f.size()), hf(f.size());
    {
      posenc::rows_view<uint16_t> vb(bf.data(), rows, 13), vh(hf.data(), rows, 13);
      if (use_list)
        posenc::rows_bf16(s, list, vb), posenc::rows_f16(s, list, vh);
      else
        posenc::table_bf16(s, -4, vb), posenc::table_f16(s, -4, vh);
    }
    for (size_t i = 0; i < f.size(); ++i) {  // the library's 16-bit tables round its float32 values
      REQUIRE(bf[i] == ref::narrow_bf16(f[i]));
      REQUIRE(hf[i] == ref::narrow_f16(f[i]));
    }
    const std::map<std::string, std::string> want_raw = {
        {"f32", to_bytes(f)}, {"bf16", to_bytes(bf)}, {"f16", to_bytes(hf)}};
    const std::map<std::string, std::string> descr = {{"f32", "<f4"}, {"bf16", "<u2"}, {"f16", "<f2"}};
    for (const auto &[dtype, raw] : want_raw) {
      auto args = [&](std::vector<std::string> more) {
        std::vector<std::string> a = base;
        a.insert(a.end(), {"--dtype", dtype});
        a.insert(a.end(), more.begin(), more.end());
        return a;
      };
      INFO("dtype " << dtype << (use_list ? ", a list" : ", a run"));
      CHECK(ok_out(args({"--format", "raw"})) == raw);
      const Npy n = parse_npy(ok_out(args({"--format", "npy"})));
      CHECK(n.descr == descr.at(dtype));
      CHECK(n.rows == rows);
      CHECK(n.cols == 13);
      CHECK(n.data == raw);
      // --output: the same bytes in the file, nothing on stdout
      const std::string file = scratch().path("t.npy");
      CHECK(ok_out(args({"--format", "npy", "--output", file})).empty());
      CHECK(parse_npy(slurp(file)).data == raw);
      // text and CSV: values that give the bits back
      auto bits_of = [&](const std::string &text) -> std::string {
        const double v = std::strtod(text.c_str(), nullptr);
        if (dtype == "f32") return to_bytes(std::vector<float>{float(v)});
        return to_bytes(
            std::vector<uint16_t>{dtype == "bf16" ? ref::narrow_bf16_from_double(v) : ref::narrow_f16_from_double(v)});
      };
      const std::vector<std::string> text = lines(ok_out(args({})));
      const std::vector<std::string> csv = lines(ok_out(args({"--format", "csv"})));
      REQUIRE(text.size() == size_t(rows));
      REQUIRE(csv.size() == size_t(rows) + 1);
      CHECK(csv[0] == "position,sin0,sin1,sin2,sin3,sin4,sin5,cos0,cos1,cos2,cos3,cos4,cos5,zero");
      std::string from_text, from_csv;
      for (int64_t r = 0; r < rows; ++r) {
        const std::vector<std::string> t = fields(text[size_t(r)], ' '), c = fields(csv[size_t(r + 1)], ',');
        REQUIRE(t.size() == 13);
        REQUIRE(c.size() == 14);
        const int64_t p = use_list ? list[size_t(r)] : -4 + r;
        CHECK(c[0] == (p == POSENC_PAD ? "pad" : std::to_string(p)));
        for (int e = 0; e < 13; ++e) {
          from_text += bits_of(t[size_t(e)]);
          from_csv += bits_of(c[size_t(e + 1)]);
          CHECK(t[size_t(e)] == c[size_t(e + 1)]);
        }
      }
      CHECK(from_text == raw);
      CHECK(from_csv == raw);
      // --decimals K: fixed notation of the same values
      const std::vector<std::string> fixed = lines(ok_out(args({"--decimals", "7"})));
      for (int64_t r = 0; r < rows; ++r)
        for (int e = 0; e < 13; ++e) {
          const size_t i = size_t(r * 13 + e);
          const float v = dtype == "f32" ? f[i] : dtype == "bf16" ? ref::widen_bf16(bf[i]) : ref::widen_f16(hf[i]);
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.7f", double(v));
          CHECK(fields(fixed[size_t(r)], ' ')[size_t(e)] == buf);
        }
    }
  }
  // interleaved and cos|sin names
  CHECK(lines(ok_out({"table", "--d-model", "4", "--positions", "1", "--format", "csv"}))[0] ==
        "position,sin0,cos0,sin1,cos1");
  CHECK(lines(ok_out({"table", "--d-model", "5", "--positions", "1", "--format", "csv", "--preset", "ggml"}))[0] ==
        "position,cos0,cos1,sin0,sin1,zero");
  // --name=value is --name value
  CHECK(ok_out({"table", "--d-model=6", "--positions=3", "--format=csv", "--first=-1"}) ==
        ok_out({"table", "--d-model", "6", "--positions", "3", "--format", "csv", "--first", "-1"}));
  // many values: the default digits give every bf16 and f16 value back
  for (const std::string dtype : {"bf16", "f16"}) {
    const posenc::spec big(256);
    const std::vector<float> f = lib_f32(big, 1000, 64);
    const std::vector<std::string> t =
        lines(ok_out({"table", "--d-model", "256", "--first", "1000", "--positions", "64", "--dtype", dtype}));
    REQUIRE(t.size() == 64);
    int wrong = 0;
    for (size_t r = 0; r < 64; ++r) {
      const std::vector<std::string> v = fields(t[r], ' ');
      REQUIRE(v.size() == 256);
      for (size_t e = 0; e < 256; ++e) {
        const double x = std::strtod(v[e].c_str(), nullptr);
        const float want = f[r * 256 + e];
        wrong += dtype == "bf16" ? ref::narrow_bf16_from_double(x) != ref::narrow_bf16(want)
                                 : ref::narrow_f16_from_double(x) != ref::narrow_f16(want);
      }
    }
    INFO(dtype);
    CHECK(wrong == 0);
  }
  // zero rows: an empty table is no output
  CHECK(ok_out({"table", "--d-model", "6", "--positions", "0"}).empty());
}

TEST_CASE("tools: table presets are posenc::spec's conventions with their first positions", "[tools][conventions]") {
  struct Case {
    std::vector<std::string> args;
    posenc::spec spec;
    int64_t first;
  };
  const std::vector<Case> cases = {
      {{"--preset", "vaswani", "--d-model", "64"}, posenc::spec::vaswani(64), 0},
      {{"--d-model", "64"}, posenc::spec::vaswani(64), 0},
      {{"--preset", "marian", "--d-model", "64"}, posenc::spec::marian(64), 0},
      {{"--preset", "fairseq", "--d-model", "17"}, posenc::spec::fairseq(17), 2},  // padding_idx 1
      {{"--preset", "fairseq", "--d-model", "512", "--padding-idx", "0"}, posenc::spec::fairseq(512), 1},
      {{"--preset", "fairseq", "--d-model", "512", "--first", "40"}, posenc::spec::fairseq(512), 40},
      {{"--preset", "t2t", "--d-model", "33"}, posenc::spec::tensor2tensor(33), 0},
      {{"--preset", "tensor2tensor", "--d-model", "128", "--min-timescale", "0.5", "--max-timescale", "1e3", "--first",
        "5"},
       posenc::spec::tensor2tensor(128, 0.5, 1.0e3),
       5},
      {{"--preset", "ctranslate2", "--d-model", "8"}, posenc::spec::ctranslate2(8), 1},
      {{"--preset", "opennmt", "--d-model", "1024"}, posenc::spec::ctranslate2(1024), 1},
      {{"--preset", "ggml", "--d-model", "320"}, posenc::spec::ggml_timestep(320), 0},
      {{"--preset", "ggml", "--d-model", "33", "--max-period", "500"}, posenc::spec::ggml_timestep(33, 500.0), 0},
      {{"--preset", "diffusers", "--d-model", "320"}, posenc::spec::diffusers(320), 0},
      {{"--preset", "diffusers", "--d-model", "320", "--flip-sin-to-cos", "--downscale-freq-shift", "0", "--scale",
        "1000", "--max-period", "5000"},
       posenc::spec::diffusers(320, true, 0.0, 1000.0, 5000.0),
       0},
      {{"--preset", "dit", "--d-model", "256"}, posenc::spec::dit(256), 0},
      {{"--preset", "dit", "--d-model", "33", "--max-period", "500"}, posenc::spec::dit(33, 500.0), 0},
      {{"--preset", "flux", "--d-model", "256"}, posenc::spec::flux(256), 0},
      {{"--preset", "flux", "--d-model", "64", "--max-period", "2000", "--time-factor", "1"},
       posenc::spec::flux(64, 2000.0, 1.0),
       0},
      {{"--preset", "whisper", "--d-model", "384"}, posenc::spec::whisper(384), 0},
      {{"--preset", "whisper", "--d-model", "512", "--max-timescale", "5e3"}, posenc::spec::whisper(512, 5e3), 0},
      // the spec options override a preset
      {{"--preset", "fairseq", "--d-model", "64", "--layout", "interleaved", "--base", "500", "--denominator", "7",
        "--scale", "0.25"},
       posenc::spec::fairseq(64)
           .with_layout(posenc::layout::interleaved)
           .with_base(500.0)
           .with_freq_denominator(7.0)
           .with_position_scale(0.25),
       2},
  };
  for (const Case &c : cases) {
    std::vector<std::string> args = {"table", "--format", "raw", "--positions", "50"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    INFO(describe(args));
    CHECK(ok_out(args) == to_bytes(lib_f32(c.spec, c.first, 50)));
    std::vector<std::string> show = {"table", "--show-spec"};
    show.insert(show.end(), c.args.begin(), c.args.end());
    char want[512];
    static const char *const layouts[] = {"interleaved", "sin-cos-halves", "cos-sin-halves"};
    std::snprintf(want, sizeof want,
                  "d_model %lld\nlayout %s\nbase %.17g\nfreq_denominator %.17g\nposition_scale %.17g\nfirst %lld\n"
                  "positions 10\n",
                  (long long)c.spec.d_model(), layouts[int(c.spec.layout())], c.spec.base(), c.spec.freq_denominator(),
                  c.spec.position_scale(), (long long)c.first);
    CHECK(ok_out(show) == want);
  }
}

// ---- posenc table --timesteps ----------------------------------------------------------------------

namespace {

// A .npy file of format 1.0 with this dtype, shape and data, as NumPy writes it.
std::string npy_file(const std::string &descr, const std::string &shape, const std::string &data) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string f = std::string("\x93NUMPY\x01\x00", 8);
  f += char(dict.size() & 0xff);
  f += char(dict.size() >> 8);
  return f + dict + data;
}

std::string write_file(const std::string &name, const std::string &bytes) {
  const std::string path = scratch().path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// The library's rows at these timesteps, in each dtype.
std::vector<float> lib_times_f32(const posenc::spec &s, const std::vector<double> &t) {
  std::vector<float> o(t.size() * size_t(s.d_model()));
  posenc::timesteps_f32(s, t, posenc::rows_view<float>(o.data(), int64_t(t.size()), s.d_model()));
  return o;
}
std::vector<uint16_t> lib_times_16(const posenc::spec &s, const std::vector<double> &t, bool bf16) {
  std::vector<uint16_t> o(t.size() * size_t(s.d_model()));
  posenc::rows_view<uint16_t> v(o.data(), int64_t(t.size()), s.d_model());
  if (bf16)
    posenc::timesteps_bf16(s, t, v);
  else
    posenc::timesteps_f16(s, t, v);
  return o;
}

}  // namespace

TEST_CASE("tools: table --timesteps gives the library's timestep rows for every preset", "[tools][timesteps]") {
  // diffusion's integer and half steps, flow matching's [0, 1) times 1000, a fraction past 1e6, negatives, a
  // hexadecimal float, and the edges of |t| < 2^31
  const std::string list = "999,999.5,0.25,0x1.8p-3,261.1875,1000000.5,-3.75,0,2147483647.5,-2147483647.75,1e-300";
  const std::vector<double> t = {999.0, 999.5, 0.25,         0x1.8p-3,       261.1875, 1000000.5,
                                 -3.75, 0.0,   2147483647.5, -2147483647.75, 1e-300};
  struct Case {
    std::vector<std::string> args;
    posenc::spec spec;
  };
  const std::vector<Case> cases = {
      {{"--preset", "diffusers", "--d-model", "320", "--flip-sin-to-cos", "--downscale-freq-shift", "0"},
       posenc::spec::diffusers(320, true, 0.0)},
      {{"--preset", "diffusers", "--d-model", "33", "--scale", "2", "--max-period", "500"},
       posenc::spec::diffusers(33, false, 1.0, 2.0, 500.0)},
      {{"--preset", "dit", "--d-model", "256"}, posenc::spec::dit(256)},
      {{"--preset", "flux", "--d-model", "256"}, posenc::spec::flux(256)},
      {{"--preset", "flux", "--d-model", "64", "--time-factor", "3", "--max-period", "2000"},
       posenc::spec::flux(64, 2000.0, 3.0)},
      {{"--preset", "ggml", "--d-model", "1281"}, posenc::spec::ggml_timestep(1281)},
      {{"--preset", "whisper", "--d-model", "384", "--max-timescale", "3e4"}, posenc::spec::whisper(384, 3e4)},
      {{"--d-model", "13", "--layout", "sin-cos-halves", "--base", "500", "--scale", "0.75"},
       posenc::spec(13).with_layout(posenc::layout::sin_cos_halves).with_base(500.0).with_position_scale(0.75)},
  };
  for (const Case &c : cases) {
    std::vector<std::string> base = {"table", "--timesteps", list};
    base.insert(base.end(), c.args.begin(), c.args.end());
    auto args = [&](std::vector<std::string> more) {
      std::vector<std::string> a = base;
      a.insert(a.end(), more.begin(), more.end());
      return a;
    };
    INFO(describe(base));
    const std::vector<float> f = lib_times_f32(c.spec, t);
    const std::vector<uint16_t> bf = lib_times_16(c.spec, t, true), hf = lib_times_16(c.spec, t, false);
    CHECK(ok_out(args({"--format", "raw"})) == to_bytes(f));
    CHECK(ok_out(args({"--format", "raw", "--dtype", "bf16"})) == to_bytes(bf));
    CHECK(ok_out(args({"--format", "raw", "--dtype", "f16"})) == to_bytes(hf));
    const Npy n = parse_npy(ok_out(args({"--format", "npy", "--dtype", "f16"})));
    CHECK((n.descr == "<f2" && n.rows == int64_t(t.size()) && n.cols == c.spec.d_model() && n.data == to_bytes(hf)));
    // text: the values that give the bits back; CSV: the same, each row after its timestep
    const std::vector<std::string> text = lines(ok_out(args({})));
    const std::vector<std::string> csv = lines(ok_out(args({"--format", "csv"})));
    REQUIRE(text.size() == t.size());
    REQUIRE(csv.size() == t.size() + 1);
    CHECK(csv[0].rfind("timestep,", 0) == 0);
    CHECK(fields(csv[0], ',').size() == size_t(c.spec.d_model()) + 1);
    std::string from_text, from_csv;
    for (size_t r = 0; r < t.size(); ++r) {
      const std::vector<std::string> tv = fields(text[r], ' '), cv = fields(csv[r + 1], ',');
      REQUIRE(tv.size() == size_t(c.spec.d_model()));
      REQUIRE(cv.size() == size_t(c.spec.d_model()) + 1);
      CHECK(std::strtod(cv[0].c_str(), nullptr) == t[r]);  // the timestep label reads back exactly
      for (size_t e = 0; e < tv.size(); ++e) {
        from_text += to_bytes(std::vector<float>{std::strtof(tv[e].c_str(), nullptr)});
        from_csv += to_bytes(std::vector<float>{std::strtof(cv[e + 1].c_str(), nullptr)});
      }
    }
    CHECK(from_text == to_bytes(f));
    CHECK(from_csv == to_bytes(f));
  }
  // the labels: the shortest digits that read back
  const std::vector<std::string> csv =
      lines(ok_out({"table", "--d-model", "4", "--timesteps", "0.1,999.5,1e-300,-0", "--format", "csv"}));
  REQUIRE(csv.size() == 5);
  CHECK(csv[0] == "timestep,sin0,cos0,sin1,cos1");
  CHECK(fields(csv[1], ',')[0] == "0.1");
  CHECK(fields(csv[2], ',')[0] == "999.5");
  CHECK(fields(csv[3], ',')[0] == "1e-300");
  CHECK(fields(csv[4], ',')[0] == "-0");
  // integer-valued timesteps: the integer positions' bytes; --show-spec counts the timesteps
  CHECK(ok_out({"table", "--preset", "dit", "--d-model", "96", "--timesteps", "0,999,-5,2147483647", "--format",
                "raw"}) == ok_out({"table", "--preset", "dit", "--d-model", "96", "--position-list",
                                   "0,999,-5,2147483647", "--format", "raw"}));
  CHECK(
      lines(ok_out({"table", "--preset", "flux", "--d-model", "8", "--timesteps", "0.5,0.25", "--show-spec"})).back() ==
      "timesteps list of 2");
}

TEST_CASE("tools: table --timesteps-file reads text and .npy files", "[tools][timesteps]") {
  const posenc::spec s = posenc::spec::diffusers(320, true, 0.0);
  const std::vector<std::string> args = {
      "table", "--preset", "diffusers", "--d-model", "320", "--flip-sin-to-cos", "--downscale-freq-shift",
      "0",     "--format", "raw"};
  auto with_file = [&](const std::string &path) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--timesteps-file", path});
    return a;
  };
  const std::vector<double> t = {999.0, 999.5, 0.25, -1e6 - 0.5, 1e-3, 0.0};
  const std::string want = to_bytes(lib_times_f32(s, t));
  // text: one number per line; spaces, tabs, CR and blank lines around them do not count
  CHECK(ok_out(with_file(write_file("t.txt", "999\n999.5\n 0.25\t\r\n\n-1000000.5\n0.001\n0"))) == want);
  CHECK(ok_out(with_file(write_file("t_crlf.txt", "\n999\r\n0x1.f3cp9\r\n0.25\r\n-1000000.5\r\n1e-3\r\n0\r\n\n"))) ==
        want);
  // .npy float64, whatever the file is called; float32 / int64 / int32 arrays converted exactly
  std::string f64;
  for (double v : t) f64 += to_bytes(std::vector<double>{v});
  CHECK(ok_out(with_file(write_file("t.npy", npy_file("<f8", "(6,)", f64)))) == want);
  CHECK(ok_out(with_file(write_file("t.bin", npy_file("<f8", "(6,)", f64)))) == want);
  const std::vector<float> t32 = {999.0f, 999.5f, 0.25f, 0.1f};
  CHECK(ok_out(with_file(write_file("t32.npy", npy_file("<f4", "(4,)", to_bytes(t32))))) ==
        to_bytes(lib_times_f32(s, {999.0, 999.5, 0.25, double(0.1f)})));
  const std::vector<int64_t> i64 = {0, 999, -7, 2147483647};
  const std::vector<int32_t> i32 = {0, 999, -7, 2147483647};
  const std::string ints = to_bytes(lib_times_f32(s, {0.0, 999.0, -7.0, 2147483647.0}));
  CHECK(ok_out(with_file(write_file("i64.npy", npy_file("<i8", "(4,)", to_bytes(i64))))) == ints);
  CHECK(ok_out(with_file(write_file("i32.npy", npy_file("<i4", "(4,)", to_bytes(i32))))) == ints);
  // empty: no rows, no output (standard input is /dev/null here)
  CHECK(ok_out(with_file(write_file("empty.npy", npy_file("<f8", "(0,)", "")))).empty());
  CHECK(ok_out(with_file(write_file("empty.txt", "\n\n"))).empty());
  CHECK(ok_out(with_file("-")).empty());
  // a file that cannot be read: exit 1, the reason
  const Result r = posenc_run(with_file(scratch().path("no/such/timesteps.txt")));
  CHECK(r.status == 1);
  CHECK(r.out.empty());
  CHECK(r.err.find("No such file or directory") != std::string::npos);
}

TEST_CASE("tools: table --timesteps usage errors and library refusals", "[tools][timesteps]") {
  const std::string f64 = to_bytes(std::vector<double>{0.5, 1.5});
  const std::vector<std::vector<std::string>> bad = {
      {"table", "--d-model", "6", "--timesteps", "0.5,x"},
      {"table", "--d-model", "6", "--timesteps", ""},
      {"table", "--d-model", "6", "--timesteps", "0.5,,1"},
      {"table", "--d-model", "6", "--timesteps", "1e400"},
      {"table", "--d-model", "6", "--timesteps", "pad"},
      {"table", "--d-model", "6", "--timesteps"},
      {"table", "--d-model", "6", "--timesteps", "1", "--first", "3"},
      {"table", "--d-model", "6", "--timesteps", "1", "--positions", "3"},
      {"table", "--d-model", "6", "--timesteps", "1", "--position-list", "3"},
      {"table", "--d-model", "6", "--preset", "fairseq", "--padding-idx", "0", "--timesteps", "1"},
      {"table", "--d-model", "6", "--timesteps", "1", "--timesteps-file", write_file("ok.txt", "1\n")},
      {"table", "--d-model", "6", "--timesteps-file", write_file("ok2.txt", "1\n"), "--first", "2"},
      {"table", "--d-model", "6", "--timesteps-file", write_file("bad.txt", "0.5\n1,2\n")},
      {"table", "--d-model", "6", "--timesteps-file", write_file("bad2.txt", "0.5\nnope\n")},
      {"table", "--d-model", "6", "--timesteps-file", write_file("i2.npy", npy_file("<i2", "(2,)", "abcd"))},
      {"table", "--d-model", "6", "--timesteps-file", write_file("be.npy", npy_file(">f8", "(2,)", f64))},
      {"table", "--d-model", "6", "--timesteps-file", write_file("2d.npy", npy_file("<f8", "(2, 1)", f64))},
      {"table", "--d-model", "6", "--timesteps-file", write_file("0d.npy", npy_file("<f8", "()", f64.substr(8)))},
      {"table", "--d-model", "6", "--timesteps-file", write_file("short.npy", npy_file("<f8", "(3,)", f64))},
      {"table", "--d-model", "6", "--timesteps-file", write_file("long.npy", npy_file("<f8", "(1,)", f64))},
      {"table", "--d-model", "6", "--timesteps-file",
       write_file("cut.npy", npy_file("<f8", "(2,)", f64).substr(0, 40))},
      {"table", "--d-model", "6", "--time-factor", "2"},
      {"table", "--d-model", "6", "--preset", "dit", "--time-factor", "2"},
      {"table", "--d-model", "6", "--preset", "ggml", "--max-timescale", "5"},
      {"table", "--d-model", "6", "--preset", "whisper", "--min-timescale", "1"},
      {"table", "--d-model", "6", "--preset", "whisper", "--max-period", "100"},
      {"table", "--d-model", "6", "--preset", "flux", "--flip-sin-to-cos"},
      {"table", "--d-model", "6", "--preset", "sd"},
  };
  for (const auto &args : bad) {
    const Result r = posenc_run(args);
    INFO(describe(args) << "\nstdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("posenc table: ", 0) == 0);
    CHECK(r.err.find("Try 'posenc table --help'") != std::string::npos);
    CHECK(lines(r.err).size() == 2);
  }
  // the message names the file and the line of a bad value
  CHECK(posenc_run(bad[13]).err.find("bad2.txt line 2: 'nope' is not a number") != std::string::npos);
  // what the library refuses: exit 1 with its status
  struct Case {
    std::vector<std::string> args;
    posenc_status status;
  };
  const std::vector<Case> refused = {
      {{"table", "--d-model", "6", "--timesteps", "0.5,nan"}, POSENC_ERR_OUT_OF_RANGE},
      {{"table", "--d-model", "6", "--timesteps", "inf"}, POSENC_ERR_OUT_OF_RANGE},
      {{"table", "--d-model", "6", "--timesteps", "-inf,1", "--dtype", "bf16"}, POSENC_ERR_OUT_OF_RANGE},
      {{"table", "--d-model", "6", "--timesteps", "2147483648"}, POSENC_ERR_OUT_OF_RANGE},
      {{"table", "--d-model", "6", "--timesteps", "0,-2147483648", "--dtype", "f16"}, POSENC_ERR_OUT_OF_RANGE},
      {{"table", "--d-model", "6", "--timesteps-file",
        write_file("far.npy", npy_file("<i8", "(1,)", to_bytes(std::vector<int64_t>{int64_t(1) << 40})))},
       POSENC_ERR_OUT_OF_RANGE},
      // a frequency of 2^52: the integer table takes it, timesteps do not
      {{"table", "--d-model", "6", "--preset", "flux", "--time-factor", "0x1p52", "--timesteps", "0.5"},
       POSENC_ERR_INVALID},
      {{"table", "--d-model", "6", "--preset", "dit", "--max-period", "-1", "--timesteps", "0.5"}, POSENC_ERR_INVALID},
  };
  for (const Case &c : refused) {
    const Result r = posenc_run(c.args);
    INFO(describe(c.args) << "\nstderr: " << r.err);
    CHECK(r.status == 1);
    CHECK(r.out.empty());
    CHECK(r.err == std::string("posenc table: ") + posenc_status_string(c.status) + "\n");
  }
  CHECK(posenc_run({"table", "--d-model", "6", "--preset", "flux", "--time-factor", "0x1p52"}).status == 0);
}

// ---- posenc rope -----------------------------------------------------------------------------------

namespace {

// The library's vLLM-layout cache of a scheme.
std::vector<float> lib_cache(const posenc::rope &r, int64_t first, int64_t n, const std::vector<int64_t> &list = {}) {
  const int64_t rows = list.empty() ? n : int64_t(list.size());
  std::vector<float> t(size_t(rows * r.rotary_dim()));
  r.cache(list.empty() ? posenc::positions(first) : posenc::positions(list),
          posenc::rows_view<float>(t.data(), rows, r.rotary_dim()));
  return t;
}

}  // namespace

TEST_CASE("tools: rope presets are posenc::rope's, at any positions", "[tools][rope]") {
  const std::vector<std::pair<std::string, posenc::rope>> presets = {
      {"llama2", posenc::rope::llama2()},
      {"llama3.1", posenc::rope::llama3_1()},
      {"mistral-7b-v0.2", posenc::rope::mistral_7b_v02()},
      {"qwen2", posenc::rope::qwen2()},
      {"qwen2-yarn", posenc::rope::qwen2(128, true)},
      {"deepseek-v2", posenc::rope::deepseek_v2()},
      {"deepseek-v3", posenc::rope::deepseek_v3()},
      {"gpt-neox-20b", posenc::rope::gpt_neox_20b()},
      {"gpt-j-6b", posenc::rope::gpt_j_6b()},
      {"minimax-m3", posenc::rope::minimax_m3()},
      {"deepseek-v4", posenc::rope::deepseek_v4()},
      {"deepseek-v4-compress", posenc::rope::deepseek_v4_compress()},
      {"glm5", posenc::rope::glm5()},
      {"glm5-indexer", posenc::rope::glm5_indexer()},
  };
  const std::vector<int64_t> list = {0, 4095, POSENC_PAD, 131072, 2147483647, -5};
  for (const auto &[name, r] : presets) {
    INFO(name);
    CHECK(ok_out({"rope", "--preset", name, "--format", "raw"}) == to_bytes(lib_cache(r, 0, 10)));
    CHECK(ok_out({"rope", "--preset", name, "--format", "raw", "--position-list", "0,4095,pad,131072,2147483647,-5"}) ==
          to_bytes(lib_cache(r, 0, 0, list)));
    CHECK(ok_out({"rope", "--preset", name, "--format", "raw", "--first", "131000", "--positions", "3"}) ==
          to_bytes(lib_cache(r, 131000, 3)));
  }
  // the head size of a family
  CHECK(ok_out({"rope", "--preset", "llama3.1", "--rotary-dim", "64", "--format", "raw"}) ==
        to_bytes(lib_cache(posenc::rope::llama3_1(64), 0, 10)));
  // Phi-3's factors follow the sequence length: by default the largest position + 1, or --seq-len
  CHECK(ok_out({"rope", "--preset", "phi3-mini-128k", "--format", "raw"}) ==
        to_bytes(lib_cache(posenc::rope::phi3_mini_128k(10), 0, 10)));
  CHECK(ok_out({"rope", "--preset", "phi3-mini-128k", "--format", "raw", "--first", "5000", "--positions", "4"}) ==
        to_bytes(lib_cache(posenc::rope::phi3_mini_128k(5004), 5000, 4)));
  CHECK(ok_out({"rope", "--preset", "phi3-mini-128k", "--format", "raw", "--seq-len", "100"}) ==
        to_bytes(lib_cache(posenc::rope::phi3_mini_128k(100), 0, 10)));
  CHECK(posenc::rope::phi3_mini_128k(5004) != posenc::rope::phi3_mini_128k(100));  // the two regimes differ
}

TEST_CASE("tools: rope schemes from options are posenc_rope_init's", "[tools][rope]") {
  // each model preset written out with its published parameters
  CHECK(ok_out({"rope",  "--rotary-dim", "64",          "--rope-type", "yarn", "--factor", "40",    "--original",
                "4096",  "--beta-fast",  "32",          "--beta-slow", "1",    "--mscale", "0.707", "--mscale-all-dim",
                "0.707", "--pairs",      "interleaved", "--show-spec"}) ==
        ok_out({"rope", "--preset", "deepseek-v2", "--show-spec"}));
  CHECK(ok_out({"rope", "--rotary-dim", "128", "--base", "500000", "--rope-type", "llama3", "--factor", "8",
                "--low-freq-factor", "1", "--high-freq-factor", "4", "--original", "8192", "--format", "raw"}) ==
        to_bytes(lib_cache(posenc::rope::llama3_1(), 0, 10)));
  std::string shorts, longs;
  for (int i = 0; i < 48; ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%.17g", i ? "," : "", posenc::detail::kPhi3Mini128kShort[i]);
    shorts += buf;
    std::snprintf(buf, sizeof buf, "%s%.17g", i ? "," : "", posenc::detail::kPhi3Mini128kLong[i]);
    longs += buf;
  }
  for (const char *seq : {"4000", "9000"})
    CHECK(ok_out({"rope", "--rotary-dim", "96", "--rope-type", "longrope", "--factor", "32", "--original", "4096",
                  "--short-factor", shorts, "--long-factor", longs, "--seq-len", seq, "--format", "raw"}) ==
          ok_out({"rope", "--preset", "phi3-mini-128k", "--seq-len", seq, "--format", "raw"}));
  // linear and dynamic, against the C call
  for (const std::string &type : {std::string("linear"), std::string("dynamic")}) {
    posenc_rope_scaling s =
        posenc::rope_scaling_of(type == "linear" ? posenc::rope_type::linear : posenc::rope_type::dynamic);
    s.factor = 4.0;
    s.original_max_positions = 2048;
    s.seq_len = 9001;  // the largest position + 1
    s.truncate = 1;
    const posenc::rope r = posenc::rope::init(64, 1.0e4, s);
    INFO(type);
    std::vector<std::string> args = {"rope", "--rotary-dim", "64", "--rope-type", type, "--factor", "4", "--first",
                                     "8990", "--positions",  "11", "--format",    "raw"};
    if (type == "dynamic") args.insert(args.end(), {"--original", "2048"});
    CHECK(ok_out(args) == to_bytes(lib_cache(r, 8990, 11)));
  }
  // the overrides
  const posenc::rope r = posenc::rope(96).with_attention_scale(1.369).with_position_scale(0.25);
  CHECK(ok_out({"rope", "--rotary-dim", "96", "--position-scale", "0.25", "--attention-scale", "1.369", "--format",
                "raw", "--first", "-40", "--positions", "70"}) == to_bytes(lib_cache(r, -40, 70)));
  // --show-spec: the fields and every frequency
  const posenc::rope l = posenc::rope::llama3_1();
  std::string want = "rotary_dim 128\npairs halves\n";
  char buf[128];
  std::snprintf(buf, sizeof buf, "base %.17g\nposition_scale 1\nattention_scale 1\nfreq", l.base());
  want += buf;
  for (double f : l.freq()) std::snprintf(buf, sizeof buf, " %.17g", f), want += buf;
  CHECK(ok_out({"rope", "--preset", "llama3.1", "--show-spec"}) == want + "\n");
  CHECK(ok_out({"rope", "--rotary-dim", "8", "--show-spec"}) ==
        "rotary_dim 8\npairs halves\nbase 10000\nposition_scale 1\nattention_scale 1\nfreq base^(-2i/r)\n");
}

namespace {

// The library's vLLM-layout cache of a multi-axis scheme at axis-major positions.
std::vector<float> lib_axes_cache(const posenc::rope &r, const std::vector<int64_t> &axis_major) {
  const int64_t rows = int64_t(axis_major.size()) / r.axes();
  std::vector<float> t(size_t(rows * r.rotary_dim()));
  r.cache(posenc::positions::axis_major(axis_major, r.axes()),
          posenc::rows_view<float>(t.data(), rows, r.rotary_dim()));
  return t;
}

// The --axis-positions text of axis-major positions: each axis's list, joined by '/'.
std::string axis_text(const std::vector<int64_t> &p, int axes) {
  const size_t n = p.size() / size_t(axes);
  std::string s;
  for (size_t i = 0; i < p.size(); ++i) {
    if (i) s += i % n == 0 ? "/" : ",";
    s += p[i] == POSENC_PAD ? std::string("pad") : std::to_string(p[i]);
  }
  return s;
}

// Text tokens, an image block (axis 0 fixed, the others a grid), a far token and a padding token (other
// axes 0), axis-major.
std::vector<int64_t> vl_rows(int axes) {
  const std::vector<std::vector<int64_t>> rows = {{0, 0, 0},       {1, 1, 1},          {2, 2, 2},
                                                  {2, 2, 3},       {2, 3, 2},          {2, 3, 3},
                                                  {4, 4, 4},       {POSENC_PAD, 0, 0}, {2147483647, -5, 131072},
                                                  {-7, 100, 99999}};
  std::vector<int64_t> p;
  for (int a = 0; a < axes; ++a)
    for (const auto &r : rows) p.push_back(r[size_t(a)]);
  return p;
}

}  // namespace

TEST_CASE("tools: multi-axis rope presets and positions are posenc::rope's", "[tools][rope][axes]") {
  const std::vector<std::pair<std::string, posenc::rope>> presets = {
      {"qwen2-vl", posenc::rope::qwen2_vl()},
      {"qwen2.5-vl", posenc::rope::qwen2_5_vl()},
      {"qwen3-vl", posenc::rope::qwen3_vl()},
      {"glm-4v", posenc::rope::glm4v()},
      {"qwen2-vl-vision", posenc::rope::qwen2_vl_vision()},
      {"qwen2.5-vl-vision", posenc::rope::qwen2_5_vl_vision()},
      {"qwen3-vl-vision", posenc::rope::qwen3_vl_vision()},
      {"pixtral", posenc::rope::pixtral()},
      {"llama4-vision", posenc::rope::llama4_vision()},
  };
  for (const auto &[name, r] : presets) {
    INFO(name);
    const int axes = r.axes();
    REQUIRE(axes > 1);
    const std::vector<int64_t> p = vl_rows(axes);
    const std::string raw =
        ok_out({"rope", "--preset", name, "--format", "raw", "--axis-positions", axis_text(p, axes)});
    CHECK(raw == to_bytes(lib_axes_cache(r, p)));
    // A run and a one-axis list give every axis the same positions (a pad entry: 0 on the other axes).
    CHECK(ok_out({"rope", "--preset", name, "--format", "raw", "--first", "131000", "--positions", "3"}) ==
          to_bytes(lib_cache(r, 131000, 3)));
    std::vector<int64_t> text = {5, POSENC_PAD, 2147483647, -3}, shared = text;
    for (int a = 1; a < axes; ++a)
      for (int64_t v : text) shared.push_back(v == POSENC_PAD ? 0 : v);
    const std::string list =
        ok_out({"rope", "--preset", name, "--format", "raw", "--position-list", "5,pad,2147483647,-3"});
    CHECK(list == to_bytes(lib_axes_cache(r, shared)));
    CHECK(list == ok_out({"rope", "--preset", name, "--format", "raw", "--axis-positions", axis_text(shared, axes)}));
    // The axes do matter: the first and last axes swapped give other rows.
    std::vector<int64_t> swapped = p;
    std::swap_ranges(swapped.begin(), swapped.begin() + 10, swapped.end() - 10);
    swapped[7] = POSENC_PAD, swapped[p.size() - 3] = 0;  // the padding row stays one
    CHECK(ok_out({"rope", "--preset", name, "--format", "raw", "--axis-positions", axis_text(swapped, axes)}) != raw);
  }

  // --sections: each preset written out from its published values, the same spec and the same bytes.
  const std::string p3 = axis_text(vl_rows(3), 3), p2 = axis_text(vl_rows(2), 2);
  const std::vector<std::pair<std::vector<std::string>, std::string>> written = {
      {{"--rotary-dim", "128", "--base", "1e6", "--sections", "16,24,24"}, "qwen2.5-vl"},
      {{"--rotary-dim", "128", "--base", "5e6", "--sections", "24,20,20", "--sections-layout", "interleaved"},
       "qwen3-vl"},
      {{"--rotary-dim", "64", "--sections", "8,12,12", "--sections-layout", "chunked", "--pairs", "interleaved"},
       "glm-4v"},
      {{"--rotary-dim", "80", "--sections", "20,20", "--sections-layout", "vision"}, "qwen2-vl-vision"},
      {{"--rotary-dim", "72", "--sections", "18,18", "--sections-layout", "vision"}, "qwen3-vl-vision"},
      {{"--rotary-dim", "64", "--sections", "16,16", "--sections-layout", "strided"}, "pixtral"},
      {{"--rotary-dim", "88", "--sections", "22,22", "--sections-layout", "vision", "--pairs", "interleaved"},
       "llama4-vision"},
  };
  for (const auto &[options, name] : written) {
    INFO(name);
    std::vector<std::string> a = {"rope"};
    a.insert(a.end(), options.begin(), options.end());
    std::vector<std::string> spec = a, bytes = a;
    spec.push_back("--show-spec");
    CHECK(ok_out(spec) == ok_out({"rope", "--preset", name, "--show-spec"}));
    const std::string &pos = name.find("vision") != std::string::npos || name == "pixtral" ? p2 : p3;
    bytes.insert(bytes.end(), {"--format", "raw", "--axis-positions", pos});
    CHECK(ok_out(bytes) == ok_out({"rope", "--preset", name, "--format", "raw", "--axis-positions", pos}));
  }
  // A scaling keeps its frequencies under chunked sections; ggml's IMROPE has a 4th axis.
  const posenc::rope yarn = posenc::rope::qwen2(128, true).with_sections({16, 24, 24, 0}, posenc::rope_layout::chunked);
  CHECK(ok_out({"rope", "--rotary-dim", "128", "--base", "1e6", "--rope-type", "yarn", "--factor", "4", "--original",
                "32768", "--sections", "16,24,24", "--format", "raw", "--axis-positions", p3}) ==
        to_bytes(lib_axes_cache(yarn, vl_rows(3))));
  const posenc::rope imrope = posenc::rope(32).with_sections({2, 2, 2, 2}, posenc::rope_layout::interleaved_4);
  REQUIRE(imrope.axes() == 4);
  std::vector<int64_t> p4 = vl_rows(3);
  for (int64_t t = 0; t < 10; ++t) p4.push_back(1000 + 3 * t);
  CHECK(ok_out({"rope", "--rotary-dim", "32", "--sections", "2,2,2,2", "--sections-layout", "interleaved-4", "--format",
                "raw", "--axis-positions", axis_text(p4, 4)}) == to_bytes(lib_axes_cache(imrope, p4)));

  // --show-spec adds the axes and the axis of each pair.
  const posenc::rope q3 = posenc::rope::qwen3_vl();
  std::string want =
      "rotary_dim 128\npairs halves\nbase 5000000\nposition_scale 1\nattention_scale 1\nfreq base^(-2i/r)\n"
      "axes 3\naxis";
  for (uint8_t a : q3.axis()) want += " " + std::to_string(int(a));
  CHECK(ok_out({"rope", "--preset", "qwen3-vl", "--show-spec"}) == want + "\n");
  CHECK(want.find("axis 0 1 2 0 1 2 ") != std::string::npos);

  // CSV: one position column per axis; bf16 / f16 rows are the float32 values rounded; separate tables.
  const std::vector<float> f = lib_axes_cache(posenc::rope::glm4v(), vl_rows(3));
  const std::vector<std::string> csv =
      lines(ok_out({"rope", "--preset", "glm-4v", "--format", "csv", "--axis-positions", p3}));
  REQUIRE(csv.size() == 11);
  CHECK(csv[0].rfind("position0,position1,position2,cos0,cos1,", 0) == 0);
  CHECK(csv[0].find(",cos31,sin0,") != std::string::npos);
  CHECK(csv[4].rfind("2,2,3,", 0) == 0);
  CHECK(csv[8].rfind("pad,0,0,0,0,", 0) == 0);
  CHECK(csv[9].rfind("2147483647,-5,131072,", 0) == 0);
  CHECK(fields(csv[1], ',').size() == size_t(3 + 64));
  const std::vector<std::string> shared_csv =
      lines(ok_out({"rope", "--preset", "glm-4v", "--format", "csv", "--position-list", "9,pad", "--decimals", "2"}));
  REQUIRE(shared_csv.size() == 3);
  CHECK(shared_csv[1].rfind("9,9,9,", 0) == 0);
  CHECK(shared_csv[2].rfind("pad,0,0,0.00,", 0) == 0);  // a padding row's other axes are 0
  const std::vector<std::string> separate = lines(
      ok_out({"rope", "--preset", "glm-4v", "--format", "csv", "--cache-layout", "separate", "--axis-positions", p3}));
  REQUIRE(separate.size() == 22);
  CHECK(separate[0].rfind("position0,position1,position2,cos0,", 0) == 0);
  CHECK(separate[11].rfind("position0,position1,position2,sin0,", 0) == 0);
  CHECK(separate[16].rfind("2,3,2,", 0) == 0);  // row 4 of the sin table
  CHECK(lines(ok_out({"rope", "--preset", "pixtral", "--format", "csv", "--first", "7", "--positions", "2"}))[2].rfind(
            "8,8,", 0) == 0);
  CHECK(lines(ok_out({"rope", "--preset", "pixtral", "--format", "csv", "--first", "7", "--positions", "2"}))[0].rfind(
            "position0,position1,cos0,", 0) == 0);
  std::vector<uint16_t> bf(f.size()), hf(f.size());
  for (size_t i = 0; i < f.size(); ++i) bf[i] = ref::narrow_bf16(f[i]), hf[i] = ref::narrow_f16(f[i]);
  CHECK(ok_out({"rope", "--preset", "glm-4v", "--format", "raw", "--dtype", "bf16", "--axis-positions", p3}) ==
        to_bytes(bf));
  CHECK(ok_out({"rope", "--preset", "glm-4v", "--format", "raw", "--dtype", "f16", "--axis-positions", p3}) ==
        to_bytes(hf));
  const std::string file = scratch().path("vl.npy");
  CHECK(ok_out({"rope", "--preset", "glm-4v", "--format", "npy", "--cache-layout", "separate", "-o", file,
                "--axis-positions", p3})
            .empty());
  const Npy c = parse_npy(slurp(scratch().path("vl_cos.npy"))), s = parse_npy(slurp(scratch().path("vl_sin.npy")));
  CHECK((c.rows == 10 && c.cols == 32 && s.rows == 10 && s.cols == 32));
  std::string cos_want, sin_want;
  for (int64_t t = 0; t < 10; ++t) {
    cos_want += to_bytes(std::vector<float>(f.begin() + t * 64, f.begin() + t * 64 + 32));
    sin_want += to_bytes(std::vector<float>(f.begin() + t * 64 + 32, f.begin() + t * 64 + 64));
  }
  CHECK(c.data == cos_want);
  CHECK(s.data == sin_want);
}

TEST_CASE("tools: rope reproduces the golden cache digests on every path", "[tools][rope][golden]") {
  // tests/test_rope.cpp: SHA-256 of MPFR's values
  for (const std::string &isa : available_paths()) {
    INFO(isa);
    CHECK(sha256(ok_out({"rope", "--rotary-dim", "128", "--base", "5e5", "--format", "raw", "--isa", isa,
                         "--position-list", "0,1,4096,131072,2147483647,-2147483647,pad,1234567"})) ==
          "3b15244a606cfe5e98ca2b8461ddb9bc74cf09c9284f279a07999586941b3722");
    CHECK(sha256(ok_out({"rope", "--rotary-dim", "96", "--attention-scale", "1.369", "--position-scale", "0.25",
                         "--format", "raw", "--isa", isa, "--first", "-40", "--positions", "70"})) ==
          "67ea95bcb8db282ae9fdd06dac21c08a193d62289c79ff410ce858943a90f520");
  }
}

TEST_CASE("tools: rope cache layouts, dtypes and formats", "[tools][rope]") {
  const posenc::rope r = posenc::rope::deepseek_v2();  // interleaved pairs, yarn, m = 1
  const std::vector<int64_t> list = {3, POSENC_PAD, 163839, -7};
  const std::vector<float> f = lib_cache(r, 0, 0, list);
  const int64_t n = 4, w = 64, h = 32;
  std::vector<uint16_t> bf(f.size()), hf(f.size());
  for (size_t i = 0; i < f.size(); ++i) bf[i] = ref::narrow_bf16(f[i]), hf[i] = ref::narrow_f16(f[i]);
  const std::map<std::string, std::string> want = {{"f32", to_bytes(f)}, {"bf16", to_bytes(bf)}, {"f16", to_bytes(hf)}};
  // the two halves of each row
  auto half = [&](const std::string &all, size_t size, bool sin) {
    std::string out;
    for (int64_t t = 0; t < n; ++t) out += all.substr(size * size_t(t * w + (sin ? h : 0)), size * size_t(h));
    return out;
  };
  for (const auto &[dtype, raw] : want) {
    INFO(dtype);
    const size_t size = dtype == "f32" ? 4 : 2;
    const std::vector<std::string> base = {"rope",    "--preset", "deepseek-v2", "--position-list", "3,pad,163839,-7",
                                           "--dtype", dtype};
    auto with = [&](std::vector<std::string> more) {
      std::vector<std::string> a = base;
      a.insert(a.end(), more.begin(), more.end());
      return a;
    };
    CHECK(ok_out(with({"--format", "raw"})) == raw);
    CHECK(raw.substr(size * size_t(w), size * size_t(w)) == std::string(size * size_t(w), '\0'));  // the pad row
    // separate tables: one after the other on stdout, FILE_cos / FILE_sin in files
    CHECK(ok_out(with({"--format", "raw", "--cache-layout", "separate"})) ==
          half(raw, size, false) + half(raw, size, true));
    const std::string file = scratch().path("cache.npy");
    CHECK(ok_out(with({"--format", "npy", "--cache-layout", "separate", "-o", file})).empty());
    const Npy c = parse_npy(slurp(scratch().path("cache_cos.npy"))),
              s = parse_npy(slurp(scratch().path("cache_sin.npy")));
    CHECK(c.rows == n);
    CHECK(c.cols == h);
    CHECK(c.data == half(raw, size, false));
    CHECK(s.data == half(raw, size, true));
    const Npy one = parse_npy(ok_out(with({"--format", "npy"})));
    CHECK(one.rows == n);
    CHECK(one.cols == w);
    CHECK(one.data == raw);
    // csv: named columns, the positions first
    const std::vector<std::string> csv = lines(ok_out(with({"--format", "csv"})));
    REQUIRE(csv.size() == 5);
    CHECK(csv[0].rfind("position,cos0,cos1,", 0) == 0);
    CHECK(csv[0].find(",cos31,sin0,") != std::string::npos);
    CHECK(csv[2].rfind("pad,0,0,", 0) == 0);
    CHECK(fields(csv[3], ',').size() == size_t(w + 1));
    // text, separate: each table under its name
    const std::vector<std::string> text = lines(ok_out(with({"--cache-layout", "separate", "--decimals", "3"})));
    REQUIRE(text.size() == 10);
    CHECK(text[0] == "cos");
    CHECK(text[5] == "sin");
    CHECK(fields(text[1], ' ').size() == size_t(h));
  }
}

// ---- posenc info -------------------------------------------------------------------------------------

TEST_CASE("tools: info shows the library's own decisions", "[tools][info]") {
  std::string compiled, available;
  for (posenc_isa isa : kAllIsas) {
    if (posenc::detail::isa_compiled(int(isa)))
      compiled += std::string(compiled.empty() ? "" : " ") + posenc_isa_name(isa);
    if (posenc_isa_available(isa)) available += std::string(available.empty() ? "" : " ") + posenc_isa_name(isa);
  }
  const std::string best = posenc_isa_name(posenc_active_isa());  // this process: POSENC_ISA empty
  const std::vector<std::string> out = lines(ok_out({"info"}, {"POSENC_ISA"}));
  REQUIRE(out.size() >= 7);
  CHECK(out[0] == std::string("posenc ") + posenc_version());
  CHECK(out[1] == "compiled paths:   " + compiled);
  CHECK(out[2] == "available paths:  " + available + " (compiled, and supported by this CPU and OS)");
  CHECK(out[3] == "active path:      " + best + ": the best path available (POSENC_ISA is not set)");
  const posenc::detail::CacheSizes c = posenc::detail::cache_sizes();
  const std::string threshold = std::to_string(posenc::detail::stream_threshold_bytes());
  if (posenc::detail::isa_compiled(POSENC_ISA_AVX2) || posenc::detail::isa_compiled(POSENC_ISA_AVX512))
    CHECK(out.back().rfind("non-temporal stores: float32 outputs of " + threshold + " bytes", 0) == 0);
  else
    CHECK(out.back() == "non-temporal stores: none (the scalar and NEON paths store through the caches)");
  for (const std::string &isa : available_paths())
    CHECK(lines(ok_out({"info"}, {"POSENC_ISA=" + isa}))[3] == "active path:      " + isa + ": POSENC_ISA=" + isa);
  CHECK(lines(ok_out({"info"}, {"POSENC_ISA=bogus"}))[3].rfind("active path:      none: POSENC_ISA=bogus names no path",
                                                               0) == 0);
  for (posenc_isa isa : kAllIsas)
    if (!posenc_isa_available(isa))
      CHECK(lines(ok_out({"info"}, {std::string("POSENC_ISA=") + posenc_isa_name(isa)}))[3] ==
            std::string("active path:      none: POSENC_ISA=") + posenc_isa_name(isa) +
                " is not available here: every kernel call returns \"instruction set not available\"");
  // JSON: the same facts
  const std::string json = ok_out({"info", "--json"}, {"POSENC_ISA"});
  CHECK(json.find("\"version\": \"" + std::string(posenc_version()) + "\"") != std::string::npos);
  CHECK(json.find("\"active\": \"" + best + "\"") != std::string::npos);
  CHECK(json.find("\"posenc_isa\": null") != std::string::npos);
  CHECK(json.find("\"nontemporal_threshold\": " + threshold + ", ") != std::string::npos);
  CHECK(json.find("\"l2\": " + std::to_string(c.l2) + ",") != std::string::npos);
  CHECK(json.find("\"l3\": " + std::to_string(c.l3) + ",") != std::string::npos);
  CHECK(ok_out({"info", "--json"}, {"POSENC_ISA=bogus"}).find("\"active\": \"none\"") != std::string::npos);
#if defined(__x86_64__)
  // the CPU features, against the compiler's own detection
  __builtin_cpu_init();
  REQUIRE(out[4].rfind("CPU features:", 0) == 0);
  std::vector<std::string> words = fields(out[4].substr(13), ' ');
  const std::map<std::string, bool> cpu = {
      {"avx", __builtin_cpu_supports("avx")},           {"fma", __builtin_cpu_supports("fma")},
      {"avx2", __builtin_cpu_supports("avx2")},         {"avx512f", __builtin_cpu_supports("avx512f")},
      {"avx512bw", __builtin_cpu_supports("avx512bw")}, {"avx512vl", __builtin_cpu_supports("avx512vl")},
  };
  for (const auto &[name, has] : cpu) {
    INFO(name << " in: " << out[4]);
    CHECK((std::find(words.begin(), words.end(), name) != words.end()) == has);
  }
#endif
}

// ---- posenc check ----------------------------------------------------------------------------------

namespace {

// What `posenc check` counts: each kernel on each path but scalar, each known-value check on each path.
int expected_checks() {
  const int paths = int(available_paths().size());
  return 18 * (paths - 1) + 7 * paths;
}

}  // namespace

TEST_CASE("tools: check passes here, whatever POSENC_ISA says", "[tools][check]") {
  const std::string all = "posenc check: all " + std::to_string(expected_checks()) + " checks passed\n";
  for (const std::string &env :
       {std::string("POSENC_ISA"), std::string("POSENC_ISA=bogus"), std::string("POSENC_ISA=scalar")}) {
    INFO(env);
    const std::string out = ok_out({"check"}, {env});
    CHECK(out.find("FAIL") == std::string::npos);
    CHECK(out.size() >= all.size());
    CHECK(out.compare(out.size() - all.size(), all.size(), all) == 0);
    CHECK(ok_out({"check", "--quiet"}, {env}) == all);
  }
  // the hook of the test program is inert without POSENC_TEST_WRONG_PATH
  const Result r = run(hooked(), {"check", "--quiet"}, {"POSENC_TEST_WRONG_PATH"});
  CHECK(r.status == 0);
  CHECK(r.out == all);
}

TEST_CASE("tools: check fails when a path is one ULP wrong (test hook)", "[tools][check]") {
  for (const std::string &isa : available_paths())
    for (const std::string &kind : {std::string("table"), std::string("learned"), std::string("rope")}) {
      const Result r = run(hooked(), {"check", "--quiet"}, {"POSENC_TEST_WRONG_PATH=" + isa + ":" + kind});
      INFO(isa << ":" << kind << "\n" << r.out << r.err);
      CHECK(r.status == 1);
      const std::vector<std::string> out = lines(r.out);
      REQUIRE(!out.empty());
      CHECK(out.back().find("checks FAILED") != std::string::npos);
      // every failure names the wrong path (or, when scalar is wrong, any other path it differs from)
      int failures = 0;
      for (const std::string &l : out) {
        if (l.rfind("FAIL  ", 0) != 0) continue;
        ++failures;
        if (isa != "scalar") CHECK(l.find(" on " + isa + ": ") != std::string::npos);
        if (kind == "learned") CHECK(l.find("embed_learned_f32") != std::string::npos);
        if (kind == "rope") CHECK(l.find("rope") != std::string::npos);
      }
      CHECK(failures > 0);
      // both halves of the check see it: the comparison with scalar (on the other paths when scalar is the
      // wrong one), and the known values on the wrong path itself (the only way to see a wrong scalar path)
      bool compared = false, known_on_isa = false;
      for (const std::string &l : out) {
        if (l.rfind("FAIL  ", 0) != 0) continue;
        compared = compared || l.find(", scalar's 0x") != std::string::npos;
        known_on_isa = known_on_isa || (l.find(" on " + isa + ": ") != std::string::npos &&
                                        l.find(", scalar's 0x") == std::string::npos);
      }
      if (available_paths().size() > 1) CHECK(compared);
      CHECK(known_on_isa);
      // and every kernel of that family is reported by the comparison of paths
      const std::map<std::string, std::vector<std::string>> family = {
          {"table",
           {"table_f32", "table_bf16", "table_f16", "rows_f32", "rows_bf16", "rows_f16", "add_f32", "embed_f32",
            "embed_bf16", "embed_f16"}},
          {"learned", {"embed_learned_f32"}},
          {"rope",
           {"rope_cache_f32", "rope_f32", "rope_bf16", "rope_f16", "rope_qk_f32", "rope_qk_bf16", "rope_qk_f16"}},
      };
      if (available_paths().size() > 1)
        for (const std::string &k : family.at(kind)) {
          bool seen = false;
          for (const std::string &l : out)
            seen = seen || (l.rfind("FAIL  " + k + " on ", 0) == 0 &&
                            (isa == "scalar" || l.rfind("FAIL  " + k + " on " + isa + ": ", 0) == 0));
          INFO(k);
          CHECK(seen);
        }
    }
}

TEST_CASE("tools: the test hook is only in the test program", "[tools][check]") {
  const Result r = posenc_run({"check", "--quiet"}, {"POSENC_TEST_WRONG_PATH=scalar"});
  CHECK(r.status == 0);
  CHECK(slurp(tool()).find("POSENC_TEST_WRONG_PATH") == std::string::npos);
  CHECK(slurp(hooked()).find("POSENC_TEST_WRONG_PATH") != std::string::npos);  // the search itself works
}
