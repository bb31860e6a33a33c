// Every text the `posenc` command shows about itself, in one place: the manual of the command and of each
// subcommand, printed by `posenc [COMMAND] --help` and `posenc help [COMMAND]`. docs/tools.md presents the
// same tool for the web; tests/test_tools.cpp checks that every option named here is described there.
#include "cli.hpp"

namespace cli {
namespace {

const char *const kPosenc = R"(NAME
    posenc - exact sinusoidal and rotary positional encodings from the command line

SYNOPSIS
    posenc COMMAND [OPTIONS]
    posenc help [COMMAND]
    posenc --help | --version

DESCRIPTION
    Every value posenc prints is the library's own: the correctly rounded sin and cos of the exact angle,
    identical on every instruction-set path.

COMMANDS
    table    a sinusoidal positional-encoding table, for any spec or framework convention
    rope     the cos/sin cache of a rotary scheme (RoPE), for any scaling or model preset
    info     version, compiled and active paths and why, CPU features, caches, non-temporal threshold
    check    self-test: every kernel on every available path against the scalar path, and known values

    posenc COMMAND --help shows the manual of a command.

EXIT STATUS
    0  done
    1  the library refused the request (its status is printed), a file could not be read or written,
       or a check failed
    2  a usage error (an unknown option, a missing or malformed value, also in a file of values)

ENVIRONMENT
    POSENC_ISA=scalar|avx2|avx512|neon  runs every call on that path; an unknown or unavailable name
    makes every call fail with "instruction set not available" (posenc info says why).
)";

const char *const kTable = R"(NAME
    posenc table - a sinusoidal positional-encoding table

SYNOPSIS
    posenc table --d-model N [--preset NAME [preset options]] [spec options] [positions | timesteps]
                 [output options]

DESCRIPTION
    Row r holds PE(p) for position p = first + r (or the r-th entry of --position-list, or the r-th
    timestep): for each pair i < h = floor(d/2), sin and cos of p * scale * base^(-i/D), placed by the
    layout; an odd d_model ends with one 0 column. posenc_table_f32 / _bf16 / _f16 (a run),
    posenc_rows_* (a list) or posenc_timesteps_* (real-valued timesteps: diffusion, flow matching).

SPEC
    --d-model N            row width (required)
    --preset NAME          a framework's convention (docs/conventions.md); the options below override it:
                             vaswani      interleaved, base 1e4, D = h, positions from 0 (the default)
                             marian       Hugging Face Marian: vaswani's frequencies in sin|cos halves
                             fairseq      sin|cos halves, D = h - 1, positions from padding_idx + 1
                             t2t          tensor2tensor get_timing_signal_1d: halves, base max/min,
                                          D = max(h - 1, 1), positions times min_timescale
                             ctranslate2  CTranslate2 / OpenNMT-tf: as fairseq, positions from 1
                             ggml         ggml timestep_embedding: cos|sin halves, base max_period
                             diffusers    diffusers get_timestep_embedding: halves, base max_period,
                                          D = h - downscale_freq_shift, scale = its scale
                             dit          latent diffusion / DiT timestep_embedding: cos|sin halves,
                                          base max_period, D = h
                             flux         Flux timestep_embedding: as dit, scale time_factor
                             whisper      Whisper sinusoids: sin|cos halves, base max_timescale,
                                          D = h - 1, positions from 0
    --padding-idx N        fairseq: padding_idx (default 1: positions from 2; a padding token is a
                           pad entry of --position-list)
    --min-timescale T      t2t: min_timescale (default 1)
    --max-timescale T      t2t, whisper: max_timescale (default 1e4)
    --max-period P         ggml, diffusers, dit, flux: max_period (default 1e4)
    --time-factor F        flux: time_factor (default 1000)
    --flip-sin-to-cos      diffusers: flip_sin_to_cos (cos first)
    --downscale-freq-shift S
                           diffusers: downscale_freq_shift (default 1)
    --layout L             interleaved, sin-cos-halves or cos-sin-halves
    --base B               frequency base (default 1e4)
    --denominator D        D in base^(-i/D); 0 means h (default)
    --scale S              position_scale (default 1; diffusers: its scale)
    --show-spec            print the resolved spec and first position, and nothing else

POSITIONS
    --positions N          N rows (default 10)
    --first P              the first position (default 0; the preset's origin: fairseq padding_idx + 1,
                           ctranslate2 1)
    --position-list LIST   one row per entry: integers, or pad for a zero row (POSENC_PAD), e.g.
                           0,1,2,pad,pad; excludes --first and --positions

TIMESTEPS
    --timesteps LIST       one row per real-valued position (any finite |t| < 2^31), e.g.
                           0.5,999,999.5 (decimal or hexadecimal floats, read exactly as doubles);
                           excludes --first, --positions, --position-list and --padding-idx
    --timesteps-file FILE  the same from a file (- for standard input): one number per line, or a
                           .npy array of one dimension, float64 (or float32, int64, int32, converted
                           exactly); excludes the same options and --timesteps

OUTPUT
    --format F             text (default), csv, npy or raw (little-endian, row-major, no header)
    --dtype T              f32 (default), bf16 or f16 (the library's bfloat16 / binary16 tables)
    --output FILE, -o FILE write to FILE instead of standard output (-: standard output; binary formats
                           are not written to a terminal)
    --decimals K           text and csv: K digits after the point (default: the shortest digits that
                           give back the exact value: 9 significant for f32, 4 for bf16, 5 for f16)
    --isa NAME             run on that path: scalar, avx2, avx512, neon (default: POSENC_ISA or the
                           best available)

    text: one row per line, values separated by spaces. csv: a header (position, then sin0, cos0, ... or
    the halves' names, and zero for the odd column), then one line per row starting with its position
    (pad for a padding row; with timesteps the header says timestep, and each row starts with its
    timestep, in the shortest digits that read back as it). npy: a (rows, d_model) array of float32
    ('<f4'), float16 ('<f2') or, for bf16, the bit patterns as uint16 ('<u2'; ml_dtypes:
    a.view(ml_dtypes.bfloat16)).

EXAMPLES
    posenc table --d-model 6 --positions 10 --decimals 4          the seeds' table
    posenc table --preset fairseq --d-model 512 --positions 1024 --format npy -o fairseq.npy
    posenc table --preset ggml --d-model 320 --position-list 0,250,999 --format csv
    posenc table --preset diffusers --flip-sin-to-cos --downscale-freq-shift 0 --d-model 320 \
                 --timesteps 999,999.5,0.25 --format npy -o sd_unet_t.npy
    posenc table --preset flux --d-model 256 --timesteps-file sigmas.txt --dtype bf16 --format csv
    posenc table --d-model 4096 --positions 8192 --dtype bf16 --format raw > pe.bf16
)";

const char *const kRope = R"(NAME
    posenc rope - the cos/sin cache of a rotary position embedding (RoPE)

SYNOPSIS
    posenc rope (--preset NAME | --rotary-dim R [--base B] [--rope-type TYPE ...] [--sections LIST])
                [positions] [output options]

DESCRIPTION
    Row t holds, for each pair i < h = r/2, m cos(a_i) then m sin(a_i) with a_i = p * position_scale * f_i,
    f_i = base^(-2i/r) or the frequencies of a scaling (posenc_rope_init), m = attention_scale: vLLM's
    cos_sin_cache. posenc_rope_cache_f32; bf16 and f16 rows are the library's rounding of the float32
    values (its bf16 / f16 rotation of unit vectors). A multi-axis scheme (M-RoPE of vision-language
    models, 2-D RoPE of vision towers) gives each token one position per axis, and pair i takes the
    position of its own axis (posenc_rope_sections).

SCHEME
    --preset NAME          a model's published parameters (posenc.hpp cites each):
                             llama2, llama3.1, mistral-7b-v0.2, qwen2, qwen2-yarn (r = 128 by default;
                             --rotary-dim R for another head size), phi3-mini-128k (r = 96; longrope
                             factors chosen by --seq-len), deepseek-v2, deepseek-v3 (r = 64, yarn,
                             interleaved), gpt-neox-20b (r = 24), gpt-j-6b (r = 64, interleaved),
                             gemma4-global (r = 512, base 1e6, proportional: 64 of 256 pairs rotate),
                             gemma4-sliding (r = 256, base 1e4), minimax-m3 (r = 64 of head 128, base
                             5e6), deepseek-v4 (r = 64 of head 512, base 1e4, interleaved),
                             deepseek-v4-compress (the same, base 1.6e5, yarn 16 from 65536, attention
                             1), glm5 (r = 64, base 1e6, interleaved), glm5-indexer (r = 64 of 128,
                             halves)
                           multi-axis, text (3 axes: temporal, height, width):
                             qwen2-vl, qwen2.5-vl (r = 128, base 1e6, chunked 16,24,24),
                             qwen3-vl (r = 128, base 5e6, interleaved 24,20,20),
                             glm-4v (r = 64 of head 128, base 1e4, interleaved pairs, chunked 8,12,12)
                           multi-axis, vision towers (2 axes: row, column; base 1e4):
                             qwen2-vl-vision, qwen2.5-vl-vision (r = 80, vision 20,20),
                             qwen3-vl-vision (r = 72, vision 18,18), pixtral (r = 64, strided 16,16),
                             llama4-vision (r = 88, vision 22,22, interleaved; axes column + 1, row + 1)
                           diffusion transformers (3 axes, per-axis frequencies, interleaved pairs):
                             flux, qwen-image (r = 128, base 1e4, per-axis 8,28,28), wan (r = 128,
                             22,21,21), hunyuan-video (r = 128, base 256, 8,28,28), cogvideox (r = 64,
                             8,12,12)
    --rotary-dim R         r: even, >= 2 (required without a preset)
    --base B               base of f_i (default 1e4; not with a preset)
    --rope-type TYPE       default, linear, dynamic, yarn, llama3, longrope or proportional (Hugging Face's
                           rope_type), or vLLM's ntk, deepseek_yarn, yarn_log, theta_scale (Grok's
                           extra_method) or telechat3, with its parameters (each only for the types
                           that read it):
    --factor F             every type but default (proportional: default 1)
    --partial-rotary-factor P
                           proportional: the share of the r/2 pairs that rotate, in (0, 1] (default 1;
                           int(P r // 2) of them, the rest not rotated: Gemma 4)
    --original N           original_max_position_embeddings: dynamic, yarn, llama3, longrope and vLLM's
                           deepseek_yarn, yarn_log, theta_scale, telechat3
    --seq-len N            dynamic, longrope, phi3-mini-128k: the current sequence length (default: the
                           largest position + 1, as Hugging Face)
    --alpha A              dynamic: vLLM's NTK alpha (HunYuan), base * A^(r/(r-2)); --factor, --original
                           and --seq-len are then not read
    --beta-fast B          yarn, deepseek_yarn, yarn_log, telechat3 (default 32)
    --beta-slow B          yarn, deepseek_yarn, yarn_log, telechat3 (default 1)
    --mscale M             yarn (DeepSeek; default unset), deepseek_yarn (default 1, vLLM's)
    --mscale-all-dim M     yarn (DeepSeek; default unset), deepseek_yarn (default 0, vLLM's)
    --mixed-b B            ntk: vLLM's mixed NTK exponent (> 0; default unset: fixed NTK)
    --extrapolation-factor E
                           deepseek_yarn, yarn_log, telechat3: in (0, 1] (default 1)
    --attn-factor A        deepseek_yarn, telechat3: multiplies the attention scale (default 1)
    --short-mscale M, --long-mscale M
                           longrope: vLLM's magnitude of each factor set (default: derived)
    --truncate 0|1         yarn (default 1, Hugging Face's)
    --low-freq-factor L    llama3
    --high-freq-factor H   llama3
    --short-factor LIST    longrope: r/2 comma-separated factors
    --long-factor LIST     longrope: r/2 comma-separated factors
    --attention-factor A   yarn, longrope (default 0: derived as Hugging Face does)
    --sections LIST        multi-axis: up to 4 section sizes in pairs (e.g. 16,24,24: Hugging Face's
                           mrope_section); not with a preset
    --sections-layout L    how the sections assign pairs to axes: chunked (default), interleaved (Qwen3-VL),
                           vision (the frequency index restarts per axis), strided (Pixtral),
                           interleaved_4 (ggml IMROPE), alternating (ERNIE-4.5-VL: t,h,w sections),
                           per_axis (each axis at its own width's frequencies: Flux, Wan) or balanced
                           (openPangu-VL: each axis spread evenly, t,h,w or h,w sections); '-' reads as '_'
    --pairs P              halves or interleaved (does not change the cache; --show-spec shows it)
    --position-scale S     multiplies every position (default 1)
    --attention-scale M    m, overriding the scheme's
    --show-spec            print the resolved spec (its frequencies, and a multi-axis scheme's axes and
                           axis of each pair, included), and nothing else

POSITIONS
    --positions N          N rows (default 10)
    --first P              the first position (default 0); every axis of a multi-axis scheme has it
    --position-list LIST   one row per entry: integers, or pad for a zero row (POSENC_PAD); every axis
                           of a multi-axis scheme has the same positions (text tokens)
    --axis-positions LISTS a multi-axis scheme's positions, one list per axis separated by /, axis 0
                           first: 0,1,4,4/0,1,4,5/0,1,5,4 is three rows of a temporal, height, width
                           scheme. pad only on axis 0 (the other axes of a padding row must still be
                           in range); one list per axis of the scheme; excludes the three above

OUTPUT
    --cache-layout L       cos-sin (default: rows of r values, cos then sin, vLLM's cos_sin_cache) or
                           separate (a cos array and a sin array of r/2 columns each, ONNX Runtime's
                           cos_cache / sin_cache: with --output FILE.EXT, FILE_cos.EXT and FILE_sin.EXT;
                           on standard output one after the other)
    --format F             text (default), csv, npy or raw (little-endian, row-major, no header); the
                           csv of a multi-axis scheme starts each row with one position column per axis
                           (position0, position1, ...)
    --dtype T              f32 (default), bf16 or f16
    --output FILE, -o FILE write to FILE instead of standard output
    --decimals K           text and csv: K digits after the point (default: the exact value's digits)
    --isa NAME             run on that path: scalar, avx2, avx512, neon

EXAMPLES
    posenc rope --preset llama3.1 --positions 4 --first 131068
    posenc rope --preset deepseek-v2 --position-list 0,4095,pad,163839 --format npy -o ds.npy
    posenc rope --rotary-dim 64 --rope-type yarn --factor 40 --original 4096 --mscale 0.707 \
                --mscale-all-dim 0.707 --show-spec
    posenc rope --preset qwen2 --positions 32768 --cache-layout separate --dtype f16 --format raw -o qwen
    posenc rope --preset qwen2.5-vl --axis-positions 0,1,2,2,2,2/0,1,2,2,3,3/0,1,2,3,2,3 --format csv
    posenc rope --rotary-dim 128 --base 1e6 --sections 16,24,24 --show-spec
)";

const char *const kInfo = R"(NAME
    posenc info - what this build of posenc runs on, and why

SYNOPSIS
    posenc info [--json]

DESCRIPTION
    Prints the library version, the paths compiled into this build, those this CPU and OS can run, the
    path kernel calls use and why (POSENC_ISA, or the best available), the CPU features the choice was made
    from (x86-64: the CPUID bits of AVX, FMA, F16C, AVX2, AVX-512 F/CD/DQ/BW/VL and whether the OS saves
    YMM and ZMM state; aarch64: Advanced SIMD is architectural), the cache sizes and the non-temporal
    threshold: on the AVX2 and AVX-512 paths, float32 outputs of at least that many bytes are written with
    non-temporal stores (3/4 of one thread's share of the last-level cache plus its L2).

OPTIONS
    --json                 the same as one JSON object
)";

const char *const kCheck = R"(NAME
    posenc check - a quick self-test of this build on this machine

SYNOPSIS
    posenc check [--quiet] [--large]

DESCRIPTION
    Runs a sample of every kernel (tables, rows, add, embeddings in f32 / bf16 / f16, learned positions,
    RoPE caches and rotations of q and k in f32 / bf16 / f16) on every path this machine can run, and
    requires each path's bytes to equal the scalar path's; then checks values known without MPFR on every
    path: the seeds' d = 6 table, sin and cos of integer angles, zero rows for padding, the definitions of
    the fused add, embeddings and rotation (one fma), and power-of-two attention scales. It ignores
    POSENC_ISA: each path is forced in turn. Well under a second.

OPTIONS
    --quiet                print only failures and the summary line
    --large                also write a table and a learned-position embedding past the non-temporal
                           threshold on every path (posenc info shows it: up to hundreds of MiB each;
                           seconds)

EXIT STATUS
    0  every check passed; 1  a check failed (each failure is printed); 2  a usage error
)";

}  // namespace

const char *manual(const std::string &command) {
  if (command == "posenc") return kPosenc;
  if (command == "table") return kTable;
  if (command == "rope") return kRope;
  if (command == "info") return kInfo;
  if (command == "check") return kCheck;
  return nullptr;
}

const std::vector<std::string> &commands() {
  static const std::vector<std::string> c = {"table", "rope", "info", "check"};
  return c;
}

}  // namespace cli
