// Option reading and value parsing for every subcommand.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "cli.hpp"
#include "posenc/posenc.hpp"

namespace cli {

bool Args::next() {
  if (at_ >= argv_.size()) return false;
  const std::string &a = argv_[at_++];
  if (a.size() < 2 || a[0] != '-' || a == "--") throw Usage("unexpected argument '" + a + "'");
  const size_t eq = a.find('=');
  has_inline_ = a.compare(0, 2, "--") == 0 && eq != std::string::npos;
  name_ = has_inline_ ? a.substr(0, eq) : a;
  inline_value_ = has_inline_ ? a.substr(eq + 1) : std::string();
  return true;
}

std::string Args::value() {
  if (has_inline_) {
    has_inline_ = false;
    return inline_value_;
  }
  if (at_ >= argv_.size()) throw Usage(name_ + " needs a value");
  return argv_[at_++];
}

void Args::flag() {
  if (has_inline_) throw Usage(name_ + " takes no value");
}

double number(const std::string &text, const std::string &option) {
  const char *s = text.c_str();
  char *end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (end == s || *end || text.empty() || std::isspace((unsigned char)text[0]))
    throw Usage(option + ": '" + text + "' is not a number");
  if (errno == ERANGE && std::isinf(v)) throw Usage(option + ": '" + text + "' is out of range");
  return v;
}

int64_t integer(const std::string &text, const std::string &option) {
  const char *s = text.c_str();
  char *end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (end == s || *end || text.empty() || std::isspace((unsigned char)text[0]))
    throw Usage(option + ": '" + text + "' is not an integer");
  if (errno == ERANGE) throw Usage(option + ": '" + text + "' is out of range");
  return int64_t(v);
}

int64_t count(const std::string &text, const std::string &option) {
  const int64_t v = integer(text, option);
  if (v < 0) throw Usage(option + ": '" + text + "' is negative");
  return v;
}

namespace {

template <class F>
auto split(const std::string &text, F item) -> std::vector<decltype(item(std::string()))> {
  std::vector<decltype(item(std::string()))> out;
  size_t at = 0;
  for (;;) {
    const size_t comma = text.find(',', at);
    out.push_back(item(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at)));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

}  // namespace

std::vector<double> numbers(const std::string &text, const std::string &option) {
  return split(text, [&](const std::string &s) { return number(s, option); });
}

std::vector<int64_t> integers(const std::string &text, const std::string &option) {
  return split(text, [&](const std::string &s) { return integer(s, option); });
}

std::vector<int64_t> positions(const std::string &text, const std::string &option) {
  return split(text, [&](const std::string &s) { return s == "pad" ? int64_t(POSENC_PAD) : integer(s, option); });
}

int choice(const std::string &text, const std::string &option, const std::vector<std::string> &names) {
  std::string all;
  for (size_t i = 0; i < names.size(); ++i) {
    if (text == names[i]) return int(i);
    all += (i ? ", " : "") + names[i];
  }
  throw Usage(option + ": unknown value '" + text + "' (one of: " + all + ")");
}

void force_isa(const std::string &name) {
  const int v = choice(name, "--isa", {"scalar", "avx2", "avx512", "neon"});
  posenc::check(posenc_force_isa(posenc_isa(v)));
}

int64_t Positions::seq_len() const {
  int64_t last = is_list ? -1 : first + n - 1;
  for (int64_t p : list)
    if (p != POSENC_PAD && p > last) last = p;
  return last + 1 > 1 ? last + 1 : 1;
}

bool PositionOptions::read(Args &a) {
  const std::string &n = a.name();
  if (n == "--positions") {
    p_.n = count(a.value(), n);
    count_given_ = true;
  } else if (n == "--first") {
    p_.first = integer(a.value(), n);
    first_given_ = true;
  } else if (n == "--position-list") {
    p_.list = positions(a.value(), n);
    p_.is_list = true;
  } else {
    return false;
  }
  return true;
}

Positions PositionOptions::get(int64_t default_first) const {
  if (p_.is_list && (first_given_ || count_given_))
    throw Usage("--position-list gives every position: no --first or --positions with it");
  Positions p = p_;
  if (!first_given_) p.first = default_first;
  return p;
}

}  // namespace cli
