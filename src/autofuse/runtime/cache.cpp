#include "autofuse/runtime/cache.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "autofuse/runtime/cache_dir.h"
#include "autofuse/runtime/cache_entry.h"
#include "autofuse/runtime/hash.h"
#include "autofuse/runtime/isa.h"
#include "autofuse/support/env.h"

namespace autofuse {
namespace {

constexpr const char* kLayout = kCacheLayout;

std::atomic<int64_t> g_compiles{0}, g_disk_hits{0}, g_memory_hits{0}, g_rebuilt{0}, g_compiler_runs{0}, g_not_stored{0};

bool env_flag(const char* name) { return env_bool(name, false); }  // bad values warn once (support/env.h)

std::string sanitize_hint(const std::string& hint) {
  std::string out;
  for (char c : hint) {
    if (out.size() >= 48) break;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  return out.empty() ? std::string("kernel") : out;
}

/// The helper headers (af_*.h) of kernel_header_source_dir(): names and contents, sorted by name.
struct HeaderSet {
  std::vector<std::pair<std::string, std::string>> files;
  std::string hash;  // SHA-256 over names and contents
};

/// Reads the helper headers, memoised on the directory's and files' modification times.
HeaderSet load_headers() {
  static std::mutex mu;
  static std::string memo_stamp;
  static HeaderSet memo;
  std::string dir = kernel_header_source_dir();
  std::vector<std::string> names;
  std::string stamp = dir;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.rfind("af_", 0) == 0 && n.compare(n.size() - 2, 2, ".h") == 0) names.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  for (auto& n : names) {
    struct stat st;
    if (::stat((dir + "/" + n).c_str(), &st) == 0) {
      stamp += "|" + n + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
               std::to_string(st.st_mtim.tv_nsec);
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  if (stamp == memo_stamp && !memo.hash.empty()) return memo;
  HeaderSet set;
  Sha256 h;
  for (auto& n : names) {
    std::string text;
    if (!read_file(dir + "/" + n, &text)) continue;
    h.update_field(n);
    h.update_field(text);
    set.files.emplace_back(n, std::move(text));
  }
  set.hash = h.hex_digest();
  memo_stamp = stamp;
  memo = set;
  return set;
}

/// Copies the helper headers into v1/include/<hash>/ (once; atomic rename) and returns that directory; "" if there
/// are none.
std::string install_headers(const HeaderSet& set) {
  if (set.files.empty()) return "";
  std::string root = cache_subdir(std::string(kLayout) + "/include");
  std::string target = root + "/" + set.hash.substr(0, 24);
  struct stat st;
  if (::stat(target.c_str(), &st) == 0) return target;
  std::string tmp = cache_subdir(std::string(kLayout) + "/tmp") + "/include-" + unique_suffix();
  make_private_dirs(tmp);
  for (auto& [name, text] : set.files) write_file(tmp + "/" + name, text);
  if (::rename(tmp.c_str(), target.c_str()) != 0) remove_tree(tmp);  // lost the race: another copy is installed
  return target;
}

std::string compute_key(const std::string& source, const HeaderSet& headers) {
  const CompilerInfo& cc = compiler_info();
  Sha256 h;
  h.update_field("autofuse-kernel-cache-v1");
  h.update_field(source);
  h.update_field(headers.hash);
  for (auto& word : cc.command) h.update_field(word);
  h.update_field(cc.version);
  h.update_field(kernel_compile_flags());
  h.update_field(host_isa());
  return h.hex_digest();
}

/// Counts a source compiled but not stored (not_stored) and says so on stderr, once per process for each blocking
/// path: the file standing where v1, v1/kernels or the shard of `key` under `dir` should be (blocking_path), or the
/// shard itself when no such file is found (the directories could not be made). A file in place of a shard blocks
/// the keys of that shard only, and the warning gives `reason`; one in place of v1/kernels or v1 blocks every kernel,
/// and the warning says so, naming that path (not `reason`, which names the first kernel's shard).
void note_not_stored(const std::string& hint, const std::string& reason, const std::string& dir,
                     const std::string& key) {
  ++g_not_stored;
  const std::string shard = shard_dir_in(dir, key);
  std::string place = blocking_path(dir, key);
  if (place.empty()) place = shard;
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (!said.insert(place).second) return;
  if (place == shard)
    std::fprintf(stderr,
                 "autofuse: warning: kernel '%s' was compiled but cannot be stored in the kernel cache: %s; it runs "
                 "natively from a temporary copy, and each process compiles it (and any other kernel whose entry "
                 "belongs in %s) again until that is fixed\n",
                 hint.c_str(), reason.c_str(), place.c_str());
  else
    std::fprintf(stderr,
                 "autofuse: warning: kernel '%s' was compiled but cannot be stored in the kernel cache: %s is not a "
                 "directory, and every entry belongs under it, so no kernel can be stored: every kernel runs natively "
                 "from a temporary copy, and each process compiles all of them again until that path is fixed\n",
                 hint.c_str(), place.c_str());
}

/// Compiles source in a fresh temporary directory; returns that directory (holding kernel.so and the source).
/// On failure the source is moved to v1/failed/ and CompileError names it.
std::string build_in_temp(const std::string& source, const std::string& hint, const std::string& key,
                          const std::string& include_dir) {
  std::string tmp = cache_subdir(std::string(kLayout) + "/tmp") + "/build-" + key.substr(0, 16) + "-" + unique_suffix();
  make_private_dirs(tmp);
  std::string src = tmp + "/" + hint + ".cpp";
  write_file(src, source);
  try {
    std::vector<std::string> includes;
    if (!include_dir.empty()) includes.push_back(include_dir);
    run_compiler(src, tmp + "/kernel.so", includes);
    ++g_compiler_runs;
  } catch (const CompileError& e) {
    std::string kept = cache_subdir(std::string(kLayout) + "/failed") + "/" + hint + "-" + key.substr(0, 16) + ".cpp";
    if (::rename(src.c_str(), kept.c_str()) != 0)
      kept = src;
    else
      remove_tree(tmp);
    std::string why = e.what();  // run_compiler's summary line: the exit status, or the time limit
    why = why.substr(0, why.find('\n'));
    throw CompileError("kernel '" + hint + "' failed to compile: " + why, e.compiler_output(), kept, e.command());
  }
  return tmp;
}

/// Moves aside the cache directories on the way to `key`'s entry (v1, v1/kernels, v1/tmp, the key's shard) that
/// untrusted_reason refuses, to <dir>/untrusted-<suffix> (the root is private, so the rename is safe), and removes
/// them as far as this user can; the entry is then built afresh in new private directories. Warns on stderr once
/// per path. Review 29: entries that another user had planted below a root that was open for a while were loaded.
void quarantine_untrusted_dirs(const std::string& dir, const std::string& key) {
  const std::string v1 = dir + "/" + kLayout;
  for (const std::string& p : {v1, v1 + "/kernels", v1 + "/tmp", shard_dir_in(dir, key)}) {
    const std::string why = untrusted_reason(p);
    if (why.empty()) continue;
    const std::string aside = dir + "/untrusted-" + unique_suffix();
    if (::rename(p.c_str(), aside.c_str()) != 0) continue;  // another process moved it first
    static std::mutex mu;
    static std::set<std::string> said;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (said.insert(p).second)
        std::fprintf(stderr,
                     "autofuse: warning: kernel cache path %s %s: not trusted; moved aside to %s, and its kernels "
                     "are compiled again\n",
                     p.c_str(), why.c_str(), aside.c_str());
    }
    remove_tree(aside);
  }
}

/// The module of a verified disk entry (counted in disk_hits when `count_hit`), or null when there is none. An entry
/// that fails verification (an owner other than this user or a symbolic link (untrusted_reason), size, checksum,
/// key, dlopen, or one of `symbols` missing: another key's binary) is moved
/// out of the way atomically (a concurrent reader sees either it or nothing), counted in rebuilt_corrupt, and null is
/// returned so the caller rebuilds it.
std::shared_ptr<Module> load_entry(const std::string& dir, const std::string& key,
                                   const std::vector<std::string>& symbols, bool count_hit = true) {
  std::string entry = entry_dir_in(dir, key);
  quarantine_untrusted_dirs(dir, key);
  struct stat st;
  if (::stat(entry.c_str(), &st) != 0) return nullptr;
  if (verify_entry(entry, key)) {
    try {
      auto m = load_with_symbols(dir, entry + "/kernel.so", symbols);
      if (count_hit) ++g_disk_hits;
      return m;
    } catch (const std::runtime_error&) {
      // Falls through: a verified file that does not load, or lacks the kernel's symbol, is corrupt too.
    }
  }
  std::string trash = dir + "/" + kLayout + "/tmp/corrupt-" + key.substr(0, 16) + "-" + unique_suffix();
  if (::rename(entry.c_str(), trash.c_str()) == 0) {
    remove_tree(trash);
    ++g_rebuilt;
  }
  return nullptr;
}

/// Installs the build directory `tmp` (kernel.so, meta, source) as the entry of `key` by one atomic rename. False
/// when another thread or process installed the key first (tmp is then removed). Throws CacheDirError, leaving tmp
/// in place for the caller to load from, when the entry cannot be installed (its directories cannot be made, or a
/// file stands where one of them should be).
bool install_entry(const std::string& dir, const std::string& key, const std::string& tmp) {
  std::string entry = entry_dir_in(dir, key);
  try {
    make_private_dirs(shard_dir_in(dir, key));
  } catch (const CacheDirError& e) {
    throw CacheDirError(e.what() + blocking_file_note(dir, key));
  }
  if (::rename(tmp.c_str(), entry.c_str()) == 0) return true;
  int err = errno;
  if (err == ENOTEMPTY || err == EEXIST) {
    remove_tree(tmp);
    return false;
  }
  throw CacheDirError("cannot install kernel cache entry " + entry + ": " + std::strerror(err) +
                      blocking_file_note(dir, key));
}

std::function<void(const std::string&, const std::string&)> g_install_hook;  // set_cache_install_hook

/// The disk-cache path of compile_module: verify and load an entry, or build and install one. The lookup counts
/// once: a disk hit, or a compile, also when another thread or process installed the entry first and its entry is
/// loaded instead (the compiler ran for this lookup; *hit is false).
std::shared_ptr<Module> load_or_build(const std::string& dir, const std::string& key, const std::string& source,
                                      const std::string& hint, const std::string& include_dir,
                                      const std::vector<std::string>& symbols, bool* hit) {
  std::string entry = entry_dir_in(dir, key);
  bool compiled = false;  // built by this call (and counted in compiles), its install lost to another's
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (auto m = load_entry(dir, key, symbols, /*count_hit=*/!compiled)) {
      *hit = !compiled;
      return m;
    }
    std::string tmp = build_in_temp(source, hint, key, include_dir);
    std::string binary;
    if (!read_file(tmp + "/kernel.so", &binary)) {
      remove_tree(tmp);
      throw std::runtime_error("compiled kernel " + tmp + "/kernel.so cannot be read");
    }
    write_file(tmp + "/meta", meta_text(binary, hint + ".cpp", key));
    if (!compiled) ++g_compiles;
    compiled = true;
    if (g_install_hook) g_install_hook(tmp, entry);
    *hit = false;
    bool installed = false;
    try {
      installed = install_entry(dir, key, tmp);
    } catch (const CacheDirError& e) {  // this entry cannot be stored: the kernel still runs, from the build
      auto m = load_from_temp(dir, tmp, symbols);
      note_not_stored(hint, e.what(), dir, key);
      return m;
    }
    if (!installed) continue;  // another thread or process installed it first: use theirs
    return load_with_symbols(dir, entry + "/kernel.so", symbols);
  }
  throw std::runtime_error("kernel cache entry " + entry + " keeps failing verification after rebuilds");
}

/// AUTOFUSE_FORCE_DISABLE_CACHES: compile into a temporary directory, load, and delete the files.
std::shared_ptr<Module> compile_uncached(const std::string& dir, const std::string& source, const std::string& hint,
                                         const std::string& key, const std::string& include_dir,
                                         const std::vector<std::string>& symbols) {
  std::string tmp = build_in_temp(source, hint, key, include_dir);
  ++g_compiles;
  return load_from_temp(dir, tmp, symbols);
}

/// The symbols a request names: {symbol}, or none when it is empty.
std::vector<std::string> symbol_list(const std::string& symbol) {
  return symbol.empty() ? std::vector<std::string>{} : std::vector<std::string>{symbol};
}

/// Removes what crashed or killed processes left in v1/tmp (build and include directories, corrupt entries moved
/// aside) once they are an hour old; run once per process, on its first compile. Live builds are seconds old.
void sweep_stale_temporaries(const std::string& dir) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::error_code ec;
    auto now = std::filesystem::file_time_type::clock::now();
    for (auto& e : std::filesystem::directory_iterator(dir + "/" + kLayout + "/tmp", ec)) {
      auto mtime = std::filesystem::last_write_time(e.path(), ec);
      if (!ec && now - mtime > std::chrono::hours(1)) remove_tree(e.path().string());
    }
  });
}

std::mutex g_mu;
std::map<std::string, std::shared_future<std::shared_ptr<Module>>> g_loaded;  // cache_dir + "/" + key

/// One distinct source of a compile_modules call and what became of it.
struct BatchJob {
  const ModuleRequest* req = nullptr;
  std::string key, mkey, hint;
  std::vector<size_t> slots;                         // the requests with this source
  std::promise<std::shared_ptr<Module>> promise;     // set when this call owns the key (it is not loaded yet)
  std::shared_future<std::shared_ptr<Module>> wait;  // set when another caller owns it
  std::shared_ptr<Module> module;
  bool hit = false;
  std::exception_ptr error;
};

/// Compiles the jobs of one batch as one translation unit: their shared prefix once, then each job's rest in a
/// namespace of its own, so helpers defined after the prefix do not collide (the extern "C" entry points keep their
/// names). The binary is hard-linked into every job's entry (one inode: the dynamic loader maps it once, whichever
/// entry a later process loads first). If the batch does not compile, each job is compiled alone, so an error is
/// reported for the kernel that caused it and the others still load.
void build_batch(const std::string& dir, const std::vector<BatchJob*>& batch, const std::string& include_dir) {
  if (batch.size() == 1) {
    BatchJob& j = *batch[0];
    try {
      j.module = load_or_build(dir, j.key, j.req->source, j.hint, include_dir, symbol_list(j.req->symbol), &j.hit);
    } catch (...) {
      j.error = std::current_exception();
    }
    return;
  }
  const size_t prefix = batch[0]->req->shared_prefix;
  std::string tmp = cache_subdir(std::string(kLayout) + "/tmp") + "/batch-" + unique_suffix();
  std::string binary;
  try {
    make_private_dirs(tmp);
    std::string tu = batch[0]->req->source.substr(0, prefix);
    for (size_t i = 0; i < batch.size(); ++i) {
      tu += "\nnamespace af_batch_" + std::to_string(i) + " {  // " + batch[i]->hint + "\n";
      tu += batch[i]->req->source.substr(prefix);
      tu += "\n}  // namespace af_batch_" + std::to_string(i) + "\n";
    }
    write_file(tmp + "/batch.cpp", tu);
    std::vector<std::string> includes;
    if (!include_dir.empty()) includes.push_back(include_dir);
    run_compiler(tmp + "/batch.cpp", tmp + "/batch.so", includes);
    ++g_compiler_runs;
    if (!read_file(tmp + "/batch.so", &binary)) throw std::runtime_error("cannot read " + tmp + "/batch.so");
  } catch (...) {
    remove_tree(tmp);
    for (BatchJob* j : batch) build_batch(dir, {j}, include_dir);
    return;
  }
  g_compiles += static_cast<int64_t>(batch.size());
  std::shared_ptr<Module> shared;
  std::string first_entry;
  std::vector<std::pair<BatchJob*, std::string>> not_stored;  // members whose entry could not be installed, and why
  std::vector<std::string> symbols;
  for (BatchJob* j : batch) {
    if (!j->req->symbol.empty()) symbols.push_back(j->req->symbol);
    std::string mtmp;
    try {
      mtmp = cache_subdir(std::string(kLayout) + "/tmp") + "/member-" + unique_suffix();
      make_private_dirs(mtmp);
      if (::link((tmp + "/batch.so").c_str(), (mtmp + "/kernel.so").c_str()) != 0)
        write_file(mtmp + "/kernel.so", binary);  // no hard links here: a copy
      write_file(mtmp + "/" + j->hint + ".cpp", j->req->source);
      write_file(mtmp + "/meta", meta_text(binary, j->hint + ".cpp", j->key, batch.size()));
      if (install_entry(dir, j->key, mtmp) && first_entry.empty()) first_entry = entry_dir_in(dir, j->key);
    } catch (const std::exception& e) {
      if (!mtmp.empty()) remove_tree(mtmp);
      not_stored.emplace_back(j, e.what());
    }
  }
  try {
    // Every job's symbol is in this binary, whether or not its own entry was installed by this call.
    shared = load_with_symbols(dir, first_entry.empty() ? tmp + "/batch.so" : first_entry + "/kernel.so", symbols);
  } catch (...) {
    for (BatchJob* j : batch) j->error = std::current_exception();
  }
  for (BatchJob* j : batch) {
    if (shared) {
      j->module = shared;
      j->error = nullptr;
    }
  }
  if (shared)  // those members run from the batch's binary all the same
    for (auto& [j, why] : not_stored) note_not_stored(j->hint, why, dir, j->key);
  remove_tree(tmp);  // the entries keep the binary (hard links or copies); a mapping outlives its file
}

/// Splits the jobs into batches for `threads` workers: jobs of one shared prefix together (none: alone), each group
/// spread over at most `threads` batches, largest sources first onto the lightest batch (LPT), so the batches take
/// about equally long. Batches are returned largest first.
std::vector<std::vector<BatchJob*>> plan_batches(const std::vector<BatchJob*>& todo, int threads) {
  std::map<std::string, std::vector<BatchJob*>> groups;
  std::vector<std::vector<BatchJob*>> out;
  for (BatchJob* j : todo) {
    if (j->req->shared_prefix == 0 || j->req->shared_prefix > j->req->source.size())
      out.push_back({j});
    else
      groups[j->req->source.substr(0, j->req->shared_prefix)].push_back(j);
  }
  auto cost = [](const BatchJob* j) { return j->req->source.size() - j->req->shared_prefix; };
  for (auto& [prefix, jobs] : groups) {
    std::sort(jobs.begin(), jobs.end(), [&](auto* a, auto* b) { return cost(a) > cost(b); });
    const size_t n = std::min(jobs.size(), static_cast<size_t>(std::max(1, threads)));
    std::vector<std::vector<BatchJob*>> bins(n);
    std::vector<size_t> load(n, 0);
    for (BatchJob* j : jobs) {
      size_t b = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
      bins[b].push_back(j);
      load[b] += cost(j);
    }
    for (auto& b : bins) out.push_back(std::move(b));
  }
  auto total = [&](const std::vector<BatchJob*>& b) {
    size_t t = 0;
    for (auto* j : b) t += cost(j);
    return t;
  };
  std::sort(out.begin(), out.end(), [&](auto& a, auto& b) { return total(a) > total(b); });
  return out;
}

}  // namespace

std::string module_cache_key(const std::string& source) { return compute_key(source, load_headers()); }

std::string module_entry_dir(const std::string& key) { return entry_dir_in(cache_dir(), key); }

CompileResult compile_module(const std::string& source, const std::string& name_hint, const std::string& symbol) {
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  std::string hint = sanitize_hint(name_hint);
  std::string dir = cache_dir();
  sweep_stale_temporaries(dir);
  HeaderSet headers = load_headers();
  std::string include_dir = install_headers(headers);
  std::string key = compute_key(source, headers);

  if (env_flag("AUTOFUSE_FORCE_DISABLE_CACHES")) {
    auto m = compile_uncached(dir, source, hint, key, include_dir, symbol_list(symbol));
    return {m, false, elapsed()};
  }

  std::string mkey = dir + "/" + key;
  std::promise<std::shared_ptr<Module>> promise;
  {
    std::unique_lock<std::mutex> lock(g_mu);
    auto it = g_loaded.find(mkey);
    if (it != g_loaded.end()) {
      auto fut = it->second;
      lock.unlock();
      auto m = fut.get();  // waits if another thread is compiling it; rethrows its error
      ++g_memory_hits;
      return {m, true, elapsed()};
    }
    g_loaded.emplace(mkey, promise.get_future().share());
  }
  try {
    bool hit = false;
    auto m = load_or_build(dir, key, source, hint, include_dir, symbol_list(symbol), &hit);
    promise.set_value(m);
    return {m, hit, elapsed()};
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(g_mu);
      g_loaded.erase(mkey);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

std::vector<ModuleOutcome> compile_modules(const std::vector<ModuleRequest>& requests, int threads) {
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  std::vector<ModuleOutcome> out(requests.size());
  if (requests.empty()) return out;
  threads = std::max(1, threads);
  if (env_flag("AUTOFUSE_FORCE_DISABLE_CACHES")) {  // no cache entries to share: one compile each, as compile_module
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next++) < requests.size();) {
        try {
          out[i].result = compile_module(requests[i].source, requests[i].name_hint, requests[i].symbol);
        } catch (...) {
          out[i].error = std::current_exception();
        }
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    return out;
  }
  std::string dir, include_dir;
  HeaderSet headers;
  std::vector<BatchJob> jobs;
  jobs.reserve(requests.size());
  try {
    dir = cache_dir();
    sweep_stale_temporaries(dir);
    headers = load_headers();
    include_dir = install_headers(headers);
    std::map<std::string, size_t> by_key;
    for (size_t i = 0; i < requests.size(); ++i) {
      std::string key = compute_key(requests[i].source, headers);
      auto [it, fresh] = by_key.emplace(key, jobs.size());
      if (fresh) {
        jobs.emplace_back();
        jobs.back().req = &requests[i];
        jobs.back().key = key;
        jobs.back().mkey = dir + "/" + key;
        jobs.back().hint = sanitize_hint(requests[i].name_hint);
      }
      jobs[it->second].slots.push_back(i);
    }
  } catch (...) {
    for (auto& o : out) o.error = std::current_exception();
    return out;
  }
  // Claim each key in the in-memory map (or find who owns it), then look for the owned ones on disk.
  std::vector<BatchJob*> todo;
  for (BatchJob& j : jobs) {
    {
      std::lock_guard<std::mutex> lock(g_mu);
      auto it = g_loaded.find(j.mkey);
      if (it != g_loaded.end()) {
        j.wait = it->second;
        continue;
      }
      g_loaded.emplace(j.mkey, j.promise.get_future().share());
    }
    try {
      if ((j.module = load_entry(dir, j.key, symbol_list(j.req->symbol)))) {
        j.hit = true;
        continue;
      }
    } catch (...) {
      j.error = std::current_exception();
      continue;
    }
    todo.push_back(&j);
  }
  std::vector<std::vector<BatchJob*>> batches = plan_batches(todo, threads);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t b; (b = next++) < batches.size();) build_batch(dir, batches[b], include_dir);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min(batches.size(), static_cast<size_t>(threads)); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  // Publish the owned keys (errors are forgotten, so a later call retries), then wait for the others.
  for (BatchJob& j : jobs) {
    if (j.wait.valid()) continue;
    if (j.module) {
      j.promise.set_value(j.module);
    } else {
      if (!j.error) j.error = std::make_exception_ptr(std::runtime_error("kernel '" + j.hint + "' was not built"));
      {
        std::lock_guard<std::mutex> lock(g_mu);
        g_loaded.erase(j.mkey);
      }
      j.promise.set_exception(j.error);
    }
  }
  for (BatchJob& j : jobs) {
    if (j.wait.valid()) {
      try {
        j.module = j.wait.get();
        j.hit = true;
        ++g_memory_hits;
      } catch (...) {
        j.error = std::current_exception();
      }
    }
    const double seconds = elapsed();
    for (size_t i : j.slots) {
      if (j.module)
        out[i].result = CompileResult{j.module, j.hit, seconds};
      else
        out[i].error = j.error;
    }
  }
  return out;
}

void set_cache_install_hook(std::function<void(const std::string& tmp, const std::string& entry)> hook) {
  g_install_hook = std::move(hook);
}

CacheStats cache_stats() {
  return CacheStats{g_compiles.load(), g_disk_hits.load(),     g_memory_hits.load(),
                    g_rebuilt.load(),  g_compiler_runs.load(), g_not_stored.load()};
}

void reset_cache_stats() {
  g_compiles = 0;
  g_disk_hits = 0;
  g_memory_hits = 0;
  g_rebuilt = 0;
  g_compiler_runs = 0;
  g_not_stored = 0;
}

void clear_memory_cache() {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto it = g_loaded.begin(); it != g_loaded.end();) {
    // Entries still being compiled stay, so their waiters are not orphaned.
    if (it->second.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
      it = g_loaded.erase(it);
    else
      ++it;
  }
}

}  // namespace autofuse
