"""posenc: exact sinusoidal positional encodings, the fused embedding-add that uses them, and rotary
embeddings (RoPE), for NumPy arrays and PyTorch CPU tensors.

Every float32 it writes is the correctly rounded sin / cos of the exact angle, on every SIMD path (the same
bits on scalar, AVX2, AVX-512 and NEON). Arrays go in and out without copies; every kernel runs without the
GIL; errors of the C library raise posenc.Error subclasses (InvalidArgument is a ValueError, OutOfRange an
IndexError, SizeOverflow an OverflowError, NoMemory a MemoryError, Unsupported a RuntimeError) whose message
is posenc_status_string, and leave every output untouched. bfloat16 arrays are uint16 bit patterns in NumPy
(torch.bfloat16 tensors are taken as they are). Multi-axis RoPE (M-RoPE of vision-language models, 2-D RoPE of
vision towers): Rope(..., axes=, axis=) or rope_sections, positions of shape (axes, n); rope_shift moves cached
keys to new positions (the context shift). Real-valued positions (the timestep embeddings of diffusion and
flow-matching models): timesteps and timesteps_add take float64 timesteps (float32, bfloat16, float16 and
integers converted exactly).

posenc.torch (imported on its own, needs torch) has drop-in modules for the PyTorch code people run.
docs/python.md has an example per function and module.
"""
from ._posenc import (  # noqa: F401
    PAD,
    Error,
    Isa,
    InvalidArgument,
    Layout,
    NoMemory,
    OutOfRange,
    Rope,
    RopeLayout,
    RopePairs,
    SizeOverflow,
    Spec,
    Status,
    Unsupported,
    active_isa,
    add,
    available_isas,
    embed,
    embed_learned,
    force_isa,
    get_num_threads,
    isa_available,
    isa_name,
    rope,
    rope_cache,
    rope_init,
    rope_qk,
    rope_sections,
    rope_shift,
    rope_tables,
    rope_types,
    rows,
    set_num_threads,
    status_string,
    table,
    timesteps,
    timesteps_add,
    version,
)

__version__ = version()


def _install_thread_hooks():
    # Large calls run on a pool of worker threads (docs/python.md, "Threads"): joined at exit, and forgotten in a
    # forked child, where they do not exist.
    import atexit
    import os

    from . import _posenc

    atexit.register(_posenc._threads_shutdown)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_posenc._threads_after_fork)


_install_thread_hooks()
del _install_thread_hooks

__all__ = [
    "PAD", "Error", "Isa", "InvalidArgument", "Layout", "NoMemory", "OutOfRange", "Rope", "RopeLayout",
    "RopePairs", "SizeOverflow", "Spec", "Status", "Unsupported", "active_isa", "add", "available_isas",
    "embed", "embed_learned", "force_isa", "get_num_threads", "isa_available", "isa_name", "rope", "rope_cache",
    "rope_init", "rope_qk", "rope_sections", "rope_shift", "rope_tables", "rope_types", "rows", "set_num_threads",
    "status_string",
    "table", "timesteps", "timesteps_add", "version", "__version__",
]
