// Manifest expressions: precedence and associativity as in C, integer semantics where both
// operands are integral, the three functions, limits with their "why" text, and every error
// naming the expression.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"
#include "compare/manifest/manifest.h"
#include "core/check.h"

namespace moe::compare {
namespace {

// The message of the moe::Error `f` throws; a test fails if nothing is thrown.
using test::error_of;

double ev(const std::string& e, const ExprVars& v = {}) { return eval_expr(e, v); }

TEST(Expr, PrecedenceAndAssociativity) {
  EXPECT_EQ(ev("1 + 2 * 3"), 7);
  EXPECT_EQ(ev("(1 + 2) * 3"), 9);
  EXPECT_EQ(ev("10 - 4 - 3"), 3);   // left-associative, not 10 - (4 - 3)
  EXPECT_EQ(ev("64 / 4 / 2"), 8);   // (64 / 4) / 2
  EXPECT_EQ(ev("2 * 3 % 4"), 2);    // (2 * 3) % 4: * and % share a level
  EXPECT_EQ(ev("-2 * 3"), -6);
  EXPECT_EQ(ev("- -3"), 3);
  EXPECT_EQ(ev("2 - -3"), 5);
  EXPECT_EQ(ev("1 + 2 < 4"), 1);    // arithmetic before comparison
}

TEST(Expr, LogicBindsLikeC) {
  EXPECT_EQ(ev("1 < 2 && 3 > 4 || 1"), 1);  // (1<2 && 3>4) || 1
  EXPECT_EQ(ev("0 || 1 && 0"), 0);          // 0 || (1 && 0)
  EXPECT_EQ(ev("!0"), 1);
  EXPECT_EQ(ev("!(2 > 1) || 0"), 0);
  EXPECT_EQ(ev("3 && 4"), 1);  // logic yields 0/1, not the operand
}

TEST(Expr, Comparisons) {
  ExprVars v{{"a", 3}, {"b", 4}};
  EXPECT_EQ(ev("a < b", v), 1);
  EXPECT_EQ(ev("a <= 3", v), 1);
  EXPECT_EQ(ev("a > b", v), 0);
  EXPECT_EQ(ev("b >= 4", v), 1);
  EXPECT_EQ(ev("a == 3", v), 1);
  EXPECT_EQ(ev("a != 3", v), 0);
  EXPECT_EQ(ev("a<=b&&b>=a", v), 1);  // no blanks needed
}

TEST(Expr, IntegerSemanticsLikeC) {
  ExprVars v{{"dim", 10}, {"eps", 1e-6}, {"half", 7.5}};
  EXPECT_EQ(ev("7 / 2"), 3);
  EXPECT_EQ(ev("-7 / 2"), -3);  // truncates toward zero, not floor
  EXPECT_EQ(ev("-7 % 3"), -1);  // the dividend's sign
  EXPECT_EQ(ev("7 % -3"), 1);
  EXPECT_EQ(ev("dim / 4", v), 2);  // an integral variable is an integer
  EXPECT_EQ(ev("7.0 / 2"), 3.5);   // one float operand: float division
  EXPECT_EQ(ev("half / 2", v), 3.75);
  EXPECT_DOUBLE_EQ(ev("eps * 2", v), 2e-6);
  EXPECT_EQ(ev("1e3 / 8"), 125);  // an exponent makes a float: 1000.0 / 8
  EXPECT_EQ(ev("4294967296 * 2"), 8589934592.0);  // 64-bit, no 32-bit wrap
}

TEST(Expr, Functions) {
  ExprVars v{{"dim", 4096}, {"rows", 3}, {"subgroup_size", 32}};
  EXPECT_EQ(ev("ceil_div(10, 4)"), 3);
  EXPECT_EQ(ev("ceil_div(8, 4)"), 2);
  EXPECT_EQ(ev("ceil_div(0, 4)"), 0);
  EXPECT_EQ(ev("ceil_div(dim * rows, subgroup_size * 4)", v), 96);
  EXPECT_EQ(ev("min(3, 2)"), 2);
  EXPECT_EQ(ev("max(1, 5)"), 5);
  EXPECT_EQ(ev("min(dim, 8192) / max(rows, 1)", v), 1365);  // integer division of the results
  EXPECT_EQ(ev("max(0.5, 0) / 2"), 0.25);                    // min/max keep float-ness
  EXPECT_EQ(ev("ceil_div(max(dim, 1), 64) + min(rows, 2) * 3", v), 70);
}

TEST(Expr, ErrorsNameTheExpression) {
  ExprVars v{{"dim", 10}, {"zero", 0}};
  std::string m = error_of([&] { ev("dim / 0", v); });
  EXPECT_NE(m.find("expression 'dim / 0'"), std::string::npos) << m;
  EXPECT_NE(m.find("division by zero"), std::string::npos) << m;
  m = error_of([&] { ev("dim % zero", v); });
  EXPECT_NE(m.find("'dim % zero'"), std::string::npos) << m;
  EXPECT_NE(m.find("division by zero"), std::string::npos) << m;
  m = error_of([&] { ev("1.5 / zero", v); });  // float division by zero too: no silent inf
  EXPECT_NE(m.find("division by zero"), std::string::npos) << m;

  m = error_of([&] { ev("dimm + 1", v); });
  EXPECT_NE(m.find("expression 'dimm + 1'"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown name 'dimm'"), std::string::npos) << m;
  EXPECT_NE(m.find("known: dim zero"), std::string::npos) << m;  // the names one could have meant
  // An unknown name on the side of || that does not decide is still an error (no short circuit).
  m = error_of([&] { ev("1 || typo > 2", v); });
  EXPECT_NE(m.find("unknown name 'typo'"), std::string::npos) << m;

  m = error_of([&] { ev("foo(1)"); });
  EXPECT_NE(m.find("unknown function 'foo'"), std::string::npos) << m;
  m = error_of([&] { ev("min(1)"); });
  EXPECT_NE(m.find("min() takes 2 arguments, got 1"), std::string::npos) << m;
  m = error_of([&] { ev("ceil_div(-1, 4)"); });
  EXPECT_NE(m.find("ceil_div(-1, 4) needs integers"), std::string::npos) << m;
  m = error_of([&] { ev("ceil_div(5, 0)"); });
  EXPECT_NE(m.find("ceil_div(5, 0)"), std::string::npos) << m;
  m = error_of([&] { ev("4503599627370496 * 4"); });  // 2^52 * 4: past exact doubles, an error not a wrap
  EXPECT_NE(m.find("integer overflow beyond 2^53"), std::string::npos) << m;
  m = error_of([&] { ev(std::string(200, '(') + "1" + std::string(200, ')')); });
  EXPECT_NE(m.find("nested deeper than 100 levels"), std::string::npos) << m;
  EXPECT_EQ(ev(std::string(50, '(') + "1" + std::string(50, ')')), 1);
  m = error_of([&] { ev("3 % 1.5"); });
  EXPECT_NE(m.find("% needs integer operands"), std::string::npos) << m;
}

TEST(Expr, SyntaxErrors) {
  const char* bad[] = {"", "1 +", "(1 + 2", "1 2", "1 < 2 < 3", "dim = 4", "* 3", "0x10", "min(1, 2", "1 & & 2", "2 ** 3",
                      "1e", "1.5.2", "2dim", "1 <<", "1 | | 2"};  // "nan" is a name: an unknown one
  for (const char* e : bad) {
    std::string m = error_of([&] { ev(e, {{"dim", 4}}); });
    EXPECT_NE(m.find("expression '" + std::string(e) + "'"), std::string::npos) << e << " -> " << m;
    // check_expr rejects the same texts without variables.
    EXPECT_THROW(check_expr(e), Error) << e;
  }
  EXPECT_NE(error_of([&] { ev("1 < 2 < 3"); }).find("do not chain"), std::string::npos);
}

TEST(Expr, CheckExprAcceptsAnyNameAndNoArithmetic) {
  EXPECT_NO_THROW(check_expr("ceil_div(rows, subgroup_size) * 2"));
  EXPECT_NO_THROW(check_expr("dim / zero"));  // values are unknown at load: only syntax counts
  EXPECT_NO_THROW(check_expr(" dim <= 8192 && (dim % 4 == 0) "));
  EXPECT_THROW(check_expr("frobnicate(1)"), Error);  // function names are syntax
}

TEST(Expr, MathFunctions) {
  ExprVars v{{"base", 10000}, {"n_dims", 128}, {"x", 2.25}};
  EXPECT_EQ(ev("sqrt(x)", v), 1.5);
  EXPECT_EQ(ev("pow(2, 10)"), 1024);
  EXPECT_EQ(ev("pow(2, 10) / 3"), 1024.0 / 3);  // pow is floating: a float division follows
  EXPECT_DOUBLE_EQ(ev("exp(1)"), std::exp(1.0));
  EXPECT_DOUBLE_EQ(ev("log(x)", v), std::log(2.25));
  EXPECT_EQ(ev("log2(1024)"), 10);
  EXPECT_EQ(ev("floor(-2.5)"), -3);
  EXPECT_EQ(ev("ceil(2.1)"), 3);
  EXPECT_EQ(ev("floor(7.9) / 2"), 3);  // floor gives an integer: integer division follows
  EXPECT_EQ(ev("abs(-7) / 2"), 3);     // abs keeps an integer an integer
  EXPECT_EQ(ev("abs(-2.5)"), 2.5);
  // f32: the float nearest x. 0.1 is not a float: f32(0.1) is the float the host would pass.
  EXPECT_EQ(ev("f32(0.1)"), static_cast<double>(0.1f));
  EXPECT_NE(ev("f32(0.1)"), 0.1);
  // ggml's rope theta_scale = powf(base, -2.0f / n_dims), as a manifest writes it. Rounding the
  // double pow to float equals powf wherever powf is correctly rounded (glibc's is, for these).
  EXPECT_EQ(ev("f32(pow(f32(base), -2.0 / n_dims))", v),
            static_cast<double>(std::pow(10000.0f, -2.0f / 128)));
}

TEST(Expr, InfinityIsAConstant) {
  EXPECT_EQ(ev("inf"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(ev("-inf < -1e308"), 1);
  EXPECT_EQ(ev("1.0 / inf"), 0);
  EXPECT_EQ(ev("max(3, -inf)"), 3);
  EXPECT_EQ(expr_names("x < inf && y > -inf"), (std::vector<std::string>{"x", "y"}));  // not a variable
  EXPECT_NO_THROW(check_expr("max_abs_x < inf"));
}

TEST(Expr, DomainErrorsNameTheExpression) {
  const char* bad[][2] = {{"sqrt(-1)", "sqrt(-1) is not a real number"},
                          {"log(0)", "log(0) is not a real number"},
                          {"log2(-2)", "log2(-2) is not a real number"},
                          {"pow(-8, 0.5)", "pow(-8, 0.5) is not a real number"},
                          {"inf - inf", "not a number: inf - inf"},
                          {"0 * inf", "not a number: 0 * inf"},
                          {"f32(1e39)", "f32(1e+39) is beyond the float range"},
                          {"is_pow2(-1)", "is_pow2(-1) needs an integer in [0, "},
                          {"is_pow2(2.5)", "is_pow2(2.5) needs an integer"},
                          {"log2_floor(0)", "log2_floor(0) needs an integer in [1, "},
                          {"fastdiv_l(0)", "fastdiv_l(0) needs an integer in [1, 2147483647]"},
                          {"fastdiv_mp(2147483648)", "fastdiv_mp(2147483648) needs an integer in [1, 2147483647]"},
                          {"sqrt(1, 2)", "sqrt() takes 1 arguments, got 2"},
                          {"select(1, 2)", "select() takes 3 arguments"},
                          {"select(1, 2, 3, 4)", "select() takes 3 arguments"}};
  for (const auto& [e, want] : bad) {
    std::string m = error_of([&] { ev(e); });
    EXPECT_NE(m.find("expression '" + std::string(e) + "'"), std::string::npos) << e << " -> " << m;
    EXPECT_NE(m.find(want), std::string::npos) << e << " -> " << m;
  }
}

TEST(Expr, SelectEvaluatesOnlyTheChosenBranch) {
  ExprVars v{{"n", 12}, {"d", 0}, {"e", 4}};
  EXPECT_EQ(ev("select(d != 0, n / d, 0)", v), 0);  // n / 0 is not evaluated
  EXPECT_EQ(ev("select(e != 0, n / e, 0)", v), 3);
  EXPECT_EQ(ev("select(d, sqrt(-1), 7)", v), 7);
  EXPECT_EQ(ev("select(1, 7, log(0)) + 1", v), 8);
  EXPECT_EQ(ev("select(0, 1, select(1, 2, n / d))", v), 2);  // nested
  EXPECT_EQ(ev("select(1, 5, 2.5) / 2", v), 2);              // the chosen branch's integer-ness
  // Lazy about values, not names: a typo in the branch not taken is still an error.
  std::string m = error_of([&] { ev("select(1, n, typo)", v); });
  EXPECT_NE(m.find("unknown name 'typo'"), std::string::npos) << m;
  // And the chosen branch's errors are errors.
  m = error_of([&] { ev("select(1, n / d, 0)", v); });
  EXPECT_NE(m.find("division by zero"), std::string::npos) << m;
  EXPECT_NO_THROW(check_expr("select(d != 0, n / d, 0)"));
}

TEST(Expr, IntegerFunctions) {
  EXPECT_EQ(ev("is_pow2(0)"), 0);
  EXPECT_EQ(ev("is_pow2(1)"), 1);
  EXPECT_EQ(ev("is_pow2(64)"), 1);
  EXPECT_EQ(ev("is_pow2(96)"), 0);
  EXPECT_EQ(ev("is_pow2(4503599627370496)"), 1);  // 2^52
  EXPECT_EQ(ev("log2_floor(1)"), 0);
  EXPECT_EQ(ev("log2_floor(255)"), 7);
  EXPECT_EQ(ev("log2_floor(256)"), 8);
  EXPECT_EQ(ev("log2_floor(9007199254740992)"), 53);
  EXPECT_EQ(ev("fastdiv_l(1)"), 0);
  EXPECT_EQ(ev("fastdiv_l(7)"), 3);
  EXPECT_EQ(ev("fastdiv_l(8)"), 3);
  EXPECT_EQ(ev("fastdiv_l(9)"), 4);
  EXPECT_EQ(ev("fastdiv_mp(1)"), 1);
  EXPECT_EQ(ev("fastdiv_l(2147483647)"), 31);
}

// ggml's fast division: with L = fastdiv_l(d) and mp = fastdiv_mp(d), a kernel computes n / d as
// (mulhi(n, mp) + n) >> L in 32-bit unsigned arithmetic, for n < 2^31. Checked against plain
// division over small, power-of-two-adjacent and large divisors and dividends.
TEST(Expr, FastdivMatchesDivision) {
  std::vector<uint32_t> ds, ns;
  for (uint32_t d = 1; d <= 600; ++d) ds.push_back(d);
  for (int s = 1; s <= 31; ++s)
    for (int64_t e = -3; e <= 3; ++e) {
      const int64_t d = (int64_t{1} << s) + e;
      if (d > 0 && d < (int64_t{1} << 31)) ds.push_back(static_cast<uint32_t>(d));
    }
  for (uint32_t d : {1000003u, 123456789u, 2147483647u, 1431655765u}) ds.push_back(d);
  for (uint32_t n = 0; n < 2000; ++n) ns.push_back(n);
  uint64_t x = 12345;  // a fixed LCG: the same dividends every run
  for (int i = 0; i < 300; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    ns.push_back(static_cast<uint32_t>(x >> 33));  // < 2^31
  }
  for (uint32_t n : {2147483647u, 2147483646u, 1073741824u, 1073741823u}) ns.push_back(n);
  for (uint32_t d : ds) {
    ExprVars v{{"d", static_cast<double>(d)}};
    const uint32_t l = static_cast<uint32_t>(ev("fastdiv_l(d)", v));
    const double mpd = ev("fastdiv_mp(d)", v);
    ASSERT_LT(mpd, 4294967296.0) << d;  // it fits the u32 push constant
    const uint32_t mp = static_cast<uint32_t>(mpd);
    for (uint32_t n : ns) {
      const uint32_t hi = static_cast<uint32_t>((static_cast<uint64_t>(n) * mp) >> 32);
      const uint32_t q = (hi + n) >> l;
      ASSERT_EQ(q, n / d) << "n = " << n << ", d = " << d << ", L = " << l << ", mp = " << mp;
    }
  }
}

TEST(Expr, BitwiseOperatorsWithCPrecedence) {
  ExprVars v{{"a", 7}, {"b", 300}};
  EXPECT_EQ(ev("fastdiv_l(a) | (fastdiv_l(b) << 8)", v), 3 | (9 << 8));  // ggml's packed shifts
  EXPECT_EQ(ev("1 << 2 + 1"), 8);         // + binds tighter than <<
  EXPECT_EQ(ev("1 < 2 << 1"), 1);         // << tighter than <
  EXPECT_EQ(ev("1 | 2 ^ 3 & 1"), 3);      // & before ^ before |: 1 | (2 ^ (3 & 1))
  EXPECT_EQ(ev("6 & 3 == 3"), 0);         // C: == binds tighter than &: 6 & (3 == 3)
  EXPECT_EQ(ev("(6 & 3) == 2"), 1);
  EXPECT_EQ(ev("1 || 0 | 0"), 1);         // | tighter than ||
  EXPECT_EQ(ev("256 >> 4 >> 2"), 4);      // left-associative
  EXPECT_EQ(ev("b & 255", v), 44);
  EXPECT_EQ(ev("1 << 53"), 9007199254740992.0);
  EXPECT_EQ(ev("4503599627370496 >> 52"), 1);
  EXPECT_EQ(ev("a<<1|1", v), 15);  // no blanks needed
  EXPECT_NO_THROW(check_expr("a << b | c & d ^ e >> 2"));
  const char* bad[][2] = {{"1 << 54", "integer overflow beyond 2^53 in 1 << 54"},
                          {"1 << 64", "shift by 64 (64 or more)"},
                          {"8 >> 70", "shift by 70"},
                          {"-1 & 3", "'&' needs non-negative integers, got -1 & 3"},
                          {"1.5 | 0", "'|' needs non-negative integers"},
                          {"2 ^ -1", "'^' needs non-negative integers"},
                          {"1 << -1", "'<<' needs non-negative integers"}};
  for (const auto& [e, want] : bad) {
    std::string m = error_of([&] { ev(e); });
    EXPECT_NE(m.find("expression '" + std::string(e) + "'"), std::string::npos) << e << " -> " << m;
    EXPECT_NE(m.find(want), std::string::npos) << e << " -> " << m;
  }
}

TEST(Expr, DataPredicatesReadTheCaseTensors) {
  ExprVars v{{"k", 4}};
  v[data_predicate_var("any_nan", "logits")] = 1;
  v[data_predicate_var("all_finite", "logits")] = 0;
  v[data_predicate_var("any_inf", "logits")] = 0;
  v[data_predicate_var("max_abs", "logits")] = 12.5;
  v[data_predicate_var("any_nan", "W.scales")] = 0;
  EXPECT_EQ(ev("any_nan(logits)", v), 1);
  EXPECT_EQ(ev("all_finite( logits ) || k > 8", v), 0);
  EXPECT_EQ(ev("max_abs(logits) / 5", v), 2.5);  // a float
  EXPECT_EQ(ev("!any_nan(W.scales)", v), 1);     // tensor names may hold dots
  EXPECT_NO_THROW(check_expr("max_abs(W.scales) < 1e4 && !any_inf(x)"));
  EXPECT_EQ(expr_names("any_nan(x) && k > max_abs(y)"), (std::vector<std::string>{"k"}));  // tensors are no variables
  std::string why;
  EXPECT_FALSE(eval_limit("!any_nan(logits) && k < 8", v, &why));
  EXPECT_EQ(why, "!any_nan(logits) && k < 8 (any_nan(logits) = 1, k = 4)");
  // An unknown tensor names the op's input tensors; where no case data exists, that is said.
  std::string m = error_of([&] { ev("any_nan(logit)", v); });
  EXPECT_NE(m.find("any_nan(logit): unknown tensor 'logit' (the op's input tensors: W.scales, logits)"), std::string::npos)
      << m;
  EXPECT_EQ(m.find("known:"), std::string::npos) << m;
  m = error_of([&] { ev("max_abs(x) > 1", {{"k", 4}}); });
  EXPECT_NE(m.find("max_abs(x): no case data here"), std::string::npos) << m;
  m = error_of([&] { ev("any_nan(1 + 2)", v); });
  EXPECT_NE(m.find("any_nan() takes one tensor name"), std::string::npos) << m;
  // The variable list of an unknown-name message leaves the predicates' values out.
  m = error_of([&] { ev("kk", v); });
  EXPECT_NE(m.find("(known: k)"), std::string::npos) << m;
}

TEST(Limit, WhyNamesTheValues) {
  ExprVars v{{"dim", 16384}, {"rows", 3}, {"eps", 1e-6}};
  std::string why = "untouched";
  EXPECT_TRUE(eval_limit("rows <= 4", v, &why));
  EXPECT_EQ(why, "untouched");  // a holding limit leaves `why` alone
  EXPECT_FALSE(eval_limit("dim <= 8192", v, &why));
  EXPECT_EQ(why, "dim <= 8192 (dim = 16384)");
  EXPECT_FALSE(eval_limit("dim % 3 == 0 && rows > 3 && dim > rows", v, &why));
  EXPECT_EQ(why, "dim % 3 == 0 && rows > 3 && dim > rows (dim = 16384, rows = 3)");  // each name once
  EXPECT_FALSE(eval_limit("1e5 < 4", v, &why));
  EXPECT_EQ(why, "1e5 < 4");  // no names: just the limit ("e5" is part of a number)
  EXPECT_FALSE(eval_limit("eps > 0.001", v, &why));
  EXPECT_EQ(why, "eps > 0.001 (eps = 1e-06)");
  EXPECT_FALSE(eval_limit("dim < 100", {{"dim", 100000}}, &why));
  EXPECT_EQ(why, "dim < 100 (dim = 100000)");  // integers exactly, not "1e+05"
  EXPECT_EQ(format_value(-7), "-7");
  EXPECT_EQ(format_value(2.5), "2.5");
  EXPECT_FALSE(eval_limit("0", v, nullptr));  // why is optional
  EXPECT_THROW(eval_limit("dimm < 3", v, &why), Error);
}

}  // namespace
}  // namespace moe::compare
