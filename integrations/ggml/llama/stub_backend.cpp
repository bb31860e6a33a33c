// A do-nothing ggml backend named "posenc", for testing the llama.cpp harness before and besides the real
// backend: loaded through GGML_BACKEND_PATH like posenc's (ggml_backend_load_all() -> ggml_backend_load()),
// it registers a registry "posenc" with no devices whose procedure "posenc_ggml_backend_counts" reports
// counters that never move. llama.cpp then computes everything on the CPU, so compare.py must find the logits
// unchanged and report that posenc computed 0 of the ROPE nodes: scripts/test_llama.sh checks both, which
// proves that the driver finds a registry by name, reads its counters and that a missing offload fails.
// Built like the real module, from posenc's declaration of ggml's interface (integrations/ggml/abi.hpp, with
// abi.cpp): the registry's api_version is that of the running ggml's version, so that one stub serves every
// ggml the real module does. ggml_version is resolved when ggml loads the stub, from the process.
#include <cstdint>
#include <string_view>

#include "abi.hpp"

extern "C" const char *ggml_version(void);

namespace {

using posenc_ggml::abi::Device;
using posenc_ggml::abi::Reg;

void counts(uint64_t c[5]) {  // posenc_ggml_backend_counts_t
  c[0] = c[1] = c[2] = c[3] = c[4] = 0;
}

const char *reg_name(Reg *) { return "posenc"; }

size_t reg_device_count(Reg *) { return 0; }

Device *reg_device(Reg *, size_t) { return nullptr; }

void *reg_proc(Reg *, const char *name) {
  return std::string_view(name) == "posenc_ggml_backend_counts" ? reinterpret_cast<void *>(counts) : nullptr;
}

Reg stub_reg = {
    /* .api_version = */ 0,
    /* .iface       = */ {reg_name, reg_device_count, reg_device, reg_proc},
    /* .context     = */ nullptr,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) Reg *ggml_backend_init(void) {
  posenc_ggml::abi::Version v;
  const posenc_ggml::abi::Epoch *epoch =
      posenc_ggml::abi::parse_version(ggml_version(), v) ? posenc_ggml::abi::epoch_of(v) : nullptr;
  if (!epoch) return nullptr;
  stub_reg.api_version = epoch->api_version;
  return &stub_reg;
}
