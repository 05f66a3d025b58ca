// Manifest expressions (manifest.h): a recursive-descent parser evaluated as it parses.
// Grammar, lowest precedence first (C's precedence and associativity):
//   or      := and ('||' and)*
//   and     := bitor ('&&' bitor)*
//   bitor   := bitxor ('|' bitxor)*
//   bitxor  := bitand ('^' bitand)*
//   bitand  := cmp ('&' cmp)*
//   cmp     := shift (('<' | '<=' | '>' | '>=' | '==' | '!=') shift)?   // no chaining: a < b < c is an error
//   shift   := add (('<<' | '>>') add)*
//   add     := mul (('+' | '-') mul)*
//   mul     := unary (('*' | '/' | '%') unary)*
//   unary   := ('-' | '!') unary | primary
//   primary := number | 'inf' | identifier | identifier '(' expr (',' expr)* ')' | '(' expr ')'
// Values are doubles carrying an "integral" flag: a literal without '.'/exponent and a variable
// holding an integral value are integers; + - * / % on two integers follow C (/ truncates toward
// zero, % takes the dividend's sign) so dispatch counts and limits mean what they mean in the
// kernel's own C/GLSL. One float operand makes the operation floating (% then errors: fmod is
// never what a dispatch or limit wants). Comparisons and logic give the integers 0 or 1.
// && and || evaluate both sides (no short circuit): an unknown name in either side is an error
// even when the other side decides, so a typo in a limit cannot hide. select(c, a, b) is lazy
// about VALUES only: the branch not taken is parsed "dry" (names still looked up, no arithmetic
// and so no arithmetic errors), so select(d != 0, n / d, 0) is fine and a typo still fails.
// Bitwise operators (& | ^ << >>) take non-negative integers (engines pack shift counts and
// masks into one u32). Integer results are exact up to 2^53; anything beyond is an error, never a
// rounded or wrapped value. A NaN result (inf - inf, pow(-1, 0.5)) is an error too.
#include <algorithm>
#include <charconv>
#include <cfloat>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <system_error>
#include <sstream>
#include <string>
#include <vector>

#include "compare/manifest/manifest.h"
#include "core/check.h"

namespace moe::compare {

std::string format_value(double v) {
  // Integers exactly ("100000", not "1e+05"); others in the shortest text that reads back as the
  // same double ("1e-06", not "9.9999999999999995e-07").
  if (std::isfinite(v) && std::floor(v) == v && std::fabs(v) < 1e16) return std::to_string(static_cast<int64_t>(v));
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

namespace {

struct Value {
  double v = 0;
  bool integral = true;
};

// Integers beyond 2^53 are not exact in a double; no dispatch, size or limit gets near it.
constexpr double kMaxExactInt = 9007199254740992.0;

// Tensor names as cases spell them: "x", "W.scales".
bool is_tensor_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

// The data predicate `name(tensor)` where `expr` has one at `i` (an identifier just read, ending
// before `i`): its variable name, and `i` moved past the ')'. "" (and `i` unchanged) otherwise.
std::string predicate_at(const std::string& expr, const std::string& name, size_t& i) {
  if (!is_data_predicate(name)) return "";
  size_t j = i;
  while (j < expr.size() && (expr[j] == ' ' || expr[j] == '\t' || expr[j] == '\n')) ++j;
  if (j >= expr.size() || expr[j] != '(') return "";
  ++j;
  while (j < expr.size() && (expr[j] == ' ' || expr[j] == '\t' || expr[j] == '\n')) ++j;
  const size_t t0 = j;
  while (j < expr.size() && is_tensor_char(expr[j])) ++j;
  const std::string tensor = expr.substr(t0, j - t0);
  while (j < expr.size() && (expr[j] == ' ' || expr[j] == '\t' || expr[j] == '\n')) ++j;
  if (tensor.empty() || j >= expr.size() || expr[j] != ')') return "";
  i = j + 1;
  return data_predicate_var(name, tensor);
}

bool is_integral_value(double v) { return std::isfinite(v) && std::floor(v) == v && std::fabs(v) <= kMaxExactInt; }

class Parser {
 public:
  Parser(const std::string& expr, const ExprVars& vars, bool check_only)
      : s_(expr), vars_(vars), check_only_(check_only) {}

  Value parse() {
    skip_ws();
    MOE_CHECK(pos_ < s_.size(), "expression '" << s_ << "': empty");
    Value v = parse_or();
    skip_ws();
    if (pos_ < s_.size()) fail("unexpected '" + s_.substr(pos_, 1) + "'");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    MOE_FAIL("expression '" << s_ << "': " << what << " at column " << pos_ + 1);
  }

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
  }
  // Consumes `tok` if it comes next (after blanks). A one-char operator does not match the start
  // of a two-char one ('<' vs '<=', '!' vs '!=').
  bool accept(const char* tok) {
    skip_ws();
    size_t n = std::char_traits<char>::length(tok);
    if (s_.compare(pos_, n, tok) != 0) return false;
    if (n == 1 && pos_ + 1 < s_.size()) {
      // Nor '<' the start of '<<', '&' of '&&', '|' of '||'.
      const char c = tok[0], next = s_[pos_ + 1];
      if ((c == '<' || c == '>' || c == '!' || c == '=') && next == '=') return false;
      if ((c == '<' || c == '>' || c == '&' || c == '|') && next == c) return false;
    }
    pos_ += n;
    return true;
  }
  void expect(const char* tok) {
    if (!accept(tok)) fail(std::string("expected '") + tok + "'");
  }

  static Value boolean(bool b) { return {b ? 1.0 : 0.0, true}; }
  static bool truth(Value v) { return v.v != 0.0; }

  Value parse_or() {
    Value l = parse_and();
    while (accept("||")) {
      Value r = parse_and();
      l = boolean(truth(l) || truth(r));
    }
    return l;
  }
  Value parse_and() {
    Value l = parse_bitor();
    while (accept("&&")) {
      Value r = parse_bitor();
      l = boolean(truth(l) && truth(r));
    }
    return l;
  }
  Value parse_bitor() {
    Value l = parse_bitxor();
    while (accept("|")) l = bitwise('|', l, parse_bitxor());
    return l;
  }
  Value parse_bitxor() {
    Value l = parse_bitand();
    while (accept("^")) l = bitwise('^', l, parse_bitand());
    return l;
  }
  Value parse_bitand() {
    Value l = parse_cmp();
    while (accept("&")) l = bitwise('&', l, parse_cmp());
    return l;
  }
  Value parse_cmp() {
    Value l = parse_shift();
    static const char* ops[] = {"<=", ">=", "==", "!=", "<", ">"};
    for (const char* op : ops) {
      if (!accept(op)) continue;
      Value r = parse_shift();
      bool b = false;
      std::string o = op;
      if (o == "<=") b = l.v <= r.v;
      else if (o == ">=") b = l.v >= r.v;
      else if (o == "==") b = l.v == r.v;
      else if (o == "!=") b = l.v != r.v;
      else if (o == "<") b = l.v < r.v;
      else b = l.v > r.v;
      for (const char* op2 : ops)
        if (accept(op2)) fail("comparisons do not chain; write (a < b) && (b < c)");
      return boolean(b);
    }
    return l;
  }
  Value parse_shift() {
    Value l = parse_add();
    for (;;) {
      if (accept("<<")) l = bitwise('<', l, parse_add());
      else if (accept(">>")) l = bitwise('>', l, parse_add());
      else return l;
    }
  }
  Value parse_add() {
    Value l = parse_mul();
    for (;;) {
      if (accept("+")) l = arith('+', l, parse_mul());
      else if (accept("-")) l = arith('-', l, parse_mul());
      else return l;
    }
  }
  Value parse_mul() {
    Value l = parse_unary();
    for (;;) {
      if (accept("*")) l = arith('*', l, parse_unary());
      else if (accept("/")) l = arith('/', l, parse_unary());
      else if (accept("%")) l = arith('%', l, parse_unary());
      else return l;
    }
  }
  Value parse_unary() {
    // Nesting depth (parentheses, unary operators, function arguments) is bounded so a hostile
    // or broken manifest cannot overflow the stack; real expressions nest a few levels.
    constexpr int kMaxDepth = 100;
    if (++depth_ > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    Value v = parse_unary_inner();
    --depth_;
    return v;
  }
  Value parse_unary_inner() {
    if (accept("-")) {
      Value v = parse_unary();
      return {-v.v, v.integral};
    }
    if (accept("!")) return boolean(!truth(parse_unary()));
    return parse_primary();
  }

  Value parse_primary() {
    skip_ws();
    if (pos_ >= s_.size()) fail("unexpected end");
    char c = s_[pos_];
    if (accept("(")) {
      Value v = parse_or();
      expect(")");
      return v;
    }
    if ((c >= '0' && c <= '9') || c == '.') return parse_number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
      std::string name = s_.substr(start, pos_ - start);
      if (accept("(")) return call(name, start);
      // A constant, not a variable: -inf through unary minus.
      if (name == "inf") return {std::numeric_limits<double>::infinity(), false};
      if (check_only_) return {1.0, true};
      auto it = vars_.find(name);
      if (it == vars_.end()) {
        pos_ = start;
        fail("unknown name '" + name + "'" + known_names());
      }
      return {it->second, is_integral_value(it->second)};
    }
    fail("unexpected '" + std::string(1, c) + "'");
  }

  Value parse_number() {
    // from_chars: locale-independent (strtod would read "0.5" as 0 under a comma locale) and
    // decimal only (no hex, inf or nan).
    const char* begin = s_.c_str() + pos_;
    double v = 0;
    auto [end, ec] = std::from_chars(begin, s_.c_str() + s_.size(), v, std::chars_format::general);
    if (ec != std::errc() || end == begin) fail("bad number");
    std::string text(begin, static_cast<size_t>(end - begin));
    pos_ += text.size();
    // "0x10" reads as 0 followed by a name: reject a number glued to a letter or digit run.
    if (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '.'))
      fail("bad number '" + text + s_[pos_] + "...'");
    bool integral = text.find_first_of(".eE") == std::string::npos;
    if (integral && std::fabs(v) > kMaxExactInt) fail("integer " + text + " is beyond 2^53");
    return {v, integral};
  }

  // True while parsing what is not evaluated: the whole expression in check_expr, or the branch
  // select() does not take. Arithmetic then yields placeholders and raises no errors.
  bool dry() const { return check_only_ || lazy_ > 0; }

  Value call(const std::string& name, size_t start) {
    if (name == "select") return call_select(start);
    if (is_data_predicate(name)) return call_predicate(name, start);
    std::vector<Value> args;
    if (!accept(")")) {
      do args.push_back(parse_or());
      while (accept(","));
      expect(")");
    }
    auto need = [&](size_t n) {
      if (args.size() != n) {
        pos_ = start;
        fail(name + "() takes " + std::to_string(n) + " arguments, got " + std::to_string(args.size()));
      }
    };
    if (name == "min" || name == "max" || name == "ceil_div" || name == "pow") {
      need(2);
      return binary_function(name, args[0], args[1], start);
    }
    static const char* unary[] = {"exp", "log", "log2", "sqrt", "floor", "ceil", "abs", "f32",
                                  "is_pow2", "log2_floor", "fastdiv_l", "fastdiv_mp"};
    for (const char* u : unary) {
      if (name != u) continue;
      need(1);
      if (dry()) return {1.0, name != "exp" && name != "log" && name != "log2" && name != "sqrt" && name != "f32"};
      Value r = name == "is_pow2" || name == "log2_floor" || name == "fastdiv_l" || name == "fastdiv_mp"
                    ? integer_function(name, args[0], start)
                    : math_function(name, args[0], start);
      if (std::isnan(r.v)) {
        pos_ = start;
        fail(name + "(" + num(args[0]) + ") is not a number");
      }
      return r;
    }
    pos_ = start;
    fail("unknown function '" + name +
         "' (known: ceil_div, min, max, pow, exp, log, log2, sqrt, floor, ceil, abs, f32, select, is_pow2, "
         "log2_floor, fastdiv_l, fastdiv_mp)");
  }

  // all_finite(t), any_nan(t), any_inf(t), max_abs(t): a fact about the case's input tensor t,
  // computed by the harness and passed as the variable "name(t)" (data_predicate_var).
  Value call_predicate(const std::string& name, size_t start) {
    skip_ws();
    const size_t t0 = pos_;
    while (pos_ < s_.size() && is_tensor_char(s_[pos_])) ++pos_;
    const std::string tensor = s_.substr(t0, pos_ - t0);
    if (tensor.empty() || !accept(")")) {
      pos_ = start;
      fail(name + "() takes one tensor name, e.g. " + name + "(x)");
    }
    const bool boolean_result = name != "max_abs";
    if (check_only_) return {1.0, boolean_result};
    auto it = vars_.find(data_predicate_var(name, tensor));
    if (it != vars_.end()) return {it->second, boolean_result};
    std::string tensors;
    const std::string prefix = name + "(";
    for (const auto& [k, v] : vars_)
      if (k.rfind(prefix, 0) == 0)
        tensors += (tensors.empty() ? "" : ", ") + k.substr(prefix.size(), k.size() - prefix.size() - 1);
    pos_ = start;
    if (tensors.empty())
      fail(name + "(" + tensor +
           "): no case data here (data predicates read the case's input tensors: in limits and differences' \"when\")");
    fail(name + "(" + tensor + "): unknown tensor '" + tensor + "' (the op's input tensors: " + tensors + ")");
  }

  // select(c, a, b): a where c is non-zero, else b; the other branch is parsed dry.
  Value call_select(size_t start) {
    Value c = parse_or();
    const bool take_a = dry() || truth(c);
    Value r;
    for (int branch = 0; branch < 2; ++branch) {
      if (!accept(",")) {
        pos_ = start;
        fail("select() takes 3 arguments: select(condition, if_true, if_false)");
      }
      const bool taken = (branch == 0) == take_a;
      if (!taken) ++lazy_;
      Value v = parse_or();
      if (!taken) --lazy_;
      if (taken) r = v;
    }
    if (!accept(")")) {
      pos_ = start;
      fail("select() takes 3 arguments: select(condition, if_true, if_false)");
    }
    return r;
  }

  Value binary_function(const std::string& name, Value a, Value b, size_t start) {
    if (name == "min" || name == "max") {
      bool lt = a.v < b.v;
      Value r = (name == "min") == lt ? a : b;
      r.integral = a.integral && b.integral;
      return r;
    }
    if (dry()) return {1.0, name == "ceil_div"};
    if (name == "ceil_div") {
      // ceil_div counts workgroups: both sides must be non-negative integers, the divisor > 0.
      if (!a.integral || !b.integral || a.v < 0 || b.v <= 0) {
        pos_ = start;
        fail("ceil_div(" + num(a) + ", " + num(b) + ") needs integers a >= 0, b > 0");
      }
      return {std::floor((a.v + b.v - 1) / b.v), true};
    }
    // pow: floating point, for constants engines compute on the host and pass in (ggml's
    // theta_scale = powf(base, -2.0f / n_dims)): evaluated in double; f32() rounds like the host.
    double r = std::pow(a.v, b.v);
    if (std::isnan(r)) {
      pos_ = start;
      fail("pow(" + num(a) + ", " + num(b) + ") is not a real number");
    }
    return {r, false};
  }

  Value math_function(const std::string& name, Value a, size_t start) {
    const double x = a.v;
    if (((name == "log" || name == "log2") && x <= 0) || (name == "sqrt" && x < 0)) {
      pos_ = start;
      fail(name + "(" + num(a) + ") is not a real number");
    }
    if (name == "exp") return {std::exp(x), false};
    if (name == "log") return {std::log(x), false};
    if (name == "log2") return {std::log2(x), false};
    if (name == "sqrt") return {std::sqrt(x), false};
    if (name == "abs") return {std::fabs(x), a.integral};
    if (name == "f32") {
      // The float nearest x, as a host's (float) cast gives; beyond float's range is an error
      // (the conversion is undefined in C++, and no engine constant means it).
      if (std::isfinite(x) && std::fabs(x) > FLT_MAX) {
        pos_ = start;
        fail("f32(" + num(a) + ") is beyond the float range");
      }
      return {static_cast<double>(static_cast<float>(x)), false};
    }
    const double r = name == "floor" ? std::floor(x) : std::ceil(x);
    return {r, is_integral_value(r)};  // floor(1e300) is no exact integer
  }

  // Integer functions of one non-negative integer, computed exactly in 64 bits.
  Value integer_function(const std::string& name, Value a, size_t start) {
    const bool fastdiv = name == "fastdiv_l" || name == "fastdiv_mp";
    const double lo = name == "is_pow2" ? 0 : 1, hi = fastdiv ? 2147483647.0 : kMaxExactInt;
    if (!a.integral || a.v < lo || a.v > hi) {
      pos_ = start;
      fail(name + "(" + num(a) + ") needs an integer in [" + format_value(lo) + ", " + format_value(hi) + "]");
    }
    const uint64_t n = static_cast<uint64_t>(a.v);
    if (name == "is_pow2") return boolean(n != 0 && (n & (n - 1)) == 0);
    uint64_t l = 0;  // log2_floor: the largest l with 2^l <= n; fastdiv_l: the smallest with 2^l >= n
    if (name == "log2_floor") {
      while ((n >> (l + 1)) != 0) ++l;
      return {static_cast<double>(l), true};
    }
    while ((uint64_t{1} << l) < n) ++l;
    if (name == "fastdiv_l") return {static_cast<double>(l), true};
    // ggml's multiplier: n / d == (mulhi(n, mp) + n) >> L for 32-bit n < 2^31. (2^L - d) < d <= 2^31,
    // so the product stays below 2^63 and mp below 2^32.
    const uint64_t mp = (uint64_t{1} << 32) * ((uint64_t{1} << l) - n) / n + 1;
    return {static_cast<double>(mp), true};
  }

  // & | ^ and shifts ('<' is <<, '>' is >>) on non-negative integers.
  Value bitwise(char op, Value a, Value b) {
    const char* text = op == '<' ? "<<" : op == '>' ? ">>" : op == '&' ? "&" : op == '|' ? "|" : "^";
    if (dry()) return {1.0, true};
    if (!a.integral || !b.integral || a.v < 0 || b.v < 0)
      fail(std::string("'") + text + "' needs non-negative integers, got " + num(a) + " " + text + " " + num(b));
    const uint64_t x = static_cast<uint64_t>(a.v), y = static_cast<uint64_t>(b.v);
    if ((op == '<' || op == '>') && y >= 64)
      fail("shift by " + num(b) + " (64 or more) in " + num(a) + " " + text + " " + num(b));
    double r = 0;
    switch (op) {
      case '&': r = static_cast<double>(x & y); break;
      case '|': r = static_cast<double>(x | y); break;
      case '^': r = static_cast<double>(x ^ y); break;
      case '>': r = static_cast<double>(x >> y); break;
      default: r = std::ldexp(a.v, static_cast<int>(y)); break;  // exact: a power-of-two scaling
    }
    if (r > kMaxExactInt) fail(std::string("integer overflow beyond 2^53 in ") + num(a) + " " + text + " " + num(b));
    return {r, true};
  }

  Value arith(char op, Value a, Value b) {
    bool integral = a.integral && b.integral;
    if (dry()) return {1.0, integral};
    if ((op == '/' || op == '%') && b.v == 0.0) fail(std::string("division by zero in ") + num(a) + " " + op + " 0");
    if (integral) {
      // Operands are within 2^53, so + and - fit int64; a product may not: check it in double
      // first (signed overflow would be undefined behaviour, not an error).
      if (op == '*' && std::fabs(a.v * b.v) > kMaxExactInt)
        fail("integer overflow beyond 2^53 in " + num(a) + " * " + num(b));
      int64_t x = static_cast<int64_t>(a.v), y = static_cast<int64_t>(b.v), r = 0;
      switch (op) {
        case '+': r = x + y; break;
        case '-': r = x - y; break;
        case '*': r = x * y; break;
        case '/': r = x / y; break;  // C: truncates toward zero
        default: r = x % y; break;   // C: the dividend's sign
      }
      double d = static_cast<double>(r);
      if (std::fabs(d) > kMaxExactInt) fail("integer overflow beyond 2^53 in " + num(a) + " " + op + " " + num(b));
      return {d, true};
    }
    double r = 0;
    switch (op) {
      case '+': r = a.v + b.v; break;
      case '-': r = a.v - b.v; break;
      case '*': r = a.v * b.v; break;
      case '/': r = a.v / b.v; break;
      default: fail("% needs integer operands, got " + num(a) + " % " + num(b));
    }
    if (std::isnan(r)) fail(std::string("not a number: ") + num(a) + " " + op + " " + num(b));
    return {r, false};
  }

  static std::string num(Value v) { return format_value(v.v); }
  std::string known_names() const {
    if (vars_.empty()) return " (no variables are defined here)";
    std::string s = " (known:";
    for (const auto& [k, v] : vars_)
      if (k.find('(') == std::string::npos) s += " " + k;  // not the data predicates' values
    return s + ")";
  }

  const std::string& s_;
  const ExprVars& vars_;
  bool check_only_;
  int lazy_ = 0;  // > 0 inside a branch select() does not take
  size_t pos_ = 0;
  int depth_ = 0;
};

// The variables a limit mentions, with their values: "dim = 16384, rows = 2".
std::string mentioned(const std::string& expr, const ExprVars& vars) {
  std::string out;
  size_t i = 0;
  std::vector<std::string> seen;
  while (i < expr.size()) {
    if (std::isalpha(static_cast<unsigned char>(expr[i])) || expr[i] == '_') {
      size_t start = i;
      while (i < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[i])) || expr[i] == '_')) ++i;
      std::string name = expr.substr(start, i - start);
      const std::string pred = predicate_at(expr, name, i);
      if (!pred.empty()) name = pred;  // "max_abs(x) = 3.5"
      auto it = vars.find(name);
      if (it == vars.end() || std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
      seen.push_back(name);
      out += (out.empty() ? "" : ", ") + name + " = " + format_value(it->second);
    } else if (std::isdigit(static_cast<unsigned char>(expr[i]))) {
      // Skip a number whole so "1e5" does not read 'e5' as a name.
      while (i < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[i])) || expr[i] == '.')) ++i;
    } else {
      ++i;
    }
  }
  return out;
}

}  // namespace

bool is_data_predicate(const std::string& name) {
  return name == "all_finite" || name == "any_nan" || name == "any_inf" || name == "max_abs";
}

std::string data_predicate_var(const std::string& predicate, const std::string& tensor) {
  return predicate + "(" + tensor + ")";
}

double eval_expr(const std::string& expr, const ExprVars& vars) { return Parser(expr, vars, false).parse().v; }

std::vector<std::string> expr_names(const std::string& expr) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < expr.size()) {
    if (std::isalpha(static_cast<unsigned char>(expr[i])) || expr[i] == '_') {
      size_t start = i;
      while (i < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[i])) || expr[i] == '_')) ++i;
      size_t j = i;
      while (j < expr.size() && (expr[j] == ' ' || expr[j] == '\t' || expr[j] == '\n')) ++j;
      std::string name = expr.substr(start, i - start);
      if (!predicate_at(expr, name, i).empty()) continue;  // its argument is a tensor, not a variable
      if (j < expr.size() && expr[j] == '(') continue;  // a function
      if (name == "inf") continue;  // a constant
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    } else if (std::isdigit(static_cast<unsigned char>(expr[i]))) {
      while (i < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[i])) || expr[i] == '.')) ++i;
    } else {
      ++i;
    }
  }
  return out;
}

ExprVars with_lets(const KernelEntry& k, const ExprVars& vars, const std::string& where) {
  if (k.lets.empty()) return vars;
  ExprVars out = vars;
  for (const auto& [name, expr] : k.lets) {
    // A let that shadows an op parameter or device property would make one name mean two things.
    MOE_CHECK(!vars.count(name), where << " '" << k.name << "': let \"" << name
                                       << "\" shadows the op's or device's variable of that name");
    try {
      out[name] = eval_expr(expr, out);
    } catch (const Error& e) {
      MOE_FAIL(where << " '" << k.name << "': let \"" << name << "\": " << e.what());
    }
  }
  return out;
}

void check_expr(const std::string& expr) {
  static const ExprVars none;
  Parser(expr, none, true).parse();
}

bool eval_limit(const std::string& expr, const ExprVars& vars, std::string* why) {
  bool ok = eval_expr(expr, vars) != 0.0;
  if (!ok && why) {
    std::string m = mentioned(expr, vars);
    *why = m.empty() ? expr : expr + " (" + m + ")";
  }
  return ok;
}

}  // namespace moe::compare
