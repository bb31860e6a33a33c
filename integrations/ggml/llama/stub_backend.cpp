// A do-nothing ggml backend named "posenc", for testing the llama.cpp harness before and besides the real
// backend: loaded through GGML_BACKEND_PATH like posenc's (ggml_backend_load_all() -> ggml_backend_load()),
// it registers a registry "posenc" with no devices whose procedure "posenc_ggml_backend_counts" reports
// counters that never move. llama.cpp then computes everything on the CPU, so compare.py must find the logits
// unchanged and report that posenc computed 0 of the ROPE nodes: scripts/test_llama.sh checks both, which
// proves that the driver finds a registry by name, reads its counters and that a missing offload fails.
// Uses ggml's backend interface header (ggml/src/ggml-backend-impl.h of the llama.cpp source), as every
// out-of-tree ggml backend does.
#include "ggml-backend-impl.h"

#include <cstdint>
#include <string_view>

namespace {

void counts(uint64_t c[5]) {  // posenc_ggml_backend_counts_t
  c[0] = c[1] = c[2] = c[3] = c[4] = 0;
}

const char *reg_name(ggml_backend_reg_t) { return "posenc"; }

size_t reg_device_count(ggml_backend_reg_t) { return 0; }

ggml_backend_dev_t reg_device(ggml_backend_reg_t, size_t) { return nullptr; }

void *reg_proc(ggml_backend_reg_t, const char *name) {
  return std::string_view(name) == "posenc_ggml_backend_counts" ? (void *)counts : nullptr;
}

ggml_backend_reg stub_reg = {
    /* .api_version = */ GGML_BACKEND_API_VERSION,
    /* .iface       = */ {reg_name, reg_device_count, reg_device, reg_proc},
    /* .context     = */ nullptr,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) ggml_backend_reg_t ggml_backend_init(void) { return &stub_reg; }
