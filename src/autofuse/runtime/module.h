// A loaded shared object holding compiled kernels.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

namespace autofuse {

/// A shared object that does not load (dlopen failed), or a loaded one that lacks a symbol asked for: the kernel's
/// binary exists but cannot be used. Distinct from CompileError (the compiler failed), so a message can say which.
class ModuleLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A shared object loaded with dlopen (RTLD_NOW | RTLD_LOCAL). Kernels are looked up by their extern "C" name.
/// The object stays loaded for the life of the Module; modules handed out by compile_module() are also kept by the
/// in-memory cache, so in practice they stay loaded until the process exits.
struct Module {
  /// Loads the shared object at path. Throws ModuleLoadError with dlerror()'s text if it cannot be loaded.
  static std::shared_ptr<Module> load(const std::string& path);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Address of an exported symbol. Throws ModuleLoadError naming the symbol and the file if it is absent.
  void* symbol(const std::string& name) const;
  /// Like symbol(), but nullptr when absent.
  void* find_symbol(const std::string& name) const;
  /// The file the module was loaded from (may have been removed since, for uncached compiles).
  const std::string& path() const { return path_; }

 private:
  Module(std::string path, void* handle) : path_(std::move(path)), handle_(handle) {}
  std::string path_;
  void* handle_ = nullptr;
};

}  // namespace autofuse
