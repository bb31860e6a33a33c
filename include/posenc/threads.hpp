// threads.hpp: an opt-in helper that runs a posenc::work on std::threads, for callers without a thread pool
// of their own (docs/threads.md). Not included by posenc.hpp: the library and its wrapper never start a
// thread; this header does, when its function is called. Link with the platform's thread library
// (-pthread, CMake's Threads::Threads, meson's dependency('threads')).
#ifndef POSENC_THREADS_HPP
#define POSENC_THREADS_HPP

#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

#include "posenc/posenc.hpp"  // every _work builder (posenc::work itself is posenc/work.hpp)

namespace posenc {

/** Runs w in w.pieces(threads) pieces: piece 0 on the calling thread, each other piece on a std::thread of
 *  its own, started here and joined before returning. The bytes are those of the unsplit call. A piece that
 *  fails (POSENC_ERR_NO_MEMORY, in practice: work says when) throws posenc::error with its status after every
 *  thread has joined (the first failing piece's, in piece order); the other pieces have written their rows.
 *  When a thread cannot be started (std::system_error), its piece runs on the calling thread instead. */
inline void run_parallel(const work &w, int64_t threads) {
  const int64_t p = w.pieces(threads);
  if (p <= 1) {
    check(w.run(0, w.units()));
    return;
  }
  std::vector<posenc_status> status(size_t(p), POSENC_OK);
  std::vector<std::thread> started;
  started.reserve(size_t(p - 1));
  std::vector<int64_t> inline_pieces;
  inline_pieces.reserve(size_t(p - 1));
  for (int64_t k = 1; k < p; ++k) {
    try {
      started.emplace_back([&w, &status, k, p] { status[size_t(k)] = w.run_piece(k, p); });
    } catch (...) {  // no thread: this piece runs here (both vectors are reserved: nothing below throws)
      inline_pieces.push_back(k);
    }
  }
  status[0] = w.run_piece(0, p);
  for (int64_t k : inline_pieces) status[size_t(k)] = w.run_piece(k, p);
  for (std::thread &t : started) t.join();
  for (posenc_status s : status) check(s);
}

}  // namespace posenc

#endif  // POSENC_THREADS_HPP
