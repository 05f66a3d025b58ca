// `inspect` of safetensors dumps and GGUF files, and `diff` over dumps (the diff itself:
// oracle/dump_diff.h).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>

#include "commands.h"
#include "core/check.h"
#include "core/ggml_blocks.h"
#include "oracle/dump_diff.h"
#include "oracle/gguf.h"
#include "oracle/safetensors.h"
#include "oracle/tap_map.h"

namespace moe::cli {
namespace {

struct InspectOptions {
  std::string file;
};

struct DiffOptions {
  std::string a, b;
  double threshold = 1e-5;  // max |a-b| / max |a| per tap
  std::string map;          // mapping file: B's (another engine's) tensor names -> tap names (oracle/tap_map.h)
};

// One row of statistics: min, max, mean, std over the finite values, NaN and Inf counts.
void print_stats(const std::string& name, const std::string& type, const std::string& shape,
                 const std::vector<double>& v) {
  double lo = INFINITY, hi = -INFINITY, sum = 0, sq = 0;
  int64_t nan = 0, inf = 0, finite = 0;
  for (double x : v) {
    if (std::isnan(x)) { ++nan; continue; }
    if (std::isinf(x)) { ++inf; continue; }
    lo = std::min(lo, x), hi = std::max(hi, x), sum += x, sq += x * x, ++finite;
  }
  const double mean = finite ? sum / double(finite) : NAN;
  const double sd = finite ? std::sqrt(std::max(0.0, sq / double(finite) - mean * mean)) : NAN;
  std::printf("%-56s %-5s %-14s %12.5g %12.5g %12.5g %12.5g %6lld %6lld\n", name.c_str(), type.c_str(), shape.c_str(),
              lo, hi, mean, sd, (long long)nan, (long long)inf);
}

// A GGUF file: its header, metadata and tensors (ggml's dimension order, ne[0] first); the values
// of every type core/ggml_blocks.h decodes (exactly) summarised, other types listed with their
// size and offset.
int inspect_gguf(const std::string& path) {
  const GgufFile f(path);
  std::printf("# GGUF version %u, %zu metadata entries, %zu tensors, alignment %llu, data from byte %llu\n",
              f.version(), f.metadata().size(), f.tensors().size(), (unsigned long long)f.alignment(),
              (unsigned long long)f.data_start());
  for (const auto& [key, v] : f.metadata()) std::printf("# %s: %s\n", key.c_str(), v.summary().c_str());
  std::printf("%-56s %-5s %-14s %12s %12s %12s %12s %6s %6s\n", "tensor", "type", "ne", "min", "max", "mean", "std",
              "NaN", "Inf");
  for (const GgufTensor& t : f.tensors()) {
    const std::string type = t.type->name;
    if (ggml_dequant_supported(t.type->id)) {
      std::vector<double> v(size_t(t.numel()));
      ggml_dequant_f64(t.type->id, {t.data, t.bytes}, t.numel(), v.data());
      print_stats(t.name, type, t.shape_string(), v);
    } else {
      std::printf("%-56s %-5s %-14s %llu bytes at data offset %llu\n", t.name.c_str(), type.c_str(),
                  t.shape_string().c_str(), (unsigned long long)t.bytes, (unsigned long long)t.offset);
    }
  }
  return 0;
}

int inspect_dump(const InspectOptions& opt) {
  if (is_gguf_file(opt.file)) return inspect_gguf(opt.file);
  SafetensorsFile f(opt.file);
  for (const auto& [k, v] : f.metadata()) std::printf("# %s: %s\n", k.c_str(), v.c_str());
  std::printf("%-56s %-5s %-14s %12s %12s %12s %12s %6s %6s\n", "tensor", "dtype", "shape", "min", "max", "mean",
              "std", "NaN", "Inf");
  for (const std::string& name : f.names_in_file_order()) {
    const TensorInfo& t = *f.find(name);
    print_stats(name, dtype_name(t.dtype), t.shape_string(), tensor_values(t));
  }
  return 0;
}

int diff_dumps(const DiffOptions& opt) {
  SafetensorsFile a(opt.a), b(opt.b);
  std::optional<TapMap> map;
  if (!opt.map.empty()) map = TapMap::load(opt.map);
  std::printf("diff %s (A) vs %s (B)%s; a tap fails when max|A-B| / max|A| > %g or NaN/Inf differ\n", opt.a.c_str(),
              opt.b.c_str(), map ? (" with B's names mapped by " + opt.map).c_str() : "", opt.threshold);
  const DumpDiff diff = moe::diff_dumps(a, b, map ? &*map : nullptr, opt.threshold);
  std::printf("%-56s %-14s %12s %12s %12s %10s  %s\n", "tap (A's forward order)", "shape", "max|A-B|", "max|A|", "rel",
              "cosine", "verdict");
  auto label = [&](const TapDiff& d) { return map ? d.tap + " <- " + d.b_name : d.tap; };
  for (const TapDiff& d : diff.taps) {
    switch (d.kind) {
      case TapDiff::Kind::OnlyInA:
        std::printf("%-56s %-14s %s\n", d.tap.c_str(), d.shape.c_str(), "only in A");
        break;
      case TapDiff::Kind::Mismatch:
        std::printf("%-56s %-14s %s\n", label(d).c_str(), d.shape.c_str(), d.problem.c_str());
        break;
      case TapDiff::Kind::Compared: {
        const std::string shape = d.token >= 0 ? "row " + std::to_string(d.token) : d.shape;
        std::printf("%-56s %-14s %12.4g %12.4g %12.4g %10.7f  %s%s\n", label(d).c_str(), shape.c_str(), d.max_abs_diff,
                    d.max_abs_a, d.rel, d.cosine, d.failed ? "OVER" : "ok",
                    d.special ? (" (" + std::to_string(d.special) + " NaN/Inf mismatches)").c_str() : "");
        break;
      }
      case TapDiff::Kind::OnlyInB:
        std::printf("%-56s %s\n", label(d).c_str(), "only in B");
        break;
      case TapDiff::Kind::Unmapped:
        std::printf("%-56s %s\n", d.b_name.c_str(), "in B, not mapped to a tap");
        break;
    }
  }
  if (diff.first_failed >= 0) {
    const TapDiff& d = diff.taps[size_t(diff.first_failed)];
    const bool row = d.kind == TapDiff::Kind::Compared && d.token >= 0;
    std::printf("first tap over threshold: %s\n",
                (label(d) + (row ? " (token " + std::to_string(d.token) + ")" : "")).c_str());
  }
  std::printf("%d passed, %d failed\n", diff.compared - diff.failed, diff.failed);
  return diff.failed ? 1 : 0;
}

}  // namespace

Command add_inspect(CLI::App& app) {
  auto io = std::make_shared<InspectOptions>();
  auto* i = app.add_subcommand("inspect", "Shapes, dtypes, min/max/mean/std and NaN/Inf counts of a dump; a GGUF file's metadata and tensors");
  i->add_option("dump", io->file, "safetensors file (a dump) or GGUF file")->required();
  return {i, [io] { return inspect_dump(*io); }};
}

Command add_diff(CLI::App& app) {
  auto d = std::make_shared<DiffOptions>();
  auto* c = app.add_subcommand("diff", "Compare two dumps tap by tap in forward order; report the first divergent tap");
  c->add_option("a", d->a, "reference dump")->required();
  c->add_option("b", d->b, "candidate dump")->required();
  c->add_option("--threshold", d->threshold, "max|A-B| / max|A| above which a tap fails")->capture_default_str();
  c->add_option("--map", d->map, "JSON mapping B's tensor names (another engine's dump) to tap names");
  return {c, [d] { return diff_dumps(*d); }};
}

}  // namespace moe::cli
