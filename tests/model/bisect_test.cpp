// Model-level differential on the tiny fixture (4 layers: 3 linear-attention, 1 full-attention)
// on the default Vulkan device (lavapipe in CI): the bundled kernels pass in isolated and free
// mode; a deliberately wrong kernel planted in one op is named by bisect with its exact layer,
// its case file reproduces the failure alone, and the same case passes on the bundled kernels.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "compare/model/html_report.h"
#include "compare/model/model_compare.h"
#include "compare/run/case_file.h"
#include "compare/run/driver.h"
#include "compare/shaders/bundled.h"
#include "compare/vk/runner.h"
#include "oracle/drift.h"
#include "oracle/judge.h"
#include "oracle/safetensors.h"
#include "oracle/synth.h"
#include "test_util.h"

namespace moe::compare {
namespace {
namespace fs = std::filesystem;

bool have_device() { return !vk::list_devices().empty(); }

const fs::path& work() {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() / ("moeoracle_bisect_test_" + std::to_string(::getpid()));
    fs::create_directories(d);
    write_synthetic_mlx(synthetic_preset("tiny"), 7, (d / "tiny").string());
    return d;
  }();
  return dir;
}

ModelCompareOptions options(const std::string& mode, const std::string& kernels = "") {
  ModelCompareOptions o;
  o.model = (work() / "tiny").string();
  o.kernels = kernels, o.mode = mode, o.progress = false;
  o.tokens = {1, 17, 42, 300, 7};
  o.prefill = 2;  // one 2-token prefill, then decode
  return o;
}

// A manifest with the bundled kernels, except `kernel`, compiled from its GLSL source with
// `from` replaced by `to` (the planted bug).
std::string planted_manifest(const std::string& name, const std::string& kernel, const std::string& from,
                             const std::string& to) {
  const fs::path dir = work() / name;
  fs::create_directories(dir);
  for (const auto& [file, bytes] : bundled_files()) {
    std::ofstream f(dir / file, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  std::ifstream src(std::string(MOE_SOURCE_DIR) + "/compare/shaders/" + kernel + ".comp");
  std::stringstream ss;
  ss << src.rdbuf();
  std::string glsl = ss.str();
  const size_t at = glsl.find(from);
  EXPECT_NE(at, std::string::npos) << "planted bug: '" << from << "' not in " << kernel << ".comp";
  if (at != std::string::npos) glsl.replace(at, from.size(), to);
  std::ofstream(dir / (kernel + "_planted.comp")) << glsl;
  nlohmann::json j = nlohmann::json::parse(bundled_manifest_json());
  for (auto& k : j["kernels"])
    if (k["name"] == kernel) {
      k.erase("spirv");
      k["glsl"] = kernel + "_planted.comp";
      k["name"] = kernel + "_planted";
    }
  std::ofstream(dir / "manifest.json") << j.dump(1);
  return (dir / "manifest.json").string();
}

TEST(bisect, BundledKernelsPassIsolatedAndFree) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  for (const char* mode : {"isolated", "free"}) {
    const ModelCompareResult r = run_model_compare(options(mode));
    EXPECT_EQ(r.failed, 0) << mode;
    EXPECT_GT(r.passed, 100) << mode;
    EXPECT_EQ(r.first_failure, -1) << mode;
    if (std::string(mode) == "free") {
      ASSERT_FALSE(r.drift.empty());
      // Drift is measured for every layer's output and the logits, per token.
      bool logits = false;
      for (const TapDrift& d : r.drift)
        if (d.tap == "logits") {
          logits = true;
          EXPECT_EQ(d.rel.size(), 5u);
          for (double e : d.rel) EXPECT_LT(e, 1e-3);  // f32 kernels on a 4-layer model: far below
        }
      EXPECT_TRUE(logits);
    }
  }
}

// The same model as a GGUF file (ggml block formats): the forward's matvec_ggml / dequant_ggml
// calls have no bundled kernel and run on the truth (uncovered, named), every other op runs on
// the device and passes, in both modes.
TEST(bisect, GgufModelOnBundledKernels) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const fs::path gguf = work() / "tiny.gguf";
  if (!fs::exists(gguf)) write_synthetic(synthetic_preset("tiny"), 7, gguf.string(), "gguf");
  for (const char* mode : {"isolated", "free"}) {
    ModelCompareOptions o = options(mode);
    o.model = gguf.string();
    const ModelCompareResult r = run_model_compare(o);
    EXPECT_EQ(r.failed, 0) << mode;
    EXPECT_GT(r.passed, 50) << mode;
    std::set<std::string> uncovered, covered;
    for (const OpRecord& rec : r.records) (rec.covered ? covered : uncovered).insert(rec.op);
    EXPECT_EQ(uncovered, (std::set<std::string>{"dequant_ggml", "matvec_ggml"})) << mode;
    EXPECT_TRUE(covered.count("glu")) << mode;
  }
}

// DeepSeek-V3 (fixtures/golden/deepseek_v3_tiny: MLA with YaRN, a dense layer, two noaux_tc MoE
// layers) on the bundled kernels: every op on the device passes in both modes, and a planted
// bug in the MLA kernel (the rope term of the score dropped) is named by bisect at layer 0's
// attention.
ModelCompareOptions ds3_options(const std::string& mode, const std::string& kernels = "") {
  ModelCompareOptions o = options(mode, kernels);
  o.model = std::string(MOE_SOURCE_DIR) + "/fixtures/golden/deepseek_v3_tiny";
  return o;
}

TEST(bisect, DeepSeekV3BundledKernelsPassIsolatedAndFree) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  for (const char* mode : {"isolated", "free"}) {
    const ModelCompareResult r = run_model_compare(ds3_options(mode));
    EXPECT_EQ(r.failed, 0) << mode;
    EXPECT_EQ(r.uncovered, 0) << mode;
    EXPECT_GT(r.passed, 100) << mode;
    EXPECT_EQ(r.first_failure, -1) << mode;
  }
}

TEST(bisect, DeepSeekV3PlantedMlaBugIsNamed) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::string m = planted_manifest("ds3_mla", "mla_attention",
                                         "  for (uint j = 0u; j < pc.rope; ++j) acc = fma(q[qrow + pc.nope + j], kpe(p, j), acc);\n", "");
  const ModelCompareResult r = run_model_compare(ds3_options("isolated", m));
  ASSERT_GE(r.first_failure, 0);
  const OpRecord& f = r.records[size_t(r.first_failure)];
  EXPECT_EQ(f.op, "mla_attention");
  EXPECT_NE(f.where.find("model.layers.0.self_attn"), std::string::npos) << f.where;
}

// The GPU's free-running forward as a dump (--dump), judged module by module (oracle/judge.h):
// the bundled kernels pass; one mutant of the conv kernel (--mutant, a value bug) is named by judge
// at the conv of layer 0, where bisect finds it.
TEST(bisect, FreeDumpIsJudgedAndAMutantNamed) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  ModelCompareOptions o = options("free");
  o.dump = (work() / "free.safetensors").string();
  ASSERT_EQ(run_model_compare(o).failed, 0);
  EXPECT_EQ(judge_dump(o.model, o.dump, {}, "", {}).first_failed, -1);
  o.mutant = "conv1d_step 39:27 float_doubled '1.0' -> '2.0'";
  const ModelCompareResult r = run_model_compare(o);
  ASSERT_GE(r.first_failure, 0);
  EXPECT_EQ(r.mutant, o.mutant);
  EXPECT_EQ(r.records[size_t(r.first_failure)].where, "model.layers.0.linear_attn.conv");
  const JudgeReport j = judge_dump(o.model, o.dump, {}, "", {});
  ASSERT_GE(j.first_failed, 0);
  EXPECT_EQ(j.modules[size_t(j.first_failed)].tap, "model.layers.0.linear_attn.conv");
  o.mutant = "conv1d_step #999999";
  EXPECT_THROW(run_model_compare(o), Error);
}

// A teacher-forced corpus in chunks (--prefill 2 --chunk 2): every forward call after the prefill
// covers two tokens, and the truth run beside the GPU's is written as a dump whose logits `drift`
// holds the GPU's against: a correct backend keeps the same top token at every position.
TEST(bisect, FreeCorpusInChunksWritesTheTruthBesideTheGpu) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  ModelCompareOptions o = options("free");
  o.tokens = {1, 17, 42, 300, 7, 9};
  o.chunk = 2;
  o.dump = (work() / "chunks_gpu.safetensors").string();
  o.truth_dump = (work() / "chunks_truth.safetensors").string();
  const ModelCompareResult r = run_model_compare(o);
  ASSERT_EQ(r.failed, 0);
  // Whole-call ops cover a chunk; per-token ops (an expert's tokens) lie inside one.
  std::set<int64_t> whole;
  for (const OpRecord& rec : r.records) {
    EXPECT_EQ(rec.token / 2, (rec.token + rec.tokens - 1) / 2) << rec.where << " at " << rec.token;
    if (rec.tokens == 2) whole.insert(rec.token);
  }
  EXPECT_EQ(whole, (std::set<int64_t>{0, 2, 4}));
  const SafetensorsFile gpu(o.dump), truth(o.truth_dump);
  EXPECT_EQ(truth.metadata().at("backend"), "ref64");
  const TensorInfo* a = truth.find("logits");
  const TensorInfo* b = gpu.find("logits");
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->shape, (std::vector<int64_t>{6, a->shape[1]}));
  ASSERT_EQ(b->shape, a->shape);
  const auto f32 = [](const TensorInfo* t) {
    return std::span<const float>(reinterpret_cast<const float*>(t->data), size_t(t->numel()));
  };
  const DriftStats d = drift_stats(f32(a), f32(b), 6, a->shape[1], o.tokens);
  EXPECT_EQ(d.nonfinite, 0);
  EXPECT_EQ(d.same_top.mean, 1.0);
  // Kernels with f32 error only (worst logit drift ~1e-6 relative): a KLD far below 1e-9 nats.
  EXPECT_LT(d.kld_max, 1e-9);
  o.chunk = 0;
  EXPECT_THROW(run_model_compare(o), Error);
}

// A mutant whose NaN reaches DeepSeek's router (the experts it then picks do not exist): the
// free forward stops there, the failure found before stands, and no dump is written. The NaN is
// the router gate's own output (a bf16 decode setting the exponent bits): a NaN made inside a
// kernel that then meets a max fails that case by the NaN-operand check instead, and the forward
// goes on from the truth's outputs.
TEST(bisect, FreeForwardStopsAfterAFailureItCannotGoOnFrom) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  ModelCompareOptions o = ds3_options("free");
  o.mutant = "matvec_bf16 37:53 and_to_or '&' -> '|'";
  o.dump = (work() / "stopped.safetensors").string();
  const ModelCompareResult r = run_model_compare(o);
  ASSERT_GE(r.first_failure, 0);
  EXPECT_EQ(r.records[size_t(r.first_failure)].op, "matvec_bf16");
  EXPECT_NE(r.stopped.find("expert"), std::string::npos) << r.stopped;
  EXPECT_FALSE(fs::exists(o.dump));
}

struct Planted {
  const char* kernel;  // bundled kernel replaced
  const char* from;
  const char* to;
  const char* op;      // the op bisect must name
  int64_t layer;       // and the layer (-1: outside the layers)
  const char* where;   // and the module
};

class PlantedBug : public ::testing::TestWithParam<Planted> {};

TEST_P(PlantedBug, BisectNamesTheOpAndTheCaseReplays) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const Planted& p = GetParam();
  const std::string manifest = planted_manifest(std::string("planted_") + p.kernel, p.kernel, p.from, p.to);
  ModelCompareOptions o = options("isolated", manifest);
  o.case_out = (work() / (std::string(p.kernel) + "_case.safetensors")).string();
  const ModelCompareResult r = run_model_compare(o);
  ASSERT_GE(r.first_failure, 0) << "the planted bug in " << p.kernel << " was not found";
  const OpRecord& f = r.records[size_t(r.first_failure)];
  EXPECT_EQ(f.op, p.op);
  EXPECT_EQ(f.layer, p.layer);
  EXPECT_EQ(f.where, p.where);
  EXPECT_EQ(f.token, 0);  // the first call (the prefill) already shows it
  // Every failing op is the planted one: isolated mode does not propagate the error.
  for (const OpRecord& rec : r.records) {
    if (rec.covered && rec.result.status() == CaseResult::Status::Fail) {
      EXPECT_EQ(rec.op, p.op) << rec.where;
    }
  }
  ASSERT_EQ(r.case_file, o.case_out);

  // The case file alone: fails on the planted kernel, passes on the bundled one.
  CompareOptions co;
  co.case_file = r.case_file, co.quiet = true;
  co.kernels = manifest;
  const std::vector<CaseResult> bad = compare_cases(co);
  ASSERT_FALSE(bad.empty());
  for (const CaseResult& c : bad) EXPECT_EQ(c.status(), CaseResult::Status::Fail) << case_line(c);
  co.kernels = "bundled";
  const std::vector<CaseResult> good = compare_cases(co);
  ASSERT_FALSE(good.empty());
  for (const CaseResult& c : good) EXPECT_EQ(c.status(), CaseResult::Status::Pass) << case_line(c);
  // The file keeps where it came from.
  const CaseFile cf = load_case_file(r.case_file);
  EXPECT_EQ(cf.origin.at("where"), p.where);
  EXPECT_EQ(cf.c.op, p.op);
}

// One bug per op; several only show in one layer kind (the tiny model's layers 0-2 are linear
// attention, layer 3 full attention; q/k heads are 64 wide, the hidden state 256).
INSTANTIATE_TEST_SUITE_P(
    bisect, PlantedBug,
    ::testing::Values(
        // Mean over the workgroup's 256 lanes instead of dim: right for the 256-wide hidden
        // norms, wrong for the 64-wide q/k norms of the full-attention layer only.
        Planted{"rmsnorm", "partial[0] / float(pc.dim)", "partial[0] / float(max(pc.dim, 256u))", "rmsnorm", 3,
                "model.layers.3.self_attn.q_norm"},
        // k given q's 1/dk scale: linear-attention layers only.
        Planted{"qk_norm", "(k[base + i] * inv.y) * s;", "(k[base + i] * inv.y) * q_scale;", "qk_norm", 0,
                "model.layers.0.linear_attn.qk_norm"},
        // silu(z) replaced by sigmoid(z)... as z * sigmoid(z) missing its z: linear layers only.
        Planted{"rmsnorm_gated", "* silu(z[base + i]);", "* (silu(z[base + i]) / z[base + i]);", "rmsnorm_gated", 0,
                "model.layers.0.linear_attn.norm"},
        // The second rotated half with the sign of sin flipped: full-attention layer only.
        Planted{"rope", "floatBitsToUint(x1 * s + x2 * c)", "floatBitsToUint(x2 * c - x1 * s)", "rope", 3,
                "model.layers.3.self_attn.rope_q"},
        // The shared-expert gate as sigmoid(+gamma) instead of sigmoid(gamma)... of -gamma.
        Planted{"moe_combine", "exp(-gamma[t])", "exp(gamma[t])", "moe_combine", 0, "model.layers.0.mlp.combine"},
        // The delta rule's state update without the decay (s = S instead of g S): the
        // recurrence of the linear-attention layers.
        Planted{"delta_net", "const float s1 = fma(k[qk + i], delta, gh * state[base + i]);",
                "const float s1 = fma(k[qk + i], delta, state[base + i]);", "delta_net", 0,
                "model.layers.0.linear_attn.recurrence"},
        // The softmax stage of the attention chain normalising by 1 / (2 sum): only the
        // full-attention layer, named as the op the chain implements.
        Planted{"attention_softmax", "const float inv = 1.0 / sum;", "const float inv = 0.5 / sum;", "attention", 3,
                "model.layers.3.self_attn.attn"},
        // The conv's SiLU as a plain identity: linear-attention layers only.
        Planted{"conv1d_step", "y[t * C + c] = acc / (1.0 + exp(-acc));", "y[t * C + c] = acc;", "conv1d_step", 0,
                "model.layers.0.linear_attn.conv"},
        // Every token reads the next row of the table: before any layer.
        Planted{"embedding", "const uint row = uint(id);", "const uint row = min(uint(id) + 1u, pc.vocab - 1u);",
                "embedding", -1, "model.embed_tokens"}),
    [](const ::testing::TestParamInfo<Planted>& i) { return std::string(i.param.kernel); });

// `html` as headless Chromium leaves it once its scripts ran (the DOM dumped to `dom`); "" and a
// test failure where Chromium does not finish.
std::string rendered_dom(const fs::path& html, const fs::path& dom) {
  const std::string cmd = "timeout 120 chromium --headless --no-sandbox --disable-gpu --dump-dom 'file://" +
                          html.string() + "' > '" + dom.string() + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) {
    ADD_FAILURE() << cmd;
    return "";
  }
  std::ifstream in(dom);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(bisect, HtmlReportRendersInHeadlessChromium) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  if (std::system("command -v chromium >/dev/null 2>&1") != 0) GTEST_SKIP() << "chromium not installed";
  const std::string manifest =
      planted_manifest("planted_html", "rope", "floatBitsToUint(x1 * s + x2 * c)", "floatBitsToUint(x2 * c - x1 * s)");
  for (const char* mode : {"isolated", "free"}) {
    ModelCompareOptions o = options(mode, manifest);
    const ModelCompareResult r = run_model_compare(o);
    const fs::path html = work() / (std::string("report_") + mode + ".html");
    save_model_html(html.string(), r);
    const std::string page = rendered_dom(html, work() / (std::string("dom_") + mode + ".html"));
    // The script ran to its end (no exception: it would have written "error: ...").
    EXPECT_NE(page.find("id=\"status\" class=\"good\">rendered "), std::string::npos) << mode;
    EXPECT_EQ(page.find("id=\"status\" class=\"bad\""), std::string::npos) << mode;
    size_t svgs = 0;
    for (size_t p = 0; (p = page.find("<svg", p)) != std::string::npos; ++p) ++svgs;
    EXPECT_GE(svgs, std::string(mode) == "free" ? 5u : 3u) << mode;
    EXPECT_NE(page.find("FIRST FAILURE: token 0, layer 3, rope"), std::string::npos) << mode;
  }
}

// The op-level report (`compare --html`) renders too, with the failures of a planted kernel.
TEST(bisect, CompareHtmlReportRendersInHeadlessChromium) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  if (std::system("command -v chromium >/dev/null 2>&1") != 0) GTEST_SKIP() << "chromium not installed";
  CompareOptions co;
  co.kernels = planted_manifest("planted_chtml", "rope", "floatBitsToUint(x1 * s + x2 * c)",
                                "floatBitsToUint(x2 * c - x1 * s)");
  co.ops = "rope,rmsnorm", co.quiet = true, co.shapes = "remainders";
  const std::vector<CaseResult> rs = compare_cases(co);
  const fs::path html = work() / "compare.html";
  save_report(html.string(), ReportFormat::Html, rs);
  const std::string page = rendered_dom(html, work() / "compare_dom.html");
  EXPECT_NE(page.find("id=\"status\" class=\"good\">rendered 2 plots"), std::string::npos);
  EXPECT_NE(page.find("rope / rope_planted [remainder"), std::string::npos);  // a failure's heading
  EXPECT_NE(page.find("moeoracle compare --ops rope"), std::string::npos);     // its repro command
}

}  // namespace
}  // namespace moe::compare
