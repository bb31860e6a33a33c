// What the C++ wrapper suites (test_cpp_wrapper, test_rope_wrapper, test_work) check of every call the same
// way: bytes compared as bytes (so -0 is not +0 and a NaN equals its own pattern), and a refusal that throws
// posenc::error carrying the C status, names that status in what() and leaves the buffer untouched.
#pragma once

#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "posenc/types.hpp"

namespace ref {

template <class T>
bool same_bytes(const std::vector<T> &a, const std::vector<T> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Runs a call that must throw; returns its status (POSENC_OK when nothing was thrown), and checks that buf
// kept every byte.
template <class T, class Fn>
posenc_status thrown(const std::vector<T> &buf, Fn fn) {
  const std::vector<T> before = buf;
  posenc_status st = POSENC_OK;
  try {
    fn();
  } catch (const posenc::error &e) {
    st = e.status();
    CHECK(std::string(e.what()).find(posenc_status_string(st)) != std::string::npos);
  }
  CHECK(same_bytes(buf, before));
  return st;
}

}  // namespace ref
