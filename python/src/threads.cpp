// The binding's thread pool and thread count (threads.hpp; docs/python.md, "Threads"). With torch imported, a split
// call runs on OpenMP's team instead (pool_run): libgomp's threads, which torch's operators use.
//
// The pool: workers started lazily, as many as the largest split so far needs less one (the calling thread runs pieces
// too), reused by every later call, and joined by posenc's atexit handler (_threads_shutdown). The pool object itself
// is never destroyed (no static destructor joins or terminates a thread at exit); after fork() the child drops the
// parent's pool (its threads do not exist there) and starts a new one when it needs it. One call uses the pool at a
// time: a call made while another runs on it (from another Python thread) runs its pieces on its own thread, which
// gives the same bytes.
#include "threads.hpp"

#include <pybind11/pybind11.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <signal.h>
#endif

namespace pyposenc {

namespace {

constexpr int64_t kMaxThreads = 256;
// Pieces per thread of a split call, handed out one at a time: when a worker is late (its CPU busy, e.g. with torch's
// OpenMP threads, which spin for milliseconds after each of torch's parallel ops before they sleep), the threads
// that run take its pieces, so a call is never much slower than on one thread.
constexpr int64_t kPiecesPerThread = 4;

}  // namespace

class Pool {
 public:
  void run(int64_t pieces, int64_t threads, void (*piece)(void *, int64_t), void *ctx) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock() || closed_) {  // another call has the pool, or it is shut down: run here
      for (int64_t k = 0; k < pieces; ++k) piece(ctx, k);
      return;
    }
    grow(threads - 1);
    const int64_t engaged = std::min<int64_t>(threads - 1, int64_t(workers_.size()));
    {
      std::lock_guard<std::mutex> lk(m_);
      piece_ = piece;
      ctx_ = ctx;
      pieces_ = pieces;
      next_.store(0, std::memory_order_relaxed);
      engaged_ = engaged;
      finished_ = 0;
      ++generation_;
    }
    if (engaged) wake_.notify_all();
    take_pieces();
    std::unique_lock<std::mutex> lk(m_);
    done_.wait(lk, [&] { return finished_ == engaged_; });
  }

  // Joins every worker; later calls run on their own thread. Waits for a call in progress on the pool.
  void shutdown() {
    std::lock_guard<std::mutex> busy(busy_);
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : workers_) t.join();
    workers_.clear();
    closed_ = true;
  }

  int64_t workers() const { return int64_t(workers_.size()); }

 private:
  void take_pieces() {
    for (int64_t k; (k = next_.fetch_add(1, std::memory_order_relaxed)) < pieces_;) piece_(ctx_, k);
  }

  // Starts workers up to `want` (the caller holds busy_); a thread that cannot be started leaves fewer.
  void grow(int64_t want) {
    if (int64_t(workers_.size()) >= want) return;
#if defined(__unix__) || defined(__APPLE__)
    // the workers block every signal: Python handles them on its main thread
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
#endif
    try {
      while (int64_t(workers_.size()) < want) {
        const int64_t i = int64_t(workers_.size());
        uint64_t seen;
        {
          std::lock_guard<std::mutex> lk(m_);
          seen = generation_;  // a new worker waits for the next call, which run() is about to start
        }
        workers_.emplace_back([this, i, seen] { worker(i, seen); });
      }
    } catch (...) {  // std::system_error: no more threads; run with those there are
    }
#if defined(__unix__) || defined(__APPLE__)
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
#endif
  }

  void worker(int64_t i, uint64_t seen) {
    std::unique_lock<std::mutex> lk(m_);
    for (;;) {
      wake_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (i >= engaged_) continue;  // not needed for this call
      lk.unlock();
      take_pieces();
      lk.lock();
      if (++finished_ == engaged_) done_.notify_one();
    }
  }

  std::mutex busy_;  // held by the call using the pool
  std::mutex m_;     // guards the fields below but next_
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  uint64_t generation_ = 0;
  int64_t engaged_ = 0, finished_ = 0, pieces_ = 0;
  void (*piece_)(void *, int64_t) = nullptr;
  void *ctx_ = nullptr;
  std::atomic<int64_t> next_{0};
  bool stop_ = false, closed_ = false;
};

namespace {

// All of these are read and written with the GIL held.
Pool *the_pool = nullptr;  // never deleted (see the top of this file)
int64_t set_threads = 0;   // set_num_threads; 0: the default
// The estimated cycles (posenc::unit_cost::cycles) a piece must carry: 1.5 posenc::cost_model::min_piece_cycles.
// Measured with this pool (docs/python.md, "Threads"; Xeon family 6 model 207, 2 vCPUs): two threads pay from about
// 45 us of one thread's work (a table 512 wide from 195-260 rows, 2 pieces of 120k-160k estimated cycles), and
// posenc::work's 200k a piece would split calls that two threads make slower on this noisy VM.
double min_piece_cycles = 1.5 * posenc::cost_model::min_piece_cycles;
std::atomic<int64_t> split_calls{0}, split_pieces_run{0}, omp_calls{0};
// Whether a split call runs on OpenMP's team instead of the pool: when torch has been imported (torch's CPU
// operators run on libgomp's threads, which spin for milliseconds after each operator before they sleep, and a
// team started from the same thread reuses those threads, hot, instead of competing with them for the CPUs), and
// not in a forked child (libgomp's team does not survive fork). Decided with the GIL held, per calling thread.
bool omp_allowed = true;  // false after fork, and by _use_openmp(False)
thread_local bool omp_this_call = false;

bool torch_loaded() {
  PyObject *modules = PyImport_GetModuleDict();  // borrowed
  return modules && PyDict_GetItemString(modules, "torch");
}

int64_t cpu_count() {
  static const int64_t n = [] {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
      const int c = CPU_COUNT(&set);
      if (c > 0) return int64_t(c);
    }
#endif
    const unsigned h = std::thread::hardware_concurrency();
    return int64_t(h ? h : 1);
  }();
  return n;
}

// torch.get_num_threads() when torch has been imported (never imported here), else 0.
int64_t torch_threads() {
  PyObject *modules = PyImport_GetModuleDict();  // borrowed
  PyObject *torch = modules ? PyDict_GetItemString(modules, "torch") : nullptr;
  if (!torch) return 0;
  PyObject *r = PyObject_CallMethod(torch, "get_num_threads", nullptr);
  if (!r) {  // a torch module without it (a stub, one half imported): ignore it
    PyErr_Clear();
    return 0;
  }
  const long long v = PyLong_AsLongLong(r);
  Py_DECREF(r);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return 0;
  }
  return v > 0 ? int64_t(v) : 0;
}

int64_t num_threads() {
  int64_t n = set_threads;
  if (!n) n = torch_threads();
  if (!n) n = cpu_count();
  return std::min(n, kMaxThreads);
}

}  // namespace

int64_t split_pieces(const Split &s, Pool **pool, int64_t *threads) {
  if (s.batch < 1 || s.n < 1) return 1;
  const double total = double(s.batch) * double(s.n) * s.unit_cycles;
  const double by_work = min_piece_cycles > 0 ? total / min_piece_cycles : double(kMaxThreads);
  if (by_work < 2.0) return 1;  // before asking torch: most calls stop here
  const int64_t grains = s.batch * ((s.n - 1) / s.grain + 1);
  int64_t p = std::min(num_threads(), grains);
  if (by_work < double(p)) p = int64_t(by_work);
  if (p < 2) return 1;
  *threads = p;
#if defined(_OPENMP)
  omp_this_call = omp_allowed && torch_loaded();
#endif
  if (!the_pool) the_pool = new Pool;
  *pool = the_pool;
  return std::min(grains, kPiecesPerThread * p);
}

void pool_run(Pool *pool, int64_t pieces, int64_t threads, void (*piece)(void *, int64_t), void *ctx) {
#if defined(_OPENMP)
  if (omp_this_call) {
    omp_calls.fetch_add(1, std::memory_order_relaxed);
    std::atomic<int64_t> next{0};
#pragma omp parallel num_threads(int(threads))
    {
      for (int64_t k; (k = next.fetch_add(1, std::memory_order_relaxed)) < pieces;) piece(ctx, k);
    }
    return;
  }
#endif
  pool->run(pieces, threads, piece, ctx);
}

void note_split(int64_t pieces) {
  split_calls.fetch_add(1, std::memory_order_relaxed);
  split_pieces_run.fetch_add(pieces, std::memory_order_relaxed);
}

void bind_threads(py::module_ &m) {
  using namespace pybind11::literals;
  m.def(
      "set_num_threads",
      [](py::handle n) {
        if (n.is_none()) {
          set_threads = 0;
          return;
        }
        const int64_t v = n.cast<int64_t>();
        if (v < 0) throw py::value_error("set_num_threads: expected n >= 1, or 0 / None for the default");
        set_threads = std::min(v, kMaxThreads);
      },
      "n"_a,
      R"(set_num_threads(n) -> None

The threads a large kernel call is split across (process-wide, for every later call): n >= 1, or 0 / None
to return to the default, which follows torch.get_num_threads() when torch has been imported, and otherwise
the CPUs this process may run on (os.sched_getaffinity). 1 runs every call on the calling thread. A call is
split only when each piece carries enough work to pay for it (docs/python.md, "Threads"); the results are the
same bytes at every thread count.)");
  m.def(
      "get_num_threads", [] { return num_threads(); },
      R"(get_num_threads() -> int

The threads a large call is split across now: set_num_threads's n, else torch.get_num_threads() when torch
has been imported, else the CPUs this process may run on.)");
  m.def(
      "_threads_shutdown",
      [] {
        if (!the_pool) return;
        Pool *p = the_pool;
        py::gil_scoped_release nogil;
        p->shutdown();
      },
      "Joins the pool's workers (posenc's atexit handler); later calls run on "
      "the calling thread.");
  m.def(
      "_threads_after_fork",
      [] {
        the_pool = nullptr;
        omp_allowed = false;
      },
      "In a forked child: forget the parent's pool (its threads are not in "
      "this process); a new one starts when "
      "needed. The old one is left as it is (its locks may be held by threads "
      "that are gone).");
  m.def(
      "_split_stats",
      [] { return py::make_tuple(split_calls.load(), split_pieces_run.load(), the_pool ? the_pool->workers() : 0); },
      "Tests: (calls split, pieces run, pool workers started) since the module "
      "was loaded.");
  m.def(
      "_openmp_calls", [] { return omp_calls.load(); },
      "Tests: split calls run on OpenMP's team (torch imported) since the module was loaded.");
  m.def(
      "_use_openmp",
      [](py::handle v) {
        const bool old = omp_allowed;
        if (!v.is_none()) omp_allowed = v.cast<bool>();
#if defined(_OPENMP)
        return old;
#else
        return false;
#endif
      },
      "v"_a = py::none(),
      "Tests and benchmarks: whether split calls may run on OpenMP's team when torch is imported (else the "
      "binding's own pool); returns the previous setting (False when built without OpenMP).");
  m.def(
      "_min_piece_cycles",
      [](py::handle v) {
        const double old = min_piece_cycles;
        if (!v.is_none()) {
          const double c = v.cast<double>();
          if (!(c >= 0)) throw py::value_error("_min_piece_cycles: expected a value >= 0");
          min_piece_cycles = c;
        }
        return old;
      },
      "v"_a = py::none(),
      "Tests and benchmarks: the estimated cycles a piece must carry for a "
      "call to be split (0 splits every call "
      "of two grains or more); returns the previous value.");
}

}  // namespace pyposenc
