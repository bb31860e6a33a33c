"""The GIL is released inside every kernel call: a second Python thread keeps counting while one long call
(tens of milliseconds on the scalar path) runs, whereas during a C call that holds the GIL (list.sort of big
ints, math.factorial) it cannot count at all.

How it is measured: the counting thread files every iteration under the millisecond (perf_counter) at which
it ran; it can only read the clock while it holds the GIL. Over the milliseconds from the call's start to its
end, the longest run with no iteration is the measure: a call that holds the GIL leaves a gap about as long
as itself; a call that releases it leaves gaps of scheduling size. (The ends of the call are blurred by the
hand-over of the GIL after it returns, so the gap is compared with the call's length, not with zero.)
"""
import math
import sys
import threading
import time

import numpy as np
import pytest

import posenc

BUCKETS = 60000  # one per millisecond: a minute


class Counter:
    def __init__(self):
        self.buckets = [0] * BUCKETS
        self.stop = False
        self.base = time.perf_counter()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        pc, base, b = time.perf_counter, self.base, self.buckets
        while not self.stop:
            k = int((pc() - base) * 1000.0)
            if k < BUCKETS:
                b[k] += 1

    def __enter__(self):
        self.old = sys.getswitchinterval()
        sys.setswitchinterval(1e-4)
        self.thread.start()
        while sum(self.buckets) < 100:  # running
            time.sleep(0.001)
        return self

    def __exit__(self, *exc):
        self.stop = True
        self.thread.join()
        sys.setswitchinterval(self.old)

    def during(self, t0, t1):
        """(iterations, longest run of milliseconds without one, milliseconds) from t0 to t1."""
        lo = int((t0 - self.base) * 1000.0)
        hi = int((t1 - self.base) * 1000.0) + 1
        run = gap = 0
        for v in self.buckets[lo:hi]:
            run = run + 1 if v == 0 else 0
            gap = max(gap, run)
        return sum(self.buckets[lo:hi]), gap, hi - lo


def progress_during(call, attempts=3):
    """(iterations of the other thread, its longest pause in ms, the call's length in ms) for the attempt with
    the shortest pause (a loaded machine may keep the counting thread off the CPU for a while)."""
    best = None
    for _ in range(attempts):
        with Counter() as c:
            time.sleep(0.002)
            t0 = time.perf_counter()
            call()
            t1 = time.perf_counter()
            time.sleep(0.002)
        got = c.during(t0, t1)
        if best is None or got[1] < best[1]:
            best = got
        if best[1] * 4 < best[2]:
            break
    return best


def held(n, gap, ms):
    return gap >= 0.7 * ms


def released(n, gap, ms):
    return n >= 50 and gap <= 0.5 * ms


def calibrated(make, size):
    """make(size) -> a call; the size doubled until one call takes at least 60 ms here."""
    while True:
        call = make(size)
        t = time.perf_counter()
        call()
        if time.perf_counter() - t >= 0.06 or size > 1 << 26:
            return call
        size *= 2


@pytest.mark.parametrize("control", ["list.sort", "math.factorial"])
def test_a_c_call_that_holds_the_gil_stops_the_other_thread(control):
    if control == "list.sort":
        rng = np.random.default_rng(5)
        call = calibrated(lambda n: (lambda data: (lambda: sorted(data)))(
            rng.integers(1 << 40, 1 << 60, n).tolist()), 100000)
    else:
        call = calibrated(lambda n: (lambda: math.factorial(n)), 20000)
    n, gap, ms = progress_during(call, attempts=1)
    assert ms >= 20, f"the control call took only {ms} ms"
    assert held(n, gap, ms), f"{control}: a pause of {gap} ms in {ms} ms ({n} iterations): measurement broken"
    assert not released(n, gap, ms)


def test_a_python_level_busy_loop_lets_the_other_thread_count():
    def busy():
        t = time.perf_counter() + 0.05
        while time.perf_counter() < t:
            pass

    n, gap, ms = progress_during(busy)
    assert released(n, gap, ms), f"a pause of {gap} ms in {ms} ms ({n} iterations)"


@pytest.fixture(scope="module")
def big():
    return np.zeros((16384, 1024), np.float32)  # 64 MB, shared by the calls below


@pytest.fixture
def scalar_path():
    before = posenc.active_isa()
    posenc.force_isa("scalar")  # the slowest path: long calls from modest buffers
    yield
    try:
        posenc.force_isa(before)
    except posenc.Unsupported:
        pass


KERNELS = {
    "table": lambda b, r: posenc.table(1024, out=b),
    "table_bf16": lambda b, r: posenc.table(1024, out=b.view(np.uint16)[:, :1024]),
    "rows": lambda b, r: posenc.rows(1024, np.arange(4096, dtype=np.int64) * 7919, out=b[:4096]),
    "add": lambda b, r: posenc.add(1024, b, scale=0.5, out=b),
    "embed": lambda b, r: posenc.embed(1024, r["table"], r["tokens"], out=b[:8192]),
    "embed_f16": lambda b, r: posenc.embed(1024, r["table16"], r["tokens"], out=b[:8192]),
    "embed_learned": lambda b, r: posenc.embed_learned(r["table"], r["tokens16k"], r["pos_table"],
                                                       positions=r["pos16k"], out=b),
    "rope_cache": lambda b, r: posenc.rope_cache(posenc.Rope(128), first=-50000, out=b.reshape(-1, 128)),
    "rope": lambda b, r: posenc.rope(posenc.Rope(128), b.reshape(16384, 8, 128), first=1000),
    "rope_bf16": lambda b, r: posenc.rope(posenc.Rope(128), b.view(np.uint16).reshape(16384, 16, 128)[:, :8]),
    "rope_qk": lambda b, r: posenc.rope_qk(posenc.Rope(128), b.reshape(16384, 8, 128)[:, :6],
                                           b.reshape(16384, 8, 128)[:, 6:], positions=r["pos16k"]),
}


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(6)
    return {
        "table": rng.standard_normal((100, 1024)).astype(np.float32),
        "table16": rng.standard_normal((100, 1024)).astype(np.float16),
        "tokens": rng.integers(0, 100, 8192).astype(np.int32),
        "tokens16k": rng.integers(0, 100, 16384).astype(np.int32),
        "pos_table": rng.standard_normal((1024, 1024)).astype(np.float32),
        "pos16k": np.arange(16384, dtype=np.int64) % 1024,
    }


@pytest.mark.parametrize("name", list(KERNELS))
def test_the_gil_is_released_inside_the_kernel(scalar_path, big, inputs, name):
    call = KERNELS[name]
    call(big, inputs)  # the spec's one-time setup outside the measurement
    n, gap, ms = progress_during(lambda: call(big, inputs))
    assert ms >= 10, f"{name}: the call took only {ms} ms, too short to tell"
    assert released(n, gap, ms), f"{name}: the other thread paused {gap} ms of a {ms} ms call ({n} iterations)"
