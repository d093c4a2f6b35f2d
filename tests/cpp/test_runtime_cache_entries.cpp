// Tests of damaged kernel cache entries that pass the size and checksum check (another key's files: rebuilt, counted
// in rebuilt_corrupt) and of entries that cannot be stored (a file where the shard directory should be: the module
// still loads, from a temporary copy, counted in not_stored, with one accurate warning). Review 18, finding 7; a file
// in place of v1/kernels itself gives one warning naming that path, not one per shard (review 18b, finding 4).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "autofuse/runtime/cache.h"
#include "autofuse/runtime/cache_dir.h"
#include "cache_test_util.h"

namespace autofuse {
namespace {

class CacheEntries : public FreshCacheDirTest {};

/// A kernel source exporting af_<name>(x) = x + value.
std::string named_source(const std::string& name, int value) {
  return "extern \"C\" int af_" + name + "(int x) { return x + " + std::to_string(value) + "; }\n";
}

int call(const CompileResult& r, const std::string& name, int x) {
  return reinterpret_cast<int (*)(int)>(r.module->symbol("af_" + name))(x);
}

/// Fills `a`'s entry with `b`'s kernel.so and meta (a self-consistent entry of another key); `keep_key`: false drops
/// the meta's key line, as in entries written before it was recorded (then only the symbol check can tell).
void put_other_entry(const std::string& a, const std::string& b, bool keep_key) {
  namespace fs = std::filesystem;
  fs::copy_file(b + "/kernel.so", a + "/kernel.so", fs::copy_options::overwrite_existing);
  std::string meta;
  ASSERT_TRUE(read_file(b + "/meta", &meta));
  if (!keep_key) meta = meta.substr(0, meta.find("key "));
  write_file(a + "/meta", meta);
}

TEST_F(CacheEntries, EntryHoldingAnotherKeysFilesIsRebuilt) {
  const std::string src_a = named_source("alpha", 100), src_b = named_source("beta", 200);
  const std::string entry_a = module_entry_dir(module_cache_key(src_a));
  const std::string entry_b = module_entry_dir(module_cache_key(src_b));
  for (bool keep_key : {true, false}) {
    {
      CompileResult a = compile_module(src_a, "alpha", "af_alpha");
      CompileResult b = compile_module(src_b, "beta", "af_beta");
      EXPECT_EQ(call(a, "alpha", 1), 101);
      EXPECT_EQ(call(b, "beta", 1), 201);
    }
    clear_memory_cache();  // the last references: both objects are unloaded before the files are swapped
    put_other_entry(entry_a, entry_b, keep_key);
    reset_cache_stats();
    CompileResult a = compile_module(src_a, "alpha", "af_alpha");
    EXPECT_EQ(call(a, "alpha", 2), 102) << "keep_key " << keep_key;
    CacheStats s = cache_stats();
    EXPECT_EQ(s.rebuilt_corrupt, 1) << "keep_key " << keep_key;
    EXPECT_EQ(s.compiles, 1) << "keep_key " << keep_key;
    EXPECT_EQ(s.disk_hits, 0) << "keep_key " << keep_key;
    // The rebuilt entry is a plain disk hit for the next lookup.
    a = CompileResult{};
    clear_memory_cache();
    reset_cache_stats();
    a = compile_module(src_a, "alpha", "af_alpha");
    EXPECT_TRUE(a.cache_hit);
    EXPECT_EQ(cache_stats().disk_hits, 1);
    EXPECT_EQ(cache_stats().rebuilt_corrupt, 0);
    a = CompileResult{};
    clear_memory_cache();
  }
}

TEST_F(CacheEntries, WrongObjectStillLoadedUnderTheEntryPathIsNotReused) {
  // dlopen returns an object already loaded under the same path: here the wrong binary stays loaded (held below)
  // while its entry is rebuilt, so the rebuilt entry must be loaded under another name.
  const std::string src_a = named_source("gamma", 300), src_b = named_source("delta", 400);
  const std::string entry_a = module_entry_dir(module_cache_key(src_a));
  const std::string entry_b = module_entry_dir(module_cache_key(src_b));
  compile_module(src_a, "gamma", "af_gamma");
  compile_module(src_b, "delta", "af_delta");
  clear_memory_cache();
  put_other_entry(entry_a, entry_b, /*keep_key=*/false);
  std::shared_ptr<Module> stale = Module::load(entry_a + "/kernel.so");
  ASSERT_EQ(stale->find_symbol("af_gamma"), nullptr);
  reset_cache_stats();
  CompileResult a = compile_module(src_a, "gamma", "af_gamma");
  EXPECT_EQ(call(a, "gamma", 3), 303);
  EXPECT_EQ(cache_stats().rebuilt_corrupt, 1);
}

TEST_F(CacheEntries, FreshBuildLackingTheSymbolIsALoadError) {
  EXPECT_THROW(compile_module(named_source("epsilon", 1), "epsilon", "af_not_there"), ModuleLoadError);
}

/// A source of the adder family whose key has the same first two hex digits (the same shard) as `key`.
std::string source_in_shard_of(const std::string& key, int start) {
  for (int v = start;; ++v) {
    std::string s = named_source("zeta", v);
    if (module_cache_key(s).compare(0, 2, key, 0, 2) == 0) return s;
  }
}

TEST_F(CacheEntries, FileInPlaceOfShardDirectoryStillRunsNatively) {
  const std::string src = named_source("eta", 7);
  const std::string entry = module_entry_dir(module_cache_key(src));
  const std::string shard = entry.substr(0, entry.rfind('/'));
  std::filesystem::create_directories(std::filesystem::path(shard).parent_path());
  write_file(shard, "x\n");                            // a stray file where the shard directory belongs
  const std::string other = named_source("theta", 8);  // very likely another shard: it is stored as usual

  testing::internal::CaptureStderr();
  CompileResult r = compile_module(src, "eta", "af_eta");
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(call(r, "eta", 1), 8);
  EXPECT_FALSE(r.cache_hit);
  CacheStats s = cache_stats();
  EXPECT_EQ(s.compiles, 1);
  EXPECT_EQ(s.not_stored, 1);
  EXPECT_NE(err.find(shard + " is not a directory"), std::string::npos) << err;
  EXPECT_NE(err.find("kernel 'eta' was compiled but cannot be stored"), std::string::npos) << err;
  EXPECT_NE(err.find("runs natively"), std::string::npos) << err;

  // Another key of the same shard: also runs, not stored, and the warning is not repeated.
  const std::string same_shard = source_in_shard_of(module_cache_key(src), 1000);
  testing::internal::CaptureStderr();
  CompileResult r2 = compile_module(same_shard, "zeta", "af_zeta");
  err = testing::internal::GetCapturedStderr();
  EXPECT_GE(call(r2, "zeta", 0), 1000);
  EXPECT_EQ(cache_stats().not_stored, 2);
  EXPECT_EQ(err, "");

  // Kernels of other shards are stored and load from disk as usual.
  if (module_cache_key(other).compare(0, 2, module_cache_key(src), 0, 2) != 0) {
    compile_module(other, "theta", "af_theta");
    clear_memory_cache();
    reset_cache_stats();
    EXPECT_TRUE(compile_module(other, "theta", "af_theta").cache_hit);
    EXPECT_EQ(cache_stats().disk_hits, 1);
  }
}

TEST_F(CacheEntries, BatchMemberWhoseShardIsAFileStillRuns) {
  const std::string pre = "// shared preamble\n";
  std::vector<ModuleRequest> reqs = {{pre + named_source("iota", 1), "iota", pre.size(), "af_iota"},
                                     {pre + named_source("kappa", 2), "kappa", pre.size(), "af_kappa"}};
  const std::string entry = module_entry_dir(module_cache_key(reqs[0].source));
  const std::string shard = entry.substr(0, entry.rfind('/'));
  std::filesystem::create_directories(std::filesystem::path(shard).parent_path());
  write_file(shard, "x\n");
  testing::internal::CaptureStderr();
  std::vector<ModuleOutcome> out = compile_modules(reqs, 1);  // one thread: both in one batch
  std::string err = testing::internal::GetCapturedStderr();
  ASSERT_EQ(out.size(), 2u);
  for (const ModuleOutcome& o : out) ASSERT_FALSE(o.error);
  EXPECT_EQ(call(out[0].result, "iota", 1), 2);
  EXPECT_EQ(call(out[1].result, "kappa", 1), 3);
  EXPECT_EQ(cache_stats().compiler_runs, 1);
  const bool same_shard = module_cache_key(reqs[1].source).compare(0, 2, module_cache_key(reqs[0].source), 0, 2) == 0;
  EXPECT_EQ(cache_stats().not_stored, same_shard ? 2 : 1);
  EXPECT_NE(err.find(shard + " is not a directory"), std::string::npos) << err;
}

/// How many times `needle` occurs in `text`.
size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

TEST_F(CacheEntries, FileInPlaceOfKernelsDirectoryWarnsOnceNamingIt) {
  // Before the fix each kernel of another shard printed its own warning naming v1/kernels/<xx> (a single shard).
  const std::vector<std::string> names = {"lambda", "mu", "nu", "xi"};
  const std::string kernels = dir_ + "/v1/kernels";
  std::filesystem::create_directories(dir_ + "/v1");
  write_file(kernels, "x\n");  // a stray file where the kernels directory belongs
  testing::internal::CaptureStderr();
  for (size_t i = 0; i < names.size(); ++i) {
    CompileResult r = compile_module(named_source(names[i], 10 + static_cast<int>(i)), names[i], "af_" + names[i]);
    EXPECT_EQ(call(r, names[i], 1), 11 + static_cast<int>(i)) << names[i];
    EXPECT_FALSE(r.cache_hit) << names[i];
  }
  // A batch: its members are not stored either, and the warning is not repeated.
  const std::string pre = "// shared preamble\n";
  std::vector<ModuleRequest> reqs = {{pre + named_source("omicron", 1), "omicron", pre.size(), "af_omicron"},
                                     {pre + named_source("pi", 2), "pi", pre.size(), "af_pi"},
                                     {pre + named_source("rho", 3), "rho", pre.size(), "af_rho"}};
  std::vector<ModuleOutcome> out = compile_modules(reqs, 1);
  std::string err = testing::internal::GetCapturedStderr();
  ASSERT_EQ(out.size(), 3u);
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_FALSE(out[i].error) << i;
    EXPECT_EQ(call(out[i].result, reqs[i].name_hint, 1), 2 + static_cast<int>(i));
  }
  EXPECT_EQ(cache_stats().not_stored, 7);
  EXPECT_EQ(count_of(err, "cannot be stored in the kernel cache"), 1u) << err;
  EXPECT_EQ(count_of(err, "autofuse: warning"), 1u) << err;
  EXPECT_NE(err.find("kernel 'lambda' was compiled but cannot be stored"), std::string::npos) << err;
  EXPECT_NE(err.find(kernels + " is not a directory, and every entry belongs under it, so no kernel can be stored: "
                               "every kernel runs natively"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find(kernels + "/"), std::string::npos) << err;  // names no shard
  EXPECT_FALSE(std::filesystem::is_directory(kernels));
}

}  // namespace
}  // namespace autofuse
