// Host steps of the driver: layout ops as views (permute, slice, broadcast_to, reshape of contiguous data) or
// copies (reshape of strided data, concat), checked element by element.
#include <gtest/gtest.h>

#include "autofuse/driver/host_ops.h"

namespace autofuse {
namespace {

HostTensor iota_tensor(std::vector<int64_t> sizes) {
  HostTensor t = HostTensor::empty(DType::Float32, sizes);
  float* p = static_cast<float*>(t.data);
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(i);
  return t;
}

Node layout_node(OpKind op, Attrs attrs) {
  Node n;
  n.op = op;
  n.attrs = std::move(attrs);
  n.name = "t";
  return n;
}

TEST(FusionHostOps, PermuteIsAView) {
  HostTensor x = iota_tensor({2, 3});
  HostTensor t = run_host_op(layout_node(OpKind::Permute, {{"dims", std::vector<int64_t>{1, 0}}}), {x}, {});
  EXPECT_EQ(t.data, x.data);
  EXPECT_EQ(t.sizes, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(t.get_double({2, 1}), 5.0);  // x[1][2]
  EXPECT_EQ(t.get_double({1, 0}), 1.0);  // x[0][1]
}

TEST(FusionHostOps, SliceIsAStridedView) {
  HostTensor x = iota_tensor({2, 10});
  Attrs a{{"axis", int64_t{1}}, {"start", Expr(1)}, {"stop", Expr::sym("n")}, {"step", int64_t{3}}};
  HostTensor t = run_host_op(layout_node(OpKind::Slice, a), {x}, {{"n", 9}});
  EXPECT_EQ(t.sizes, (std::vector<int64_t>{2, 3}));  // columns 1, 4, 7
  EXPECT_EQ(t.get_double({1, 2}), 17.0);
  EXPECT_THROW(run_host_op(layout_node(OpKind::Slice, a), {x}, {{"n", 11}}), IRError);
}

TEST(FusionHostOps, ReshapeCopiesOnlyStridedData) {
  HostTensor x = iota_tensor({2, 6});
  Attrs a{{"shape", Shape{Expr(3), Expr(4)}}};
  HostTensor v = run_host_op(layout_node(OpKind::Reshape, a), {x}, {});
  EXPECT_EQ(v.data, x.data);
  HostTensor tr = run_host_op(layout_node(OpKind::Permute, {{"dims", std::vector<int64_t>{1, 0}}}), {x}, {});
  HostTensor c = run_host_op(layout_node(OpKind::Reshape, {{"shape", Shape{Expr(12)}}}), {tr}, {});
  EXPECT_NE(c.data, x.data);
  EXPECT_EQ(c.get_double({1}), 6.0);  // tr[0][1] = x[1][0]
  EXPECT_THROW(run_host_op(layout_node(OpKind::Reshape, {{"shape", Shape{Expr(5)}}}), {x}, {}), IRError);
}

TEST(FusionHostOps, ConcatAndBroadcast) {
  HostTensor a = iota_tensor({2, 2}), b = iota_tensor({2, 1});
  HostTensor c = run_host_op(layout_node(OpKind::Concat, {{"axis", int64_t{-1}}}), {a, b}, {});
  EXPECT_EQ(c.sizes, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(c.get_double({1, 2}), 1.0);
  EXPECT_EQ(c.get_double({1, 1}), 3.0);
  HostTensor r = iota_tensor({3});
  HostTensor bc = run_host_op(layout_node(OpKind::BroadcastTo, {{"shape", Shape{Expr(4), Expr(3)}}}), {r}, {});
  EXPECT_EQ(bc.strides, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(bc.get_double({3, 2}), 2.0);
  HostTensor cc = contiguous_copy(bc);
  EXPECT_TRUE(cc.is_contiguous());
  EXPECT_EQ(cc.get_double({2, 1}), 1.0);
}

}  // namespace
}  // namespace autofuse
