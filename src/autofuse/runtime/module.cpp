#include "autofuse/runtime/module.h"

#include <dlfcn.h>

#include <stdexcept>

namespace autofuse {

std::shared_ptr<Module> Module::load(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    throw ModuleLoadError("cannot load kernel module " + path + ": " + (err ? err : "unknown dlopen error"));
  }
  return std::shared_ptr<Module>(new Module(path, handle));
}

Module::~Module() {
  if (handle_ != nullptr) dlclose(handle_);
}

void* Module::find_symbol(const std::string& name) const {
  dlerror();
  return dlsym(handle_, name.c_str());
}

void* Module::symbol(const std::string& name) const {
  void* p = find_symbol(name);
  if (p == nullptr) throw ModuleLoadError("kernel module " + path_ + " has no symbol '" + name + "'");
  return p;
}

}  // namespace autofuse
