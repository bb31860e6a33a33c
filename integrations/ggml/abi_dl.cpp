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

#include "abi.hpp"

namespace posenc_ggml {
namespace abi {

namespace {

struct Search {
  const char *name;
  void *found;
};

int search_object(dl_phdr_info *info, size_t, void *data) {
  auto *s = static_cast<Search *>(data);
  if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
  void *handle = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return 0;
  s->found = dlsym(handle, s->name);
  dlclose(handle);  // RTLD_NOLOAD took a reference; the object stays loaded by whoever loaded it
  return s->found ? 1 : 0;
}

void *lookup(const char *name) {
  if (void *p = dlsym(RTLD_DEFAULT, name)) return p;
  Search s{name, nullptr};
  dl_iterate_phdr(search_object, &s);
  return s.found;
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
