// Build smoke test: the gtest binary links against autofuse_core and sees the op table.
#include <gtest/gtest.h>

#include "autofuse/ir/ops.h"

namespace autofuse {
namespace {

TEST(BuildSmoke, OpTableRoundTripsNames) {
  ASSERT_FALSE(all_ops().empty());
  for (const OpInfo& o : all_ops()) {
    auto k = op_by_name(o.name);
    ASSERT_TRUE(k.has_value()) << o.name;
    EXPECT_EQ(op_info(*k).name, o.name);
  }
  EXPECT_FALSE(op_by_name("no_such_op").has_value());
}

}  // namespace
}  // namespace autofuse
