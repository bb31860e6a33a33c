// The `posenc` command: the pieces its subcommands share. Each subcommand is a function taking the
// arguments after its name and returning the exit status; a usage error is thrown as cli::Usage and a
// library refusal as posenc::error, and main() turns both into a message and an exit status:
//   0  done (check: every check passed)
//   1  the library refused the request (its posenc_status_string is printed), a file could not be read
//      or written, or (check) a check failed
//   2  a usage error: an unknown option, a missing or malformed value, options that do not go together
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "posenc/posenc.h"

namespace cli {

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;

// A usage error of the current subcommand (exit 2).
struct Usage : std::runtime_error {
  explicit Usage(const std::string &why) : std::runtime_error(why) {}
};

// A file that could not be read or written (exit 1).
struct IoError : std::runtime_error {
  explicit IoError(const std::string &why) : std::runtime_error(why) {}
};

// The manual of a command ("posenc" for the command itself, else "table", "rope", "info", "check"), or
// nullptr when there is none (help.cpp: every text of the tool, in one place).
const char *manual(const std::string &command);
// The subcommands, in the order the manual lists them.
const std::vector<std::string> &commands();

// The options of one subcommand, read in order: `--name value`, `--name=value` or a flag `--name`.
class Args {
 public:
  Args(int argc, char **argv) : argv_(argv + 1, argv + argc) {}
  // Moves to the next option; false at the end. Anything that is not an option is a usage error.
  bool next();
  // The current option's name, with its dashes ("--d-model").
  const std::string &name() const { return name_; }
  // The current option's value (the next argument, or the text after '='); a usage error when missing.
  std::string value();
  // The current option as a flag: a usage error when it was given a value with '='.
  void flag();

 private:
  std::vector<std::string> argv_;
  size_t at_ = 0;
  std::string name_, inline_value_;
  bool has_inline_ = false;
};

// Hands each option in turn to read(a), which takes it and returns true, or returns false for an option it
// does not know (a usage error).
template <class F>
void read_options(int argc, char **argv, F &&read) {
  Args a(argc, argv);
  while (a.next())
    if (!read(a)) throw Usage("unknown option " + a.name());
}

// Values of options, each a usage error naming the option when malformed.
double number(const std::string &text, const std::string &option);                  // strtod: decimal, hex, inf
int64_t integer(const std::string &text, const std::string &option);                // base 10, no fraction
int64_t count(const std::string &text, const std::string &option);                  // an integer >= 0
std::vector<double> numbers(const std::string &text, const std::string &option);    // a,b,c
std::vector<int64_t> integers(const std::string &text, const std::string &option);  // a,b,c
// A comma-separated list of positions: integers, or "pad" for POSENC_PAD (a zero row).
std::vector<int64_t> positions(const std::string &text, const std::string &option);
// One of the names; a usage error listing them otherwise.
int choice(const std::string &text, const std::string &option, const std::vector<std::string> &names);

// --isa NAME: forces the path (a usage error for an unknown name; the library's refusal, thrown as
// posenc::error, for a path this machine lacks).
void force_isa(const std::string &name);

// The rows of a table or cache: a run (first, first + 1, ...) or an explicit list; for a multi-axis RoPE
// scheme, the list may hold `axes` positions per row, axis-major (row r's position on axis a is
// list[a * rows() + r], as posenc.h takes them).
struct Positions {
  bool is_list = false;
  int64_t first = 0, n = 10;
  int axes = 1;
  std::vector<int64_t> list;
  int64_t rows() const { return is_list ? int64_t(list.size()) / axes : n; }
  // Row r's position on axis 0 (the one POSENC_PAD marks).
  int64_t at(int64_t r) const { return is_list ? list[size_t(r)] : first + r; }
  // The largest position + 1 (at least 1): HF's seq_len for the schemes that read it.
  int64_t seq_len() const;
};

// --positions N, --first P, --position-list LIST.
class PositionOptions {
 public:
  // Takes the current option when it is one of the three; false otherwise.
  bool read(Args &a);
  // The positions asked for: default_first when --first was not given; a usage error when a list was
  // combined with --first or --positions.
  Positions get(int64_t default_first) const;
  // Whether any of the three was given.
  bool given() const { return p_.is_list || first_given_ || count_given_; }

 private:
  Positions p_;
  bool first_given_ = false, count_given_ = false;
};

int table_main(int argc, char **argv);
int rope_main(int argc, char **argv);
int info_main(int argc, char **argv);
int check_main(int argc, char **argv);

}  // namespace cli
