"""Type stubs of posenc (the extension module posenc._posenc, re-exported). Arrays are NumPy arrays or CPU
torch.Tensors (zero copy); bfloat16 NumPy arrays are uint16 bit patterns."""
from enum import IntEnum
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, TypeVar, Union

import numpy as np
import numpy.typing as npt

__version__: str
PAD: int  # POSENC_PAD: an explicit position that gives a zero row / leaves a token untouched

ArrayLike = Any  # numpy.ndarray or torch.Tensor (CPU, strided)
IntArrayLike = Union[Sequence[int], npt.NDArray[np.integer], Any]
DType = Union[str, np.dtype, type, Any]  # "float32" | "bfloat16" | "float16", numpy or torch dtypes
A = TypeVar("A")

class Status(IntEnum):
    OK: int
    ERR_NULL: int
    ERR_INVALID: int
    ERR_OUT_OF_RANGE: int
    ERR_OVERFLOW: int
    ERR_UNSUPPORTED: int
    ERR_NO_MEMORY: int

class Layout(IntEnum):
    INTERLEAVED: int
    SIN_COS_HALVES: int
    COS_SIN_HALVES: int

class RopePairs(IntEnum):
    HALVES: int
    INTERLEAVED: int

class RopeLayout(IntEnum):
    """posenc_rope_layout: how rope_sections assigns pairs to axes."""
    CHUNKED: int
    INTERLEAVED: int
    VISION: int
    STRIDED: int
    INTERLEAVED_4: int
    ALTERNATING: int
    PER_AXIS: int
    BALANCED: int

class Isa(IntEnum):
    SCALAR: int
    AVX2: int
    AVX512: int
    NEON: int

class Error(Exception):
    """Base of the C library's errors; message == status_string(status)."""
    status: Status

class InvalidArgument(Error, ValueError): ...  # ERR_INVALID, ERR_NULL
class OutOfRange(Error, IndexError): ...  # ERR_OUT_OF_RANGE
class SizeOverflow(Error, OverflowError): ...  # ERR_OVERFLOW
class NoMemory(Error, MemoryError): ...  # ERR_NO_MEMORY
class Unsupported(Error, RuntimeError): ...  # ERR_UNSUPPORTED

LayoutLike = Union[Layout, str, int]
PairsLike = Union[RopePairs, str, int]
RopeLayoutLike = Union[RopeLayout, str, int]  # a RopeLayout member, or its name in lower case (posenc_rope_layout_name)
IsaLike = Union[Isa, str, int]

class Spec:
    """A sinusoidal encoding (posenc_spec); immutable, hashable, picklable."""
    def __init__(self, d_model: int, layout: LayoutLike = "interleaved", base: float = 10000.0,
                 freq_denominator: float = 0.0, position_scale: float = 1.0) -> None: ...
    @property
    def d_model(self) -> int: ...
    @property
    def layout(self) -> Layout: ...
    @property
    def base(self) -> float: ...
    @property
    def freq_denominator(self) -> float: ...
    @property
    def position_scale(self) -> float: ...
    @staticmethod
    def vaswani(d_model: int) -> Spec: ...
    @staticmethod
    def marian(d_model: int) -> Spec: ...
    @staticmethod
    def fairseq(d_model: int) -> Spec: ...
    @staticmethod
    def tensor2tensor(d_model: int, min_timescale: float = 1.0, max_timescale: float = 1.0e4) -> Spec: ...
    @staticmethod
    def ctranslate2(d_model: int) -> Spec: ...
    @staticmethod
    def ggml_timestep(d_model: int, max_period: float = 10000.0) -> Spec: ...
    @staticmethod
    def diffusers(d_model: int, flip_sin_to_cos: bool = False, downscale_freq_shift: float = 1.0,
                  scale: float = 1.0, max_period: float = 10000.0) -> Spec: ...
    @staticmethod
    def dit(d_model: int, max_period: float = 10000.0) -> Spec: ...
    @staticmethod
    def flux(d_model: int, max_period: float = 10000.0, time_factor: float = 1000.0) -> Spec: ...
    @staticmethod
    def whisper(channels: int, max_timescale: float = 10000.0) -> Spec: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

SpecLike = Union[Spec, int]

class Rope:
    """A RoPE spec (posenc_rope) owning its explicit frequencies and axis map; immutable, picklable."""
    def __init__(self, rotary_dim: int, pairs: PairsLike = "halves", base: float = 10000.0,
                 position_scale: float = 1.0, freq: Optional[Sequence[float]] = None,
                 attention_scale: float = 1.0, axes: int = 1, axis: Optional[IntArrayLike] = None) -> None: ...
    @property
    def rotary_dim(self) -> int: ...
    @property
    def pairs(self) -> RopePairs: ...
    @property
    def base(self) -> float: ...
    @property
    def position_scale(self) -> float: ...
    @property
    def attention_scale(self) -> float: ...
    @property
    def freq(self) -> Optional[npt.NDArray[np.float64]]: ...
    @property
    def axes(self) -> int: ...
    @property
    def axis(self) -> Optional[npt.NDArray[np.uint8]]: ...
    def with_pairs(self, pairs: PairsLike) -> Rope: ...
    def with_position_scale(self, position_scale: float) -> Rope: ...
    def inverse(self) -> Rope: ...
    def with_attention_scale(self, attention_scale: float) -> Rope: ...
    @staticmethod
    def llama2(rotary_dim: int = 128) -> Rope: ...
    @staticmethod
    def llama3_1(rotary_dim: int = 128) -> Rope: ...
    @staticmethod
    def mistral_7b_v02(rotary_dim: int = 128) -> Rope: ...
    @staticmethod
    def qwen2(rotary_dim: int = 128, yarn: bool = False) -> Rope: ...
    @staticmethod
    def phi3_mini_128k(seq_len: int) -> Rope: ...
    @staticmethod
    def deepseek_v2() -> Rope: ...
    @staticmethod
    def deepseek_v3() -> Rope: ...
    @staticmethod
    def gpt_neox_20b() -> Rope: ...
    @staticmethod
    def gpt_j_6b() -> Rope: ...
    @staticmethod
    def deepseek_v4() -> Rope: ...
    @staticmethod
    def deepseek_v4_compress() -> Rope: ...
    @staticmethod
    def glm5() -> Rope: ...
    @staticmethod
    def glm5_indexer() -> Rope: ...
    @staticmethod
    def minimax_m3() -> Rope: ...
    @staticmethod
    def qwen2_vl() -> Rope: ...
    @staticmethod
    def qwen2_5_vl() -> Rope: ...
    @staticmethod
    def qwen3_vl() -> Rope: ...
    @staticmethod
    def glm4v() -> Rope: ...
    @staticmethod
    def qwen2_vl_vision() -> Rope: ...
    @staticmethod
    def qwen2_5_vl_vision() -> Rope: ...
    @staticmethod
    def qwen3_vl_vision() -> Rope: ...
    @staticmethod
    def pixtral() -> Rope: ...
    @staticmethod
    def llama4_vision() -> Rope: ...
    def __eq__(self, other: object) -> bool: ...

def table(spec: SpecLike, n: Optional[int] = None, first: int = 0, *, dtype: Optional[DType] = None,
          out: Optional[ArrayLike] = None) -> ArrayLike:
    """posenc_table_f32 / _bf16 / _f16: (n, d_model) rows for positions first .. first+n-1."""
def rows(spec: SpecLike, positions: IntArrayLike, *, dtype: Optional[DType] = None,
         out: Optional[ArrayLike] = None) -> ArrayLike:
    """posenc_rows_*: one row per explicit position; PAD gives zeros."""
def add(spec: SpecLike, x: ArrayLike, *, positions: Optional[IntArrayLike] = None, first: int = 0,
        scale: float = 1.0, out: Optional[ArrayLike] = None) -> ArrayLike:
    """posenc_add_f32: fmaf(scale, x, PE); x (n, d) or (batch, n, d); out may be x."""
def embed(spec: SpecLike, table: ArrayLike, tokens: IntArrayLike, *, positions: Optional[IntArrayLike] = None,
          first: int = 0, scale: float = 1.0, out: Optional[ArrayLike] = None) -> ArrayLike:
    """posenc_embed_f32 / _bf16 / _f16 by the table's dtype: fmaf(scale, table[tokens], PE)."""
def embed_learned(table: ArrayLike, tokens: IntArrayLike, pos_table: ArrayLike, *,
                  positions: Optional[IntArrayLike] = None, first: int = 0, scale: float = 1.0,
                  out: Optional[ArrayLike] = None) -> ArrayLike:
    """posenc_embed_learned_f32: fmaf(scale, table[tokens], pos_table[positions])."""
def timesteps(spec: SpecLike, timesteps: Any, *, dtype: Optional[DType] = None,
              out: Optional[ArrayLike] = None) -> ArrayLike:
    """posenc_timesteps_f32 / _bf16 / _f16: (n, d_model) rows at real-valued positions (float64; float32,
    bfloat16, float16 and integer timesteps converted exactly)."""
def timesteps_add(spec: SpecLike, x: ArrayLike, timesteps: Any, *, scale: float = 1.0,
                  out: Optional[ArrayLike] = None) -> ArrayLike:
    """posenc_timesteps_add_f32: fmaf(scale, x, PE(t)); x (n, d) or (batch, n, d), timesteps (n,) or (batch, n)."""
def rope_types() -> Dict[str, Dict[str, Any]]: ...
def rope_init(rotary_dim: int, base: float = 10000.0, scaling: Optional[Mapping[str, Any]] = None, *,
              pairs: PairsLike = "halves", max_position_embeddings: Optional[int] = None,
              original_max_position_embeddings: Optional[int] = None, seq_len: Optional[int] = None) -> Rope:
    """posenc_rope_init from an HF rope_scaling / rope_parameters dict."""
def rope_sections(rope: Rope, sections: Sequence[int], layout: RopeLayoutLike = "chunked") -> Rope:
    """posenc_rope_sections: a new Rope whose pairs are assigned to axes from up to four section sizes."""
def rope_cache(rope: Rope, n: Optional[int] = None, first: int = 0, *,
               positions: Union[None, IntArrayLike, ArrayLike] = None,
               out: Union[None, ArrayLike, Tuple[ArrayLike, ArrayLike]] = None, twice: bool = False) -> Any:
    """posenc_rope_cache_f32: (cos, sin) of (n, r/2), into out=(cos, sin), or one (n, r) vLLM cache; multi-axis
    positions (axes, n) or the flat axis-major (axes * n,); floating positions: posenc_rope_cache_real_f32.
    twice=True: (cos, sin) of (n, r), each row its r/2 values twice (HF's cat(freqs, freqs))."""
def rope(rope: Rope, x: A, *, positions: Union[None, IntArrayLike, ArrayLike] = None, first: int = 0,
         heads_first: bool = False) -> A:
    """posenc_rope_f32 / _bf16 / _f16, in place; x (tokens, dim), (tokens, heads, dim), (batch, tokens, heads,
    dim), or with heads_first (heads, tokens, dim) / (batch, heads, tokens, dim). Positions (tokens,) or
    (batch, tokens); multi-axis (axes, tokens), (axes * tokens,) or (axes, batch, tokens); floating positions
    are real-valued (posenc_rope_real_*)."""
def rope_qk(rope: Rope, q: A, k: Optional[A], *, positions: Union[None, IntArrayLike, ArrayLike] = None,
            first: int = 0, heads_first: bool = False) -> Tuple[A, Optional[A]]:
    """posenc_rope_qk_*: q and k in one pass, in place (floating positions: posenc_rope_qk_real_*)."""
def rope_shift(rope: Rope, keys: A, delta: Union[int, IntArrayLike], *, heads_first: bool = False) -> A:
    """The context shift: cached keys rotated in place from their positions p to p + delta, attention scale 1."""
def rope_tables(x: A, cos: ArrayLike, sin: ArrayLike, *, pairs: str = "interleaved",
                heads_first: bool = False, out: Optional[A] = None) -> A:
    """The rotation by full-width tables (diffusers' apply_rotary_emb): each element the correctly rounded float32
    of x_j cos_j + x'_j sin_j (then bf16 / f16), into out, or x in place."""
def status_string(status: Status) -> str: ...
def version() -> str: ...
def active_isa() -> Isa: ...
def isa_name(isa: IsaLike) -> str: ...
def isa_available(isa: IsaLike) -> bool: ...
def available_isas() -> list[Isa]: ...
def force_isa(isa: IsaLike) -> None: ...
def set_num_threads(n: Optional[int]) -> None:
    """The threads a large call is split across, process-wide: n >= 1, or 0 / None for the default
    (torch.get_num_threads() when torch is imported, else the CPUs of this process's affinity)."""
def get_num_threads() -> int:
    """The threads a large call is split across now."""
