// support/env.h: the parsers every AUTOFUSE_* variable goes through (values, defaults, bad values). The warning text
// on stderr is checked by tests/python/test_env_vars.py (a subprocess per variable).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "autofuse/support/env.h"

namespace autofuse {
namespace {

/// Sets a variable of a name no code reads for the scope of a test, unsetting it at the end.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

constexpr const char* kVar = "AUTOFUSE_TEST_ONLY_VARIABLE";

TEST(Env, Bool) {
  for (const char* on : {"1", "true", "TRUE", "yes", "On", " 1 "}) {
    ScopedEnv e(kVar, std::string(on));
    EXPECT_TRUE(env_bool(kVar, false)) << on;
  }
  for (const char* off : {"0", "false", "No", "OFF"}) {
    ScopedEnv e(kVar, std::string(off));
    EXPECT_FALSE(env_bool(kVar, true)) << off;
  }
  for (std::optional<std::string> dflt : {std::optional<std::string>(), std::optional<std::string>("")}) {
    ScopedEnv e(kVar, dflt);
    EXPECT_TRUE(env_bool(kVar, true));
    EXPECT_FALSE(env_bool(kVar, false));
  }
  for (const char* bad : {"2", "bogus", "-1", "truee"}) {  // warns, the default
    ScopedEnv e(kVar, std::string(bad));
    EXPECT_TRUE(env_bool(kVar, true)) << bad;
    EXPECT_FALSE(env_bool(kVar, false)) << bad;
  }
}

TEST(Env, Int) {
  {
    ScopedEnv e(kVar, std::nullopt);
    EXPECT_EQ(env_int(kVar, 1, 8, "x"), std::nullopt);
  }
  {
    ScopedEnv e(kVar, std::string(" 8 "));
    EXPECT_EQ(env_int(kVar, 1, 8, "x"), 8);
  }
  for (const char* bad : {"0", "9", "-1", "3x", "x", "99999999999999999999999", "1.5"}) {
    ScopedEnv e(kVar, std::string(bad));
    EXPECT_EQ(env_int(kVar, 1, 8, "x"), std::nullopt) << bad;
  }
}

TEST(Env, Choice) {
  {
    ScopedEnv e(kVar, std::string("pool"));
    EXPECT_EQ(env_choice(kVar, {"auto", "pool"}, "auto"), "pool");
  }
  for (const char* upper : {"Pool", "POOL"}) {  // case is ignored, as for booleans (session 7 review finding 8)
    ScopedEnv e(kVar, std::string(upper));
    EXPECT_EQ(env_choice(kVar, {"auto", "pool"}, "auto"), "pool") << upper;
  }
  for (const char* bad : {"pool ", "bogus", "poo"}) {
    ScopedEnv e(kVar, std::string(bad));
    EXPECT_EQ(env_choice(kVar, {"auto", "pool"}, "auto"), std::nullopt) << bad;
  }
}

TEST(Env, CpuCountIsPositive) { EXPECT_GE(cpu_count(), 1); }

}  // namespace
}  // namespace autofuse
