// ggml's binary interface as the backend module meets it, declared here in posenc's own words so that one
// libggml-posenc.so, built with no ggml source and no ggml header, serves every ggml from 0.12.0 to 0.27.x
// (docs/ggml.md, "One module for every ggml").
//
// What a loadable backend shares with the ggml that loads it:
// - ggml_tensor, read by the backend: its layout is the same in every version of the window (ggml.h of 0.12.0
//   in llama.cpp 0253fb21f, of 0.21.0 in ggml d99724f2, and of 0.27.0 as Debian's libggml-dev installs it:
//   type, buffer, ne[4], nb[4], op, op_params[16], flags, src[10], view_src, view_offs, data, name[64], extra,
//   padding[8]). The numbers inside it are not: operations are renumbered between releases (0.15 inserted one
//   before TIMESTEP_EMBEDDING), so an operation or type is recognised by the name the running ggml gives it
//   (ggml_op_name, ggml_type_name), never by a number compiled in here.
// - The tables the backend fills, from ggml's src/ggml-backend-impl.h (not installed by any distribution):
//   the registry (api_version, four functions, context), the device (fifteen functions, reg, context) and the
//   backend (guid, sixteen functions, device, context). Their layout is one from 0.12.0 to 0.27.x; what an
//   epoch changes is the api_version ggml's loader demands (GGML_BACKEND_API_VERSION: 2 up to 0.26, 3 from
//   0.27.0, which added alloc_buffer_n and get_alloc_size_n to the buffer-type interface, a table this backend
//   never fills: its buffer type is the CPU backend's own). kEpochs below lists them with their sources.
// - ggml_backend_dev_props, written field by field into the caller's (zeroed) struct: caps.mmap_support exists
//   from 0.21 on and is left as ggml zeroed it.
// - The enum values the backend passes: ggml_status, ggml_log_level, ggml_backend_dev_type (CPU 0, ACCEL 3:
//   IGPU sits between GPU and ACCEL in every version of the window), GGML_TENSOR_FLAG_COMPUTE (16).
// - The functions of libggml-base and libggml it calls (Api): looked up in the process when ggml calls
//   ggml_backend_init (abi_dl.cpp), or linked where the backend is an archive in a program that links ggml
//   (abi_static.cpp). Their signatures are the same throughout the window.
#pragma once

#include <cstddef>
#include <cstdint>

namespace posenc_ggml {
namespace abi {

// --- the versions -------------------------------------------------------------------------------------------

struct Version {
  int major = 0, minor = 0, patch = 0;
  bool operator<(const Version &o) const {
    return major != o.major ? major < o.major : minor != o.minor ? minor < o.minor : patch < o.patch;
  }
};
// The leading "MAJOR.MINOR.PATCH" of ggml_version()'s string; false when it has none.
bool parse_version(const char *text, Version &out);

// One epoch of ggml's backend interface: versions [from, until), the api_version its loader requires of a
// registry, and where the layout was read.
struct Epoch {
  Version from, until;
  int api_version;
  const char *source;
};
inline constexpr Epoch kEpochs[] = {
    {{0, 12, 0},
     {0, 27, 0},
     2,
     "ggml 0.12.0 (llama.cpp 0253fb21f) and 0.21.0 (ggml d99724f2), src/ggml-backend-impl.h: "
     "GGML_BACKEND_API_VERSION 2"},
    {{0, 27, 0},
     {0, 28, 0},
     3,
     "ggml 0.27.0, src/ggml-backend-impl.h: GGML_BACKEND_API_VERSION 3 (the buffer-type interface gained "
     "alloc_buffer_n and get_alloc_size_n; the registry, device and backend tables kept their layout)"},
};
// The epoch of a version, or nullptr outside the window.
const Epoch *epoch_of(const Version &v);

// --- ggml.h ---------------------------------------------------------------------------------------------------

constexpr int kMaxDims = 4, kMaxSrc = 10, kMaxOpParams = 64, kMaxName = 64;

struct Tensor {
  int type;  // enum ggml_type
  void *buffer;
  int64_t ne[kMaxDims];
  size_t nb[kMaxDims];
  int op;  // enum ggml_op
  int32_t op_params[kMaxOpParams / sizeof(int32_t)];
  int32_t flags;
  Tensor *src[kMaxSrc];
  Tensor *view_src;
  size_t view_offs;
  void *data;
  char name[kMaxName];
  void *extra;
  char padding[8];
};
static_assert(sizeof(void *) != 8 || (offsetof(Tensor, op_params) == 84 && offsetof(Tensor, src) == 152 &&
                                      offsetof(Tensor, data) == 248 && sizeof(Tensor) == 336),
              "ggml_tensor's layout on 64-bit targets");

constexpr int32_t kFlagCompute = 16;  // GGML_TENSOR_FLAG_COMPUTE

enum Status : int { kStatusAllocFailed = -2, kStatusFailed = -1, kStatusSuccess = 0 };  // enum ggml_status
enum LogLevel : int { kLogDebug = 1, kLogInfo = 2, kLogWarn = 3, kLogError = 4 };       // enum ggml_log_level
enum DevType : int { kDevCpu = 0, kDevAccel = 3 };                                      // ggml_backend_dev_type

using LogCallback = void (*)(int level, const char *text, void *user);
struct InitParams {  // struct ggml_init_params
  size_t mem_size;
  void *mem_buffer;
  bool no_alloc;
};

// --- src/ggml-backend-impl.h, the tables a backend fills (one layout for both epochs) -----------------------

struct Backend;
struct Device;
struct Reg;
using Fn = void (*)();  // a member this backend leaves NULL

struct DevProps {  // ggml-backend.h, struct ggml_backend_dev_props
  const char *name;
  const char *description;
  size_t memory_free, memory_total;
  int type;
  const char *device_id;
  bool async, host_buffer, buffer_from_host_ptr, events;  // caps; mmap_support follows from 0.21 on
};

struct BackendIface {
  const char *(*get_name)(Backend *);
  void (*free)(Backend *);
  Fn set_tensor_async, get_tensor_async, set_tensor_2d_async, get_tensor_2d_async, cpy_tensor_async, synchronize;
  Fn graph_plan_create, graph_plan_free, graph_plan_update, graph_plan_compute;
  int (*graph_compute)(Backend *, void *graph);
  Fn event_record, event_wait, graph_optimize;
};
struct Backend {
  const uint8_t *guid;  // ggml_guid_t: 16 bytes
  BackendIface iface;
  Device *device;
  void *context;
};

struct DeviceIface {
  const char *(*get_name)(Device *);
  const char *(*get_description)(Device *);
  void (*get_memory)(Device *, size_t *free, size_t *total);
  int (*get_type)(Device *);
  void (*get_props)(Device *, DevProps *);
  Backend *(*init_backend)(Device *, const char *params);
  void *(*get_buffer_type)(Device *);
  Fn get_host_buffer_type, buffer_from_host_ptr;
  bool (*supports_op)(Device *, const Tensor *);
  bool (*supports_buft)(Device *, void *buft);
  Fn offload_op, event_new, event_free, event_synchronize;
};
struct Device {
  DeviceIface iface;
  Reg *reg;
  void *context;
};

struct RegIface {
  const char *(*get_name)(Reg *);
  size_t (*get_device_count)(Reg *);
  Device *(*get_device)(Reg *, size_t index);
  void *(*get_proc_address)(Reg *, const char *name);
};
struct Reg {
  int api_version;
  RegIface iface;
  void *context;
};
static_assert(sizeof(void *) != 8 || (sizeof(BackendIface) == 16 * 8 && sizeof(DeviceIface) == 15 * 8 &&
                                      offsetof(Reg, iface) == 8 && sizeof(Backend) == 19 * 8),
              "the tables' layouts on 64-bit targets");

// --- the functions of libggml-base and libggml the backend calls --------------------------------------------

struct Api {
  const char *(*version)();                                       // ggml_version
  const char *(*op_name)(int op);                                 // ggml_op_name
  const char *(*type_name)(int type);                             // ggml_type_name
  void (*log_get)(LogCallback *cb, void **user);                  // ggml_log_get
  Device *(*dev_by_type)(int type);                               // ggml_backend_dev_by_type
  void *(*dev_buffer_type)(Device *dev);                          // ggml_backend_dev_buffer_type
  bool (*buft_is_host)(void *buft);                               // ggml_backend_buft_is_host
  Backend *(*dev_init)(Device *dev, const char *params);          // ggml_backend_dev_init
  Reg *(*dev_backend_reg)(Device *dev);                           // ggml_backend_dev_backend_reg
  void *(*reg_get_proc_address)(Reg *reg, const char *name);      // ggml_backend_reg_get_proc_address
  int (*graph_compute)(Backend *backend, void *graph);            // ggml_backend_graph_compute
  void (*backend_free)(Backend *backend);                         // ggml_backend_free
  size_t (*graph_overhead_custom)(size_t size, bool grads);       // ggml_graph_overhead_custom
  void *(*init)(InitParams params);                               // ggml_init
  void (*free)(void *ctx);                                        // ggml_free
  void *(*new_graph_custom)(void *ctx, size_t size, bool grads);  // ggml_new_graph_custom
  void (*graph_add_node)(void *graph, Tensor *node);              // ggml_graph_add_node
  int (*graph_n_nodes)(void *graph);                              // ggml_graph_n_nodes
  Tensor *(*graph_node)(void *graph, int i);                      // ggml_graph_node
};
// The names of Api's members as ggml exports them, in Api's order.
inline constexpr const char *kApiNames[] = {"ggml_version",
                                            "ggml_op_name",
                                            "ggml_type_name",
                                            "ggml_log_get",
                                            "ggml_backend_dev_by_type",
                                            "ggml_backend_dev_buffer_type",
                                            "ggml_backend_buft_is_host",
                                            "ggml_backend_dev_init",
                                            "ggml_backend_dev_backend_reg",
                                            "ggml_backend_reg_get_proc_address",
                                            "ggml_backend_graph_compute",
                                            "ggml_backend_free",
                                            "ggml_graph_overhead_custom",
                                            "ggml_init",
                                            "ggml_free",
                                            "ggml_new_graph_custom",
                                            "ggml_graph_add_node",
                                            "ggml_graph_n_nodes",
                                            "ggml_graph_node"};
static_assert(sizeof(Api) == sizeof(kApiNames) / sizeof(kApiNames[0]) * sizeof(void *), "one name per member");

// Fills api with ggml's functions; on failure, false and the name of the first one missing in *missing.
// abi_dl.cpp (the module) looks them up in the process; abi_static.cpp (the archive) links them.
bool load_api(Api &api, const char **missing);

}  // namespace abi
}  // namespace posenc_ggml
