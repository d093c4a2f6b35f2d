// Symbolic size algebra: canonical simplification, evaluation, substitution, tri-state comparisons, printing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <limits>
#include <random>

#include "autofuse/ir/parser.h"
#include "autofuse/ir/symbolic.h"

namespace autofuse {
namespace {

const Expr s0 = Expr::sym("s0");
const Expr s1 = Expr::sym("s1");
const Expr s2 = Expr::sym("s2");
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(Symbolic, ConstantFolding) {
  EXPECT_EQ(Expr(2) + Expr(3), Expr(5));
  EXPECT_EQ(Expr(2) * Expr(-3), Expr(-6));
  EXPECT_EQ((Expr(7) - Expr(9)).as_const(), -2);
  EXPECT_EQ(s0 + 0, s0);
  EXPECT_EQ(s0 * 1, s0);
  EXPECT_EQ(s0 * 0, Expr(0));
  EXPECT_EQ((s0 + 2) + 3, s0 + 5);
  EXPECT_TRUE((s0 - s0).is_const());
  EXPECT_FALSE(s0.as_const().has_value());
  EXPECT_THROW(s0.value(), std::logic_error);
  EXPECT_THROW(Expr(3).name(), std::logic_error);
}

TEST(Symbolic, LikeTermsAndOrder) {
  EXPECT_EQ(s0 + s0, 2 * s0);
  EXPECT_EQ(2 * s0 - s0, s0);
  EXPECT_EQ(s0 * s1 - s1 * s0, Expr(0));
  EXPECT_EQ(s0 + s1, s1 + s0);
  EXPECT_EQ(s0 * s1 * s2, s2 * (s1 * s0));
  EXPECT_EQ((s0 + s1) + s2, s0 + (s1 + s2));
  EXPECT_EQ(3 * s0 + 2 * s1 - 3 * s0, 2 * s1);
  EXPECT_NE(s0 * s0, 2 * s0);
  EXPECT_EQ((s0 + s1).hash(), (s1 + s0).hash());
}

TEST(Symbolic, Distribution) {
  EXPECT_EQ(2 * (s0 + 1), 2 * s0 + 2);
  EXPECT_EQ((s0 + 1) * (s1 + 1), s0 * s1 + s0 + s1 + 1);
  EXPECT_EQ((s0 + 1) * (s0 - 1), s0 * s0 - 1);
  EXPECT_EQ(-(s0 - s1), s1 - s0);
  // Up to 1024 expanded terms a product of sums is expanded; beyond, it is refused rather than left half-factored.
  Expr big(1);
  for (int i = 0; i < 10; ++i) big = big * (Expr::sym("t" + std::to_string(i)) + 1);
  EXPECT_EQ(big.kind(), Expr::Kind::Add);
  EXPECT_EQ(big.args().size(), 1024u);
  Bindings b;
  for (int i = 0; i < 10; ++i) b["t" + std::to_string(i)] = 1;
  EXPECT_EQ(big.eval(b), 1024);
  EXPECT_THROW(big * (Expr::sym("t10") + 1), std::overflow_error);
}

TEST(Symbolic, FloorDiv) {
  EXPECT_EQ(floordiv(Expr(7), Expr(2)), Expr(3));
  EXPECT_EQ(floordiv(Expr(-7), Expr(2)), Expr(-4));  // rounds toward -inf like Python
  EXPECT_EQ(floordiv(Expr(7), Expr(-2)), Expr(-4));
  EXPECT_EQ(floordiv(s0, 1), s0);
  EXPECT_EQ(floordiv(4 * s0 + 6, 2), 2 * s0 + 3);
  EXPECT_EQ(floordiv(2 * s0 + 3, 2), s0 + 1);                 // the divisible term is pulled out
  EXPECT_EQ(floordiv(2 * s0 + s1, 2), s0 + floordiv(s1, 2));  // exact for every integer s0
  EXPECT_EQ(floordiv(floordiv(s0, 2), 3), floordiv(s0, 6));
  EXPECT_EQ(floordiv(s0 * s1, s0 * s1), Expr(1));
  EXPECT_EQ(floordiv(Expr(0), s0), Expr(0));
  EXPECT_EQ(floordiv(s0, 2).str(), "floordiv(s0, 2)");
  EXPECT_THROW(floordiv(s0, 0), std::domain_error);
}

TEST(Symbolic, Mod) {
  EXPECT_EQ(mod(Expr(-7), Expr(3)), Expr(2));  // sign of the divisor, like Python's %
  EXPECT_EQ(mod(Expr(7), Expr(-3)), Expr(-2));
  EXPECT_EQ(mod(s0, 1), Expr(0));
  EXPECT_EQ(mod(s0, s0), Expr(0));
  EXPECT_EQ(mod(2 * s0 + 5, 2), Expr(1));
  EXPECT_EQ(mod(3 * s0, 2), mod(s0, 2));
  EXPECT_EQ(mod(4 * s0 + s1 + 9, 4), mod(s1 + 1, 4));
  EXPECT_EQ(mod(s0, 4).str(), "mod(s0, 4)");
  EXPECT_THROW(mod(s0, 0), std::domain_error);
}

TEST(Symbolic, Int64Helpers) {
  EXPECT_EQ(floordiv_i64(-1, 3), -1);
  EXPECT_EQ(mod_i64(-1, 3), 2);
  EXPECT_EQ(mod_i64(1, -3), -2);
  EXPECT_EQ(mod_i64(kMin, -1), 0);
  EXPECT_THROW(floordiv_i64(kMin, -1), std::overflow_error);
  EXPECT_THROW(checked_add(kMax, 1), std::overflow_error);
  EXPECT_THROW(checked_mul(kMin, -1), std::overflow_error);
  EXPECT_EQ(checked_mul(kMin, 1), kMin);
  EXPECT_THROW(Expr(kMax) + Expr(1), std::overflow_error);
  EXPECT_THROW(-Expr(kMin), std::overflow_error);
  EXPECT_THROW(Expr(kMin) - Expr(1), std::overflow_error);
  EXPECT_THROW(s0 * kMax + s0 * kMax, std::overflow_error);
}

TEST(Symbolic, MinMax) {
  EXPECT_EQ(min(Expr(3), Expr(5)), Expr(3));
  EXPECT_EQ(max(Expr(3), Expr(5)), Expr(5));
  EXPECT_EQ(min(s0, s0 + 1), s0);
  EXPECT_EQ(max(s0, s0 + 1), s0 + 1);
  EXPECT_EQ(max(s0, 0), s0);  // sizes are >= 0
  EXPECT_EQ(min(s0, s1), min(s1, s0));
  EXPECT_EQ(max(s1, s0).str(), "max(s0, s1)");
  EXPECT_EQ(min(s0, 8).kind(), Expr::Kind::Min);
}

TEST(Symbolic, Eval) {
  Bindings b{{"s0", 6}, {"s1", 4}};
  EXPECT_EQ((s0 * s1 + 4).eval(b), 28);
  EXPECT_EQ(floordiv(s0 - 9, s1).eval(b), -1);
  EXPECT_EQ(mod(s0 - 9, s1).eval(b), 1);
  EXPECT_EQ(min(s0, s1).eval(b), 4);
  EXPECT_EQ(max(s0, s1 * 2).eval(b), 8);
  try {
    (s0 + s2).eval(b);
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_EQ(std::string(e.what()), "unbound size symbol 's2'");
  }
  EXPECT_THROW(floordiv(s0, s1 - 4).eval(b), std::domain_error);
  EXPECT_THROW((s0 * s1).eval({{"s0", kMax}, {"s1", 2}}), std::overflow_error);
}

TEST(Symbolic, Substitute) {
  EXPECT_EQ((s0 + s1).substitute({{"s1", s0}}), 2 * s0);
  EXPECT_EQ(floordiv(s0, 2).substitute({{"s0", 2 * s1}}), s1);
  EXPECT_EQ(mod(s0, 3).substitute({{"s0", Expr(10)}}), Expr(1));
  EXPECT_EQ(min(s0, s1).substitute({{"s1", s0 + 2}}), s0);
  EXPECT_EQ((s0 * s1).substitute({{"s2", Expr(5)}}), s0 * s1);
  EXPECT_EQ((s0 * s1 + s2).symbols(), (std::set<std::string>{"s0", "s1", "s2"}));
}

TEST(Symbolic, TriState) {
  EXPECT_EQ(sym_eq(s0 + s1, s1 + s0), Tri::True);
  EXPECT_EQ(sym_eq(s0, s0 + 1), Tri::False);
  EXPECT_EQ(sym_eq(s0, s1), Tri::Unknown);
  EXPECT_EQ(sym_eq(s0 * 2 + 1, s0 * 2), Tri::False);
  EXPECT_EQ(sym_lt(s0, s0 + 1), Tri::True);
  EXPECT_EQ(sym_lt(s0, s0), Tri::False);
  EXPECT_EQ(sym_le(s0, s0), Tri::True);
  EXPECT_EQ(sym_le(s0 + 1, s0), Tri::False);
  EXPECT_EQ(sym_lt(s0, s1), Tri::Unknown);
  EXPECT_EQ(sym_le(Expr(0), s0 * s1), Tri::True);
  EXPECT_EQ(sym_lt(s0, Expr(0)), Tri::False);
  EXPECT_EQ(sym_le(s0, s0 * s1), Tri::Unknown);     // s1 may be 0
  EXPECT_EQ(sym_lt(Expr(kMax), s0), Tri::Unknown);  // the difference overflows: no answer rather than a wrong one
  EXPECT_TRUE(provably_nonnegative(mod(s0 - 5, 3)));
  EXPECT_TRUE(provably_nonnegative(floordiv(s0, 2) + min(s0, s1)));
  EXPECT_FALSE(provably_nonnegative(s0 - 1));
  EXPECT_TRUE(provably_nonnegative(max(s0 - 1, s1)));
}

TEST(Symbolic, Printing) {
  EXPECT_EQ((s0 * s1 + 4).str(), "s0*s1 + 4");
  EXPECT_EQ((s0 - 1).str(), "s0 - 1");
  EXPECT_EQ((-s0).str(), "-s0");
  EXPECT_EQ((2 * s0 - 3 * s1 + 1).str(), "2*s0 - 3*s1 + 1");
  EXPECT_EQ((Expr::sym("s10") + Expr::sym("s2")).str(), "s2 + s10");  // natural order of symbol names
  EXPECT_EQ((s1 * kMin + s0).str(), "s0 + -9223372036854775808*s1");  // INT64_MIN cannot be negated
  EXPECT_EQ(parse_expr((s1 * kMin + s0).str()), s1 * kMin + s0);
  EXPECT_EQ(shape_str({s0, Expr(4)}), "[s0, 4]");
  EXPECT_THROW(Expr::sym("1x"), std::invalid_argument);
  EXPECT_THROW(Expr::sym(""), std::invalid_argument);
}

TEST(Symbolic, ShapeHelpers) {
  EXPECT_EQ(numel({s0, Expr(4), s1}), 4 * s0 * s1);
  EXPECT_EQ(numel({}), Expr(1));
  EXPECT_EQ(contiguous_strides({s0, s1, Expr(3)}), (std::vector<Expr>{3 * s1, Expr(3), Expr(1)}));
  EXPECT_EQ(eval_shape({s0, s1 + 1}, {{"s0", 2}, {"s1", 5}}), (std::vector<int64_t>{2, 6}));
}

// Property: canonicalization preserves meaning. Random expression trees are built twice: as canonical Expr and as a
// direct evaluator; both must agree under random bindings (sizes 0..12). Samples that divide by zero are skipped.
// sum() of many terms (like terms combined through a hash index past 8 distinct bases) is the chain of `+`.
TEST(Symbolic, SumOfManyTermsIsTheChainOfAdds) {
  std::mt19937_64 rng(15);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto sym = [&] { return Expr::sym("s" + std::to_string(pick(0, 11))); };
  for (int round = 0; round < 50; ++round) {
    std::vector<Expr> terms;
    const int n = pick(0, 60);
    for (int i = 0; i < n; ++i) {
      switch (pick(0, 4)) {
        case 0:
          terms.push_back(Expr(pick(-9, 9)));
          break;
        case 1:
          terms.push_back(Expr(pick(-3, 3)) * sym());
          break;
        case 2:
          terms.push_back(sym() * sym() * Expr(pick(-2, 2)));
          break;
        case 3:
          terms.push_back(floordiv(sym() + Expr(pick(0, 3)), Expr(pick(1, 4))));
          break;
        default:
          terms.push_back(-(sym() + sym()));
      }
    }
    Expr chain(0);
    for (const Expr& t : terms) chain = chain + t;
    const Expr s = sum(terms);
    EXPECT_EQ(s, chain) << s.str() << " vs " << chain.str();
    EXPECT_EQ(s.str(), chain.str());
  }
  std::vector<Expr> up, down;
  for (int i = 0; i < 40; ++i) up.push_back(Expr::sym("t" + std::to_string(i)));
  for (int i = 39; i >= 0; --i) down.push_back(-Expr::sym("t" + std::to_string(i)));
  EXPECT_EQ(sum(up).args().size(), 40u);
  EXPECT_EQ(sum(up).args()[1], Expr::sym("t1"));  // natural order
  std::vector<Expr> both = up;
  both.insert(both.end(), down.begin(), down.end());
  both.push_back(Expr(3));
  EXPECT_EQ(sum(both), Expr(3));
  EXPECT_EQ(sum({}), Expr(0));
  EXPECT_THROW(sum({Expr(kMax), s0, Expr(1)}), std::overflow_error);
}

TEST(Symbolic, RandomCanonicalFormsEvaluateLikeTheTree) {
  const char* env = std::getenv("AUTOFUSE_TEST_SEED");
  const uint64_t seed = env ? std::strtoull(env, nullptr, 10) : 20261129;  // fixed default, reproducible
  std::cout << "Symbolic.RandomCanonicalForms seed: " << seed << "\n";
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  using Eval = std::function<std::optional<int64_t>(const Bindings&)>;
  std::function<std::pair<Expr, Eval>(int)> gen = [&](int depth) -> std::pair<Expr, Eval> {
    if (depth == 0 || pick(0, 3) == 0) {
      if (pick(0, 1)) {
        int64_t c = pick(-6, 6);
        return {Expr(c), [c](const Bindings&) { return std::optional<int64_t>(c); }};
      }
      std::string n = "s" + std::to_string(pick(0, 2));
      return {Expr::sym(n), [n](const Bindings& b) { return std::optional<int64_t>(b.at(n)); }};
    }
    auto [a, ea] = gen(depth - 1);
    auto [c, eb] = gen(depth - 1);
    const int op = pick(0, 7);
    auto both = [ea = ea, eb = eb](auto f) -> Eval {
      return [ea, eb, f](const Bindings& b) -> std::optional<int64_t> {
        auto x = ea(b), y = eb(b);
        if (!x || !y) return std::nullopt;
        return f(*x, *y);
      };
    };
    switch (op) {
      case 0:
        return {a + c, both([](int64_t x, int64_t y) { return std::optional<int64_t>(x + y); })};
      case 1:
        return {a - c, both([](int64_t x, int64_t y) { return std::optional<int64_t>(x - y); })};
      case 2:
        return {a * c, both([](int64_t x, int64_t y) { return std::optional<int64_t>(x * y); })};
      case 3:
        return {-a, [ea = ea](const Bindings& b) {
                  auto x = ea(b);
                  return x ? std::optional<int64_t>(-*x) : std::nullopt;
                }};
      case 4:
      case 5: {
        // Divisors: a nonzero constant, or the subtree itself (skipped where it evaluates to 0).
        bool by_const = pick(0, 1);
        int64_t k = pick(1, 5) * (pick(0, 3) == 0 ? -1 : 1);
        Expr d = by_const ? Expr(k) : c;
        Eval ed = by_const ? Eval([k](const Bindings&) { return std::optional<int64_t>(k); }) : eb;
        Eval e = [ea = ea, ed, op](const Bindings& b) -> std::optional<int64_t> {
          auto x = ea(b), y = ed(b);
          if (!x || !y || *y == 0) return std::nullopt;
          return op == 4 ? floordiv_i64(*x, *y) : mod_i64(*x, *y);
        };
        try {
          return {op == 4 ? floordiv(a, d) : mod(a, d), e};
        } catch (const std::domain_error&) {
          return {a, ea};
        }
      }
      case 6:
        return {min(a, c), both([](int64_t x, int64_t y) { return std::optional<int64_t>(std::min(x, y)); })};
      default:
        return {max(a, c), both([](int64_t x, int64_t y) { return std::optional<int64_t>(std::max(x, y)); })};
    }
  };
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    auto [e, ev] = gen(4);
    for (int j = 0; j < 4; ++j) {
      Bindings b{{"s0", pick(0, 12)}, {"s1", pick(0, 12)}, {"s2", pick(0, 12)}};
      auto want = ev(b);
      if (!want) continue;
      int64_t got;
      try {
        got = e.eval(b);
      } catch (const std::domain_error&) {
        continue;  // canonical form divides by a subterm that is 0 here while the tree did not need it
      }
      ASSERT_EQ(got, *want) << "seed " << seed << ": " << e.str() << " at s0=" << b["s0"] << ", s1=" << b["s1"]
                            << ", s2=" << b["s2"];
      ++checked;
    }
  }
  EXPECT_GT(checked, 5000);
}

}  // namespace
}  // namespace autofuse
