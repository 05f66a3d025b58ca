// Manifest expressions: precedence and associativity as in C, integer semantics where both
// operands are integral, the three functions, limits with their "why" text, and every error
// naming the expression.
#include <gtest/gtest.h>

#include <string>

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
  const char* bad[] = {"", "1 +", "(1 + 2", "1 2", "1 < 2 < 3", "dim = 4", "* 3", "0x10", "min(1, 2", "1 & 2", "2 ** 3",
                      "1e", "1.5.2", "2dim"};  // "inf" and "nan" are names: unknown ones
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
