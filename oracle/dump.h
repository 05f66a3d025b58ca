// Taps selected by glob patterns, gathered over one or more forward calls (rows appended per
// call: prefill then decode steps give one [tokens, cols] tensor per tap) and written as one
// safetensors file whose __metadata__ records model, tokens, backend, tool version and seed.
// Tensors are written in forward order (the order of their first appearance).
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/strings.h"  // split_commas, for --taps lists
#include "oracle/forward.h"

namespace moe {

class DumpSink final : public TapSink {
 public:
  explicit DumpSink(std::vector<std::string> globs);  // empty = every tap
  bool wants(const std::string& name) const override;
  void put(const std::string& name, std::span<const float> data, int64_t rows, int64_t cols) override;
  void put_i32(const std::string& name, std::span<const int32_t> data, int64_t rows, int64_t cols) override;
  void write(const std::string& path, const std::map<std::string, std::string>& metadata) const;
  size_t size() const { return order_.size(); }

  struct Tensor {
    bool is_int = false;
    int64_t rows = 0, cols = 0;
    std::vector<float> f;    // [rows, cols] when !is_int
    std::vector<int32_t> i;  // [rows, cols] when is_int
  };
  // The gathered taps in forward order, moved out (the Python module hands the vectors to numpy
  // without a copy); the sink is empty afterwards.
  std::vector<std::pair<std::string, Tensor>> take();

 private:
  Tensor& slot(const std::string& name, bool is_int, int64_t cols);
  std::vector<std::string> globs_;
  std::map<std::string, Tensor> tensors_;
  std::vector<std::string> order_;
};

}  // namespace moe
