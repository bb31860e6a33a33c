// ggml's functions for the loadable module (abi.hpp, Api): looked up in the process that loaded it. ggml
// dlopens a backend with its own libraries already loaded, usually in the global scope (a program linked with
// them); where they were loaded locally (a host that dlopened libllama itself), every loaded object is asked in
// turn (dl_iterate_phdr, dlopen with RTLD_NOLOAD), so the module never links a ggml library by name: sonames
// differ between builds (libggml-base.so in llama.cpp's CMake build, libggml-base.so.0 in Debian's).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <string>
#include <vector>

#include "abi.hpp"

namespace posenc_ggml {
namespace abi {

namespace {

// The names of the loaded objects, collected while dl_iterate_phdr holds the loader's lock; they are opened only
// after it has returned (dlopen inside the callback would take the loader's locks in the other order than a
// concurrent dlopen does).
int collect_object(dl_phdr_info *info, size_t, void *data) {
  if (info->dlpi_name && info->dlpi_name[0]) static_cast<std::vector<std::string> *>(data)->push_back(info->dlpi_name);
  return 0;
}

void *lookup(const char *name) {
  if (void *p = dlsym(RTLD_DEFAULT, name)) return p;
  std::vector<std::string> objects;
  dl_iterate_phdr(collect_object, &objects);
  for (const std::string &object : objects) {
    void *handle = dlopen(object.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) continue;
    void *p = dlsym(handle, name);
    dlclose(handle);  // RTLD_NOLOAD took a reference; the object stays loaded by whoever loaded it
    if (p) return p;
  }
  return nullptr;
}

}  // namespace

bool load_api(Api &api, const char **missing) {
  void *slots[sizeof(kApiNames) / sizeof(kApiNames[0])];
  for (size_t i = 0; i < sizeof slots / sizeof slots[0]; ++i) {
    slots[i] = lookup(kApiNames[i]);
    if (!slots[i]) {
      if (missing) *missing = kApiNames[i];
      return false;
    }
  }
  std::memcpy(&api, slots, sizeof api);
  return true;
}

}  // namespace abi
}  // namespace posenc_ggml
