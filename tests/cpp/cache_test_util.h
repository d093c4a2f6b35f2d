// A GoogleTest fixture for the runtime cache tests: a fresh private cache directory per test.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "autofuse/runtime/cache.h"

namespace autofuse {

/// Each test gets a fresh private cache directory (AUTOFUSE_CACHE_DIR, removed afterwards), caches enabled, and the
/// process-wide counters and loaded-module map reset.
class FreshCacheDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/autofuse-test-cache-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::setenv("AUTOFUSE_CACHE_DIR", dir_.c_str(), 1);
    ::unsetenv("AUTOFUSE_FORCE_DISABLE_CACHES");
    clear_memory_cache();
    reset_cache_stats();
  }
  void TearDown() override {
    clear_memory_cache();
    std::filesystem::remove_all(dir_);
    ::unsetenv("AUTOFUSE_CACHE_DIR");
    ::unsetenv("AUTOFUSE_FORCE_DISABLE_CACHES");
  }
  std::string dir_;
};

}  // namespace autofuse
