// Tests of compile_modules (batched compiles): one compiler run per batch, per-source cache entries that
// compile_module finds, corrupt members, failing members, identical and concurrent requests, Kernel::compile_many.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/parser.h"
#include "autofuse/runtime/cache.h"
#include "cache_test_util.h"

namespace autofuse {
namespace {

class RuntimeBatch : public FreshCacheDirTest {};

/// A shared preamble and a per-source rest: a helper of the same name in each rest (legal only in a namespace of its
/// own), and an entry point af_v<value> returning x + value * helper().
const char* kPrefix = "// preamble\ninline int af_twice(int x) { return 2 * x; }\n";
ModuleRequest request(int value, const std::string& body_extra = "") {
  std::string rest = "static int helper() { return af_twice(" + std::to_string(value) + ") / 2; }\n" + body_extra +
                     "extern \"C\" int af_v" + std::to_string(value) + "(int x) { return x + helper(); }\n";
  return ModuleRequest{std::string(kPrefix) + rest, "v" + std::to_string(value), std::string(kPrefix).size(),
                       "af_v" + std::to_string(value)};
}

int call(const std::shared_ptr<Module>& m, int value, int x) {
  return reinterpret_cast<int (*)(int)>(m->symbol("af_v" + std::to_string(value)))(x);
}

ino_t inode(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_ino;
}

TEST_F(RuntimeBatch, OneCompilerRunPerBatchAndEntriesPerSource) {
  std::vector<ModuleRequest> reqs = {request(3), request(5), request(7), request(5)};  // the 5 twice
  auto out = compile_modules(reqs, 1);
  ASSERT_EQ(out.size(), 4u);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_FALSE(out[i].error) << i;
  EXPECT_EQ(call(out[0].result.module, 3, 1), 4);
  EXPECT_EQ(call(out[1].result.module, 5, 1), 6);
  EXPECT_EQ(call(out[2].result.module, 7, 1), 8);
  EXPECT_EQ(out[3].result.module, out[1].result.module);
  EXPECT_EQ(cache_stats().compiles, 3) << "three distinct sources";
  EXPECT_EQ(cache_stats().compiler_runs, 1) << "one batch on one thread";
  // Each source has its own entry, keyed as compile_module keys it; all hold one binary (hard links).
  std::string e3 = module_entry_dir(module_cache_key(reqs[0].source)),
              e7 = module_entry_dir(module_cache_key(reqs[2].source));
  EXPECT_EQ(inode(e3 + "/kernel.so"), inode(e7 + "/kernel.so"));
  EXPECT_TRUE(std::filesystem::exists(e7 + "/v7.cpp"));
  // A new process (here: the memory cache forgotten) finds each member through compile_module.
  clear_memory_cache();
  CompileResult again = compile_module(reqs[2].source, "v7");
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(call(again.module, 7, 10), 17);
  EXPECT_EQ(cache_stats().disk_hits, 1);
  EXPECT_EQ(cache_stats().compiles, 3);
}

TEST_F(RuntimeBatch, TwoThreadsMakeTwoBatches) {
  auto out = compile_modules({request(11), request(12), request(13), request(14)}, 2);
  for (auto& o : out) ASSERT_FALSE(o.error);
  EXPECT_EQ(cache_stats().compiles, 4);
  EXPECT_EQ(cache_stats().compiler_runs, 2);
  for (int v = 11; v <= 14; ++v) EXPECT_EQ(call(out[static_cast<size_t>(v - 11)].result.module, v, 0), v);
}

TEST_F(RuntimeBatch, CorruptMemberIsRebuiltAloneOthersHit) {
  std::vector<ModuleRequest> reqs = {request(21), request(22), request(23)};
  ASSERT_FALSE(compile_modules(reqs, 1)[0].error);
  clear_memory_cache();
  reset_cache_stats();
  // Damage one member's binary: a copy replaces the hard link, so the other members keep the good one.
  std::string e22 = module_entry_dir(module_cache_key(reqs[1].source));
  std::filesystem::remove(e22 + "/kernel.so");
  {
    std::FILE* f = std::fopen((e22 + "/kernel.so").c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("not an ELF file", f);
    std::fclose(f);
  }
  auto out = compile_modules(reqs, 1);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_FALSE(out[i].error) << i;
  EXPECT_EQ(call(out[1].result.module, 22, 1), 23);
  EXPECT_EQ(cache_stats().rebuilt_corrupt, 1);
  EXPECT_EQ(cache_stats().compiles, 1) << "only the corrupt member is compiled again";
  EXPECT_EQ(cache_stats().disk_hits, 2);
}

TEST_F(RuntimeBatch, FailingMemberGetsItsErrorOthersLoad) {
  std::vector<ModuleRequest> reqs = {request(31), request(32, "int broken( {\n"), request(33)};
  auto out = compile_modules(reqs, 1);
  ASSERT_TRUE(out[1].error);
  try {
    std::rethrow_exception(out[1].error);
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("v32"), std::string::npos) << e.what();
  }
  ASSERT_FALSE(out[0].error);
  ASSERT_FALSE(out[2].error);
  EXPECT_EQ(call(out[0].result.module, 31, 0), 31);
  EXPECT_EQ(call(out[2].result.module, 33, 0), 33);
  EXPECT_EQ(cache_stats().compiles, 2) << "after the batch failed, each member alone: two succeed";
  // The failure is not cached: a fixed source compiles.
  EXPECT_FALSE(compile_modules({request(32)}, 1)[0].error);
}

TEST_F(RuntimeBatch, ConcurrentCallsShareWork) {
  std::vector<ModuleRequest> reqs = {request(41), request(42), request(43)};
  std::vector<std::vector<ModuleOutcome>> outs(4);
  std::vector<std::thread> ts;
  for (size_t t = 0; t < outs.size(); ++t) ts.emplace_back([&, t] { outs[t] = compile_modules(reqs, 2); });
  for (auto& t : ts) t.join();
  for (auto& out : outs)
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_FALSE(out[i].error) << i;
      EXPECT_EQ(call(out[i].result.module, 41 + static_cast<int>(i), 1), 42 + static_cast<int>(i));
    }
  EXPECT_EQ(cache_stats().compiles, 3) << "each source compiled once in the process";
}

TEST_F(RuntimeBatch, CompileManyCompilesIdenticalKernelsOnce) {
  // Two graphs of one structure under other names (a model's repeated layers), and a third of another structure.
  Graph a = parse_graph(
      "graph layer0(%x: f32[n, 8], %y: f32[n, 8]) {\n  %s = add(%x, %y)\n  %t = exp(%s)\n"
      "  return %t\n}\n");
  Graph b = parse_graph(
      "graph layer1(%p: f32[m, 8], %q: f32[m, 8]) {\n  %u = add(%p, %q)\n  %w = exp(%u)\n"
      "  return %w\n}\n");
  Graph c = parse_graph("graph other(%x: f32[n, 8]) {\n  %t = neg(%x)\n  return %t\n}\n");
  Graph bad = parse_graph(
      "graph two_axes(%x: f32[4, 8]) {\n  %r = sum(%x) {axes=[0], keepdim=true}\n"
      "  %s = sum(%x) {axes=[1], keepdim=true}\n  return %r, %s\n}\n");
  auto out = Kernel::compile_many({a, b, c, bad}, 2);
  ASSERT_EQ(out.size(), 4u);
  for (size_t i = 0; i < 3; ++i) ASSERT_TRUE(out[i].kernel) << i;
  const bool bad_compiles = !kernel_unsupported_reason(bad).has_value();
  EXPECT_EQ(cache_stats().compiles, bad_compiles ? 3 : 2) << "layer0 and layer1 share one compiled source";
  EXPECT_EQ(out[0].kernel->name(), "layer0");
  EXPECT_NE(out[0].kernel->source().find("exp t"), std::string::npos) << "source() keeps the graph's own names";
  // Results are right: run both layers.
  std::vector<float> x = {0.5f, -1, 2, 0, 1, 1, 1, 1}, y = {0.5f, 1, -2, 0, 0, 0, 0, 0}, r0(8), r1(8);
  auto t = [](std::vector<float>& v) { return HostTensor::view(DType::Float32, v.data(), {1, 8}, {8, 1}); };
  out[0].kernel->run(std::vector<HostTensor>{t(x), t(y)}, std::vector<HostTensor>{t(r0)});
  out[1].kernel->run(std::vector<HostTensor>{t(x), t(y)}, std::vector<HostTensor>{t(r1)});
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_FLOAT_EQ(r0[i], std::exp(x[i] + y[i]));
    EXPECT_EQ(r0[i], r1[i]);
  }
  EXPECT_EQ(static_cast<bool>(out[3].error), kernel_unsupported_reason(bad).has_value());
  EXPECT_EQ(static_cast<bool>(out[3].kernel), !kernel_unsupported_reason(bad).has_value());
}

}  // namespace
}  // namespace autofuse
