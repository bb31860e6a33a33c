// ggml's functions for the archive libggml-posenc.a (abi.hpp, Api): a program that links ggml itself
// registers the backend with ggml_backend_register(posenc_ggml_backend_reg()), and the linker resolves these
// declarations against that ggml. posenc's own declarations of ggml's exported C functions, with the
// parameter types of abi.hpp (the same machine types as ggml's: pointers, int for enums, the init struct).
#include "abi.hpp"

extern "C" {
const char *ggml_version(void);
const char *ggml_op_name(int op);
const char *ggml_type_name(int type);
void ggml_log_get(posenc_ggml::abi::LogCallback *cb, void **user);
posenc_ggml::abi::Device *ggml_backend_dev_by_type(int type);
void *ggml_backend_dev_buffer_type(posenc_ggml::abi::Device *dev);
bool ggml_backend_buft_is_host(void *buft);
posenc_ggml::abi::Backend *ggml_backend_dev_init(posenc_ggml::abi::Device *dev, const char *params);
posenc_ggml::abi::Reg *ggml_backend_dev_backend_reg(posenc_ggml::abi::Device *dev);
void *ggml_backend_reg_get_proc_address(posenc_ggml::abi::Reg *reg, const char *name);
int ggml_backend_graph_compute(posenc_ggml::abi::Backend *backend, void *graph);
void ggml_backend_free(posenc_ggml::abi::Backend *backend);
size_t ggml_graph_overhead_custom(size_t size, bool grads);
void *ggml_init(posenc_ggml::abi::InitParams params);
void ggml_free(void *ctx);
void *ggml_new_graph_custom(void *ctx, size_t size, bool grads);
void ggml_graph_add_node(void *graph, posenc_ggml::abi::Tensor *node);
int ggml_graph_n_nodes(void *graph);
posenc_ggml::abi::Tensor *ggml_graph_node(void *graph, int i);
}

namespace posenc_ggml {
namespace abi {

bool load_api(Api &api, const char **) {
  api = Api{ggml_version,
            ggml_op_name,
            ggml_type_name,
            ggml_log_get,
            ggml_backend_dev_by_type,
            ggml_backend_dev_buffer_type,
            ggml_backend_buft_is_host,
            ggml_backend_dev_init,
            ggml_backend_dev_backend_reg,
            ggml_backend_reg_get_proc_address,
            ggml_backend_graph_compute,
            ggml_backend_free,
            ggml_graph_overhead_custom,
            ggml_init,
            ggml_free,
            ggml_new_graph_custom,
            ggml_graph_add_node,
            ggml_graph_n_nodes,
            ggml_graph_node};
  return true;
}

}  // namespace abi
}  // namespace posenc_ggml
