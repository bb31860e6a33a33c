"""Small helpers shared by the posenc test modules (no references here: see mpfr_ref.py)."""
import numpy as np


def bits(a):
    """The bit patterns of a float32 / float16 / uint16 array or CPU tensor, as an unsigned NumPy array."""
    if type(a).__module__.startswith("torch"):
        import torch

        t = a.detach().contiguous()
        if t.dtype == torch.float32:
            return t.view(torch.int32).numpy().view(np.uint32)
        return t.view(torch.int16).numpy().view(np.uint16)
    a = np.asarray(a)
    if a.dtype == np.float32:
        return a.view(np.uint32)
    if a.dtype == np.float16:
        return a.view(np.uint16)
    return a


def assert_bits(got, want, what=""):
    """Bit-for-bit equality (tells -0 from +0, compares NaN payloads), with the first difference in the message."""
    g, w = bits(got), bits(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape}, want {w.shape}"
    if not np.array_equal(g, w):
        idx = tuple(int(i) for i in np.argwhere(g != w)[0])
        count = int(np.count_nonzero(g != w))
        raise AssertionError(f"{what}: {count} elements differ; first at {idx}: got 0x{int(g[idx]):x}, "
                             f"want 0x{int(w[idx]):x}")


def sentinel(shape, dtype, value=None):
    """An array filled with a recognisable pattern (a NaN payload for floats, 0xA5A5 for uint16)."""
    a = np.empty(shape, dtype)
    if a.dtype == np.float32:
        a.view(np.uint32)[...] = 0x7FBADBAD if value is None else value
    elif a.dtype.itemsize == 2:
        a.view(np.uint16)[...] = 0xA5A5 if value is None else value
    elif a.dtype.itemsize == 4:
        a[...] = -777777 if value is None else value
    else:
        a[...] = -7777777777 if value is None else value
    return a
