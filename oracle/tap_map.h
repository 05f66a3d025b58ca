// Mapping files for `moeoracle diff --map`: another engine's dump names -> our tap names, so a
// dump written by any engine (PyTorch hooks, llama.cpp-style "blk.3.attn_norm", an MLX port) lines
// up with ours. JSON:
//   {"version": 1,
//    "map": {"blk.{layer}.attn_norm": "model.layers.{layer}.input_layernorm.out",
//            "t{token}.blk.{layer}.ffn_out": "model.layers.{layer}.mlp.out",
//            "result_output": "logits"}}
// Keys are the engine's names with {placeholders} matching decimal numbers; the value may use the
// same placeholders. {token} is special: the engine's tensor holds that one token's row, compared
// against that row of our tap. A key without placeholders is a literal name. The first rule that
// matches a name wins (rules in file order).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moe {

struct TapTarget {
  std::string tap;
  int64_t token = -1;  // >= 0: the engine tensor is this token's row of the tap
};

class TapMap {
 public:
  static TapMap load(const std::string& path);  // moe::Error naming the file and the entry
  static TapMap parse(const std::string& json_text, const std::string& where);
  std::optional<TapTarget> map(const std::string& engine_name) const;
  size_t size() const { return rules_.size(); }

 private:
  // `from` is lits[0] {vars[0]} lits[1] ... {vars[k-1]} lits[k]; each placeholder matches one or
  // more decimal digits.
  struct Rule {
    std::string from, to;
    std::vector<std::string> lits;
    std::vector<std::string> vars;  // placeholder names in `from`, in order
  };
  static bool match(const Rule& r, const std::string& name, std::vector<std::string>& values);
  std::vector<Rule> rules_;
};

}  // namespace moe
