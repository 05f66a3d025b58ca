#include "compare/mutate/mutants.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "core/rng.h"

namespace moe::compare {

const std::vector<MutationRule>& mutation_rules() {
  static const std::vector<MutationRule> rules = {
#define MOE_SWAP(name, from, to, klass, what) {#name, from, to, klass, what},
#define MOE_EDIT(name, klass, what) {#name, "", "", klass, what},
#include "compare/mutate/rules.def"
#undef MOE_SWAP
#undef MOE_EDIT
  };
  return rules;
}

std::string Mutant::id() const {
  return std::to_string(line) + ":" + std::to_string(column) + " " + rule + " '" + before + "' -> '" + after + "'";
}

namespace {

enum class Tok { Ident, Int, Float, Op };

struct Token {
  Tok kind = Tok::Op;
  std::string text;
  size_t pos = 0;  // byte offset in the source
  int line = 1, col = 1;
  bool skip = false;  // in a layout(...) qualifier or an array declaration's size: never mutated
};

const char* const kOps[] = {"<<=", ">>=", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "^^", "++", "--",
                            "+=",  "-=",  "*=", "/=", "%=", "&=", "|=", "^="};

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Tokens of the code: comments and preprocessor lines (with their continuations) left out.
std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> out;
  size_t i = 0;
  int line = 1;
  size_t line_start = 0;
  bool at_line_start = true;
  auto newline = [&](size_t at) { ++line, line_start = at + 1, at_line_start = true; };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      newline(i++);
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#' && at_line_start) {  // a preprocessor line, continued by a trailing backslash
      while (i < s.size() && !(s[i] == '\n' && s[i - 1] != '\\')) {
        if (s[i] == '\n') newline(i);
        ++i;
      }
      continue;
    }
    if (s.compare(i, 2, "//") == 0) {
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    if (s.compare(i, 2, "/*") == 0) {
      const size_t end = s.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? s.size() : end + 2;
      for (; i < stop; ++i)
        if (s[i] == '\n') newline(i);
      continue;
    }
    at_line_start = false;
    Token t;
    t.pos = i, t.line = line, t.col = int(i - line_start) + 1;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (i < s.size() && ident_char(s[i])) ++i;
      t.kind = Tok::Ident;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      bool is_float = false;
      if (c == '0' && i + 1 < s.size() && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        i += 2;
        while (i < s.size() && std::isxdigit(static_cast<unsigned char>(s[i]))) ++i;
      } else {
        while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) is_float |= s[i++] == '.';
        if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
          is_float = true, ++i;
          if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
          while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
        }
      }
      while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) is_float |= (s[i] == 'f' || s[i] == 'F'), ++i;
      t.kind = is_float ? Tok::Float : Tok::Int;
    } else {
      size_t n = 1;
      for (const char* op : kOps)
        if (s.compare(i, std::char_traits<char>::length(op), op) == 0) {
          n = std::char_traits<char>::length(op);
          break;
        }
      i += n;
      t.kind = Tok::Op;
    }
    t.text = s.substr(t.pos, i - t.pos);
    out.push_back(std::move(t));
  }
  return out;
}

// The token closing the bracket opened at `open` ("(" or "["), or tokens.size().
size_t closing(const std::vector<Token>& t, size_t open) {
  const std::string o = t[open].text, c = o == "(" ? ")" : "]";
  int depth = 0;
  for (size_t i = open; i < t.size(); ++i) {
    if (t[i].text == o) ++depth;
    if (t[i].text == c && --depth == 0) return i;
  }
  return t.size();
}

bool is_type(const std::string& s) {
  static const std::set<std::string> kTypes = {
      "float", "int",   "uint",  "bool",  "double", "vec2",  "vec3",  "vec4",  "ivec2",     "ivec3",     "ivec4",
      "uvec2", "uvec3", "uvec4", "bvec2", "bvec3",  "bvec4", "mat2",  "mat3",  "mat4",      "float16_t", "f16vec2",
      "f16vec4", "int8_t", "uint8_t", "int16_t", "uint16_t", "int64_t", "uint64_t", "dvec2", "dvec4"};
  return kTypes.count(s) > 0;
}

// A '[' in a `shared` declaration before any '=' (`shared FLOAT_TYPE sum[BLOCK_SIZE]`: the
// element type may be a macro the tokenizer cannot know).
bool in_shared_declaration(const std::vector<Token>& t, size_t i) {
  size_t k = i;
  while (k > 0 && t[k - 1].text != ";" && t[k - 1].text != "{" && t[k - 1].text != "}") {
    if (t[k - 1].text == "=") return false;
    --k;
  }
  return t[k].text == "shared";
}

// Marks tokens that are never mutated: layout(...) qualifiers and declared array sizes.
void mark_skips(std::vector<Token>& t) {
  for (size_t i = 0; i < t.size(); ++i) {
    const bool layout = t[i].text == "layout" && i + 1 < t.size() && t[i + 1].text == "(";
    const bool decl = t[i].text == "[" && i >= 1 &&
                      (is_type(t[i - 1].text) || (i >= 2 && t[i - 1].kind == Tok::Ident && is_type(t[i - 2].text)) ||
                       in_shared_declaration(t, i));
    if (!layout && !decl) continue;
    const size_t from = layout ? i + 1 : i, to = closing(t, from);
    for (size_t k = i; k <= to && k < t.size(); ++k) t[k].skip = true;
  }
}

// A token that ends an operand (so a following + or - is binary).
bool ends_operand(const Token& t) {
  if (t.kind == Tok::Int || t.kind == Tok::Float) return true;
  if (t.kind == Tok::Ident) return t.text != "return";
  return t.text == ")" || t.text == "]" || t.text == "++" || t.text == "--";
}

std::string int_text(const std::string& lit, int64_t delta, bool* ok) {
  std::string digits = lit, suffix;
  while (!digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back())) &&
         !(digits.size() > 2 && digits[1] == 'x' && std::isxdigit(static_cast<unsigned char>(digits.back()))))
    suffix.insert(suffix.begin(), digits.back()), digits.pop_back();
  const bool hex = digits.size() > 2 && (digits[1] == 'x' || digits[1] == 'X');
  const long long v = std::strtoll(digits.c_str(), nullptr, hex ? 16 : 10);
  *ok = v + delta >= 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, hex ? "0x%llX" : "%lld", static_cast<long long>(v + delta));
  return buf + suffix;
}

std::string float_text(const std::string& lit, bool* ok) {
  std::string digits = lit, suffix;
  while (!digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back())) && digits.back() != 'e' &&
         digits.back() != 'E')
    suffix.insert(suffix.begin(), digits.back()), digits.pop_back();
  const double v = std::strtod(digits.c_str(), nullptr);
  *ok = v != 0.0;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", 2.0 * v);
  std::string out = buf;
  if (out.find_first_of(".eEn") == std::string::npos) out += ".0";
  return out + suffix;
}

const std::set<std::string> kBarriers = {"barrier",         "memoryBarrier",      "memoryBarrierShared",
                                         "memoryBarrierBuffer", "memoryBarrierImage", "groupMemoryBarrier",
                                         "subgroupBarrier", "subgroupMemoryBarrier", "subgroupMemoryBarrierShared",
                                         "subgroupMemoryBarrierBuffer"};

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\n"), b = s.find_last_not_of(" \t\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

struct Edit {
  size_t from, to;  // byte range replaced
  std::string text;
};

// The edit `rule` makes at token i, if it applies there.
bool edit_at(const std::string& src, const std::vector<Token>& t, size_t i, const MutationRule& r, Edit* e) {
  const Token& k = t[i];
  if (k.skip) return false;
  const size_t end = k.pos + k.text.size();
  const std::string name = r.name;
  if (*r.from) {
    if (k.text != r.from) return false;
    if ((k.text == "+" || k.text == "-") && !(i > 0 && ends_operand(t[i - 1]))) return false;  // binary only
    if (k.kind == Tok::Ident && !(i + 1 < t.size() && t[i + 1].text == "(")) return false;     // min/max calls
    *e = {k.pos, end, r.to};
    return true;
  }
  bool ok = true;
  if (name == "int_plus_one" || name == "int_minus_one") {
    if (k.kind != Tok::Int) return false;
    *e = {k.pos, end, int_text(k.text, name == "int_plus_one" ? 1 : -1, &ok)};
    return ok;
  }
  if (name == "float_doubled") {
    if (k.kind != Tok::Float) return false;
    *e = {k.pos, end, float_text(k.text, &ok)};
    return ok;
  }
  if (name == "drop_barrier") {
    if (!kBarriers.count(k.text) || i + 3 >= t.size() || t[i + 1].text != "(" || t[i + 2].text != ")" ||
        t[i + 3].text != ";")
      return false;
    *e = {k.pos, t[i + 3].pos + 1, ""};
    return true;
  }
  if (name == "fma_drop_addend") {
    if (k.text != "fma" || i + 1 >= t.size() || t[i + 1].text != "(") return false;
    const size_t close = closing(t, i + 1);
    if (close >= t.size()) return false;
    std::vector<size_t> commas;
    int depth = 0;
    for (size_t j = i + 1; j < close; ++j) {
      if (t[j].text == "(" || t[j].text == "[") ++depth;
      if (t[j].text == ")" || t[j].text == "]") --depth;
      if (depth == 1 && t[j].text == ",") commas.push_back(j);
    }
    if (commas.size() != 2) return false;
    const std::string a = src.substr(t[i + 2].pos, t[commas[0]].pos - t[i + 2].pos);
    const std::string b = src.substr(t[commas[0] + 1].pos, t[commas[1]].pos - t[commas[0] + 1].pos);
    *e = {k.pos, t[close].pos + 1, "((" + trim(a) + ") * (" + trim(b) + "))"};
    return true;
  }
  if (name == "drop_negation") {
    if (k.text != "-" || (i > 0 && ends_operand(t[i - 1]))) return false;
    *e = {k.pos, end, ""};
    return true;
  }
  if (name == "index_plus_one" || name == "index_minus_one") {
    if (k.text != "[" || i == 0 || !ends_operand(t[i - 1])) return false;
    const size_t close = closing(t, i);
    if (close >= t.size() || close == i + 1) return false;
    const std::string inner = src.substr(t[i + 1].pos, t[close].pos - t[i + 1].pos);
    *e = {t[i + 1].pos, t[close].pos, "(" + inner + ")" + (name == "index_plus_one" ? " + 1" : " - 1")};
    return true;
  }
  return false;
}

std::string line_of(const std::string& s, size_t pos) {
  const size_t a = s.rfind('\n', pos == 0 ? 0 : pos - 1);
  const size_t from = a == std::string::npos || pos == 0 ? 0 : a + 1;
  const size_t b = s.find('\n', pos);
  return s.substr(from, (b == std::string::npos ? s.size() : b) - from);
}

std::string shorten(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\t') c = ' ';
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

}  // namespace

std::vector<Mutant> make_mutants(const std::string& source, const std::vector<std::string>& rules) {
  std::vector<Token> t = tokenize(source);
  mark_skips(t);
  std::vector<Mutant> out;
  for (const MutationRule& r : mutation_rules()) {
    if (!rules.empty() && std::find(rules.begin(), rules.end(), r.name) == rules.end()) continue;
    for (size_t i = 0; i < t.size(); ++i) {
      Edit e;
      if (!edit_at(source, t, i, r, &e)) continue;
      Mutant m;
      m.rule = r.name, m.line = t[i].line, m.column = t[i].col;
      m.before = shorten(source.substr(e.from, e.to - e.from)), m.after = shorten(e.text);
      m.source = source.substr(0, e.from) + e.text + source.substr(e.to);
      m.diff = "- " + line_of(source, e.from) + "\n+ " + line_of(m.source, e.from);
      out.push_back(std::move(m));
    }
  }
  return out;
}

std::vector<Mutant> sample_mutants(std::vector<Mutant> all, size_t max, uint64_t seed) {
  if (max == 0 || all.size() <= max) return all;
  std::map<std::string, std::vector<size_t>> by_rule;
  for (size_t i = 0; i < all.size(); ++i) by_rule[all[i].rule].push_back(i);
  Rng rng(seed);
  for (auto& [rule, idx] : by_rule)  // Fisher-Yates with the counter-based generator
    for (size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[size_t(rng.next_u64() % i)]);
  std::vector<size_t> pick;
  for (size_t round = 0; pick.size() < max; ++round)
    for (const MutationRule& r : mutation_rules()) {
      auto it = by_rule.find(r.name);
      if (it != by_rule.end() && round < it->second.size() && pick.size() < max) pick.push_back(it->second[round]);
    }
  std::sort(pick.begin(), pick.end());
  std::vector<Mutant> out;
  for (size_t i : pick) out.push_back(std::move(all[i]));
  return out;
}

}  // namespace moe::compare
