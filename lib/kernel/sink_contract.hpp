// What the rows engine (values_rows.hpp, values_times.hpp) needs of a sink K, checked when it is instantiated
// for one: a new sink that lacks a member gets a message naming it. docs/architecture.md, "The sink
// contract", says what each member means; sink_pe.hpp has the reference sinks.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace posenc {
namespace sink_contract {

template <class T>
T &val();

#define POSENC_SINK_MEMBER(name, ...)     \
  template <class K, class = void>        \
  struct has_##name : std::false_type {}; \
  template <class K>                      \
  struct has_##name<K, std::void_t<decltype(__VA_ARGS__)>> : std::true_type {};
POSENC_SINK_MEMBER(flags, K::kInterleaved, K::kHasX, K::kScaled, K::kUseClear, K::kAxes)
POSENC_SINK_MEMBER(modes, bool(val<K>().staged), bool(val<K>().direct))
POSENC_SINK_MEMBER(row, val<K>().row(int64_t(0), int64_t(1)))
POSENC_SINK_MEMBER(chunk, val<K>().chunk(int64_t(0)))
POSENC_SINK_MEMBER(flush, val<K>().flush(int64_t(0), int64_t(0)))
POSENC_SINK_MEMBER(finish, val<K>().finish())
POSENC_SINK_MEMBER(pad, val<K>().pad(int64_t(0)))
POSENC_SINK_MEMBER(out, typename K::Out(val<const K>().out()))
POSENC_SINK_MEMBER(out_flags, K::Out::kZipped, K::Out::kHasX, K::Out::kScaled)
POSENC_SINK_MEMBER(mag, val<K>().mag, val<typename K::Out>().post)
#undef POSENC_SINK_MEMBER

// Out's writes of a vector F of values: whole (put, put_fast<kNt>) and the first m lanes (put_partial).
template <class K, class F, class = void>
struct has_puts : std::false_type {};
template <class K, class F>
struct has_puts<
    K, F,
    std::void_t<decltype(val<const typename K::Out>().put(int64_t(0), val<const F>())),
                decltype(bool(val<const typename K::Out>().template put_fast<false>(int64_t(0), val<const F>()))),
                decltype(val<const typename K::Out>().put_partial(int64_t(0), val<const F>(), int64_t(0)))>>
    : std::true_type {};

template <class K, class F>
constexpr bool check() {
#define POSENC_REQUIRE(m, what) \
  static_assert(has_##m<K>::value, "a sink lacks " what " (docs/architecture.md, \"The sink contract\")");
  POSENC_REQUIRE(flags, "one of kInterleaved, kHasX, kScaled, kUseClear, kAxes")
  POSENC_REQUIRE(modes, "the bool members staged and direct")
  POSENC_REQUIRE(row, "row(r, ahead)")
  POSENC_REQUIRE(chunk, "chunk(j0)")
  POSENC_REQUIRE(flush, "flush(j0, n)")
  POSENC_REQUIRE(finish, "finish()")
  POSENC_REQUIRE(pad, "pad(r)")
  POSENC_REQUIRE(out, "Out out() const")
  POSENC_REQUIRE(out_flags, "one of Out::kZipped, Out::kHasX, Out::kScaled")
  if constexpr (K::kScaled) {
    POSENC_REQUIRE(mag, "mag (detail::Mag) and Out::post, which a scaled sink needs")
  }
#undef POSENC_REQUIRE
  static_assert(has_puts<K, F>::value,
                "a sink's Out lacks put(jj, F), put_fast<kNt>(jj, F) or put_partial(jj, F, m) "
                "(docs/architecture.md, \"The sink contract\")");
  return true;
}

}  // namespace sink_contract
}  // namespace posenc
