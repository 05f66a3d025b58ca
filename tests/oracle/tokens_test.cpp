// Token ids from --tokens and --tokens-file (oracle/tokens.h): separators, the id range, and
// what is not an id — named with the source.
#include <filesystem>
#include <fstream>

#include "oracle/tokens.h"
#include "test_util.h"

namespace moe {
namespace {

TEST(tokens, CommasAndWhitespace) {
  EXPECT_EQ(parse_tokens("1,2,3", "t"), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(parse_tokens(" 5 17\n300\t42,\r\n7 ", "t"), (std::vector<int32_t>{5, 17, 300, 42, 7}));
  EXPECT_EQ(parse_tokens("0,2147483647", "t"), (std::vector<int32_t>{0, 2147483647}));
}

TEST(tokens, BadIdsNameTheSource) {
  test::expect_error([] { parse_tokens("", "f.txt"); }, "f.txt: no tokens");
  test::expect_error([] { parse_tokens("1,-2", "f.txt"); }, "f.txt: token '-2'");
  test::expect_error([] { parse_tokens("2147483648", "f.txt"); }, "token '2147483648'");
  test::expect_error([] { parse_tokens("12abc", "f.txt"); }, "token '12abc'");
  // A NUL byte inside an item: strtoll stops there, the item is still not a number.
  test::expect_error([] { parse_tokens(std::string("5\0x", 3), "f.txt"); }, "token '5\\x00x' is not a non-negative integer id");
}

TEST(tokens, FileOrTextNotBoth) {
  const std::filesystem::path p = std::filesystem::temp_directory_path() / "moeoracle_tokens_test.txt";
  std::ofstream(p) << "4 5\n6\n";
  EXPECT_EQ(read_tokens("", p.string(), "run"), (std::vector<int32_t>{4, 5, 6}));
  EXPECT_EQ(read_tokens("7", "", "run"), (std::vector<int32_t>{7}));
  test::expect_error([&] { read_tokens("7", p.string(), "run"); }, "run: give exactly one of --tokens and --tokens-file");
  test::expect_error([] { read_tokens("", "/nonexistent/t.txt", "run"); }, "/nonexistent/t.txt: cannot open");
  std::filesystem::remove(p);
}

}  // namespace
}  // namespace moe
