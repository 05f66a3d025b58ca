#include "oracle/dump.h"

#include <fnmatch.h>

#include <sstream>

#include "core/check.h"
#include "oracle/safetensors.h"

namespace moe {

DumpSink::DumpSink(std::vector<std::string> globs) : globs_(std::move(globs)) {}

bool DumpSink::wants(const std::string& name) const {
  if (globs_.empty()) return true;
  for (const std::string& g : globs_)
    if (::fnmatch(g.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

DumpSink::Tensor& DumpSink::slot(const std::string& name, bool is_int, int64_t cols) {
  auto [it, fresh] = tensors_.try_emplace(name);
  if (fresh) {
    order_.push_back(name);
    it->second.is_int = is_int;
    it->second.cols = cols;
  }
  MOE_CHECK(it->second.cols == cols && it->second.is_int == is_int,
            "dump: tap '" << name << "' changed shape between calls (" << it->second.cols << " -> " << cols << " columns)");
  return it->second;
}

void DumpSink::put(const std::string& name, std::span<const float> data, int64_t rows, int64_t cols) {
  Tensor& t = slot(name, false, cols);
  t.f.insert(t.f.end(), data.begin(), data.begin() + rows * cols);
  t.rows += rows;
}

void DumpSink::put_i32(const std::string& name, std::span<const int32_t> data, int64_t rows, int64_t cols) {
  Tensor& t = slot(name, true, cols);
  t.i.insert(t.i.end(), data.begin(), data.begin() + rows * cols);
  t.rows += rows;
}

std::vector<std::pair<std::string, DumpSink::Tensor>> DumpSink::take() {
  std::vector<std::pair<std::string, Tensor>> out;
  out.reserve(order_.size());
  for (const std::string& name : order_) out.emplace_back(name, std::move(tensors_.at(name)));
  tensors_.clear(), order_.clear();
  return out;
}

void DumpSink::write(const std::string& path, const std::map<std::string, std::string>& metadata) const {
  std::vector<TensorOut> out;
  for (const std::string& name : order_) {
    const Tensor& t = tensors_.at(name);
    out.push_back({name, t.is_int ? DType::I32 : DType::F32, {t.rows, t.cols},
                   t.is_int ? static_cast<const void*>(t.i.data()) : static_cast<const void*>(t.f.data())});
  }
  write_safetensors(path, out, metadata, "the dump");
}

}  // namespace moe
