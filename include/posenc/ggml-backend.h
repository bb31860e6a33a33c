/* posenc/ggml-backend.h: posenc as a ggml backend (docs/ggml.md, "The backend").
 *
 * A device of type GGML_BACKEND_DEVICE_TYPE_ACCEL named "posenc", whose buffer type is ggml's CPU buffer type
 * (it also takes every host buffer), and which supports exactly the nodes posenc computes: GGML_OP_ROPE and
 * GGML_OP_ROPE_BACK in every mode of ggml's RoPE (NORMAL, NEOX, MROPE, IMROPE, VISION; F32 and F16; views,
 * in place, freq_factors, YaRN, the rotated window at an offset), and GGML_OP_TIMESTEP_EMBEDDING. ggml's
 * scheduler gives every such node of a CPU graph to it, as it gives the matrix products to the BLAS backend,
 * and keeps every other node on ggml's CPU backend: a program on ggml (llama.cpp, whisper.cpp,
 * stable-diffusion.cpp) gets posenc's exact rotation with no change to its source.
 *
 * - Dynamic builds of ggml (-DGGML_BACKEND_DL=ON, as llama.cpp's release binaries): libggml-posenc.so is a
 *   loadable backend. Name it in the environment, GGML_BACKEND_PATH=/path/to/libggml-posenc.so, and
 *   ggml_backend_load_all() (which llama_backend_init() calls) loads it; or call ggml_backend_load(path).
 * - Static builds, and programs that link ggml themselves: libggml-posenc.a, and one call before the first
 *   use of the registry, ggml_backend_register(posenc_ggml_backend_reg()).
 *
 * One module for every ggml from 0.12.0 to 0.27.x (scripts/build_ggml_backend.sh, or meson
 * -Dggml_backend=enabled; no ggml needed to build it): at registration it reads the running ggml's
 * ggml_version() and answers with that version's backend interface (GGML_BACKEND_API_VERSION 2 up to 0.26,
 * 3 from 0.27.0); it recognises operations and types by the names ggml gives them (ggml_op_name,
 * ggml_type_name), never by number. Outside that window it does not register, and says so in one line of
 * ggml's log. POSENC_GGML_STATS=1 in the environment makes it print one line of what it did when the process
 * ends.
 *
 * A node the device accepted is always computed: each cos and sin correctly rounded from the exact angle
 * (docs/ggml.md, "What is computed"), the bytes the same for every thread count. Values posenc cannot take,
 * which only the data reveals (a position of -2^31, a freq_factor of 0, inf or NaN, a timestep that is not
 * finite or has |t| >= 2^31), are computed by ggml's CPU backend for that node, as without posenc.
 *
 * Threads: the count the program sets through the registry's procedure "ggml_backend_set_n_threads" (as for
 * ggml's CPU and BLAS backends; llama.cpp sets it before every graph), GGML_DEFAULT_N_THREADS before that. The
 * threads are OpenMP's when the backend is built with OpenMP, as ggml's CPU backend is by default, so that both
 * use one team of threads. */
#ifndef POSENC_GGML_BACKEND_H
#define POSENC_GGML_BACKEND_H

#include <ggml-backend.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The backend's registry (one device, "posenc"), for ggml_backend_register; NULL when the ggml in the process
 *  is outside the versions the backend supports (one line in ggml's log says which). */
ggml_backend_reg_t posenc_ggml_backend_reg(void);

/** The registry procedure "posenc_ggml_backend_counts" (ggml_backend_reg_get_proc_address) has this type: it
 *  writes the numbers of nodes the backend has computed since the process started, [0] GGML_OP_ROPE, [1]
 *  GGML_OP_ROPE_BACK, [2] GGML_OP_TIMESTEP_EMBEDDING, [3] graphs (the scheduler's splits) computed, [4] nodes
 *  that went to ggml's CPU backend for values posenc cannot take (counted in 0-2 too). */
typedef void (*posenc_ggml_backend_counts_t)(uint64_t counts[5]);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POSENC_GGML_BACKEND_H */
