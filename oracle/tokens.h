// Token ids as the command line takes them (`--tokens 1,2,3` or `--tokens-file F`): non-negative
// decimal integers up to 2^31 - 1, separated by commas or whitespace.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moe {

// The ids in `text`; `source` names it in errors ("--tokens" or the file). At least one id.
std::vector<int32_t> parse_tokens(const std::string& text, const std::string& source);
// Exactly one of `tokens` (the text) and `tokens_file` (a path) given: the ids. `command` names
// the subcommand in the usage error.
std::vector<int32_t> read_tokens(const std::string& tokens, const std::string& tokens_file, const char* command);

// Every id below `vocab`; otherwise an error naming `command`, the id and its position.
void check_token_range(const std::vector<int32_t>& tokens, int64_t vocab, const char* command);

}  // namespace moe
