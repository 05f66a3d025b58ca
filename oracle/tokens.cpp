#include "oracle/tokens.h"

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/check.h"

namespace moe {
namespace {

// An item as it may be shown in a message: a control byte (a NUL would end the message) as \xNN.
std::string shown(const std::string& item) {
  std::string out;
  for (unsigned char ch : item) {
    if (ch >= 0x20 && ch != 0x7f) {
      out += char(ch);
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  return out;
}

}  // namespace

std::vector<int32_t> parse_tokens(const std::string& text, const std::string& source) {
  std::vector<int32_t> ids;
  std::string s = text;
  for (char& ch : s)
    if (ch == ',' || ch == '\n' || ch == '\t') ch = ' ';
  std::istringstream in(s);
  for (std::string item; in >> item;) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    // The whole item is the number: strtoll stops at a NUL byte too, so "5\0x" is not 5.
    MOE_CHECK(end == item.c_str() + item.size() && v >= 0 && v <= INT32_MAX,
              source << ": token '" << shown(item) << "' is not a non-negative integer id");
    ids.push_back(int32_t(v));
  }
  MOE_CHECK(!ids.empty(), source << ": no tokens");
  return ids;
}

std::vector<int32_t> read_tokens(const std::string& tokens, const std::string& tokens_file, const char* command) {
  MOE_CHECK(tokens.empty() != tokens_file.empty(), command << ": give exactly one of --tokens and --tokens-file");
  if (!tokens.empty()) return parse_tokens(tokens, "--tokens");
  std::ifstream f(tokens_file);
  MOE_CHECK(f, tokens_file << ": cannot open");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_tokens(ss.str(), tokens_file);
}

void check_token_range(const std::vector<int32_t>& tokens, int64_t vocab, const char* command) {
  for (size_t t = 0; t < tokens.size(); ++t)
    MOE_CHECK(tokens[t] < vocab, command << ": token id " << tokens[t] << " at position " << t << " out of range [0, "
                                         << vocab << ")");
}

}  // namespace moe
