// The foreign-kernel corpus (tests/foreign/): kernels written in other engines' idioms (ggml /
// llama.cpp, MLX and Metal ports, a hand-rolled C++ Vulkan engine), described only by their
// manifests, run against the CPU truth on the default Vulkan device (lavapipe in CI). Each correct
// kernel must pass every case its declared limits accept, at the device's subgroup size; each
// defective kernel must fail exactly on the cases where its defect shows, by the criterion that
// exists for it, and pass elsewhere. tests/foreign/README.md lists the kernels and verdicts.
#include <functional>
#include <string>
#include <vector>

#include "compare/run/driver.h"
#include "compare/vk/runner.h"
#include "vulkan/compare_test_util.h"

namespace moe::compare {
namespace {

using namespace moe::compare::test;

const std::string kForeign = std::string(MOE_SOURCE_DIR) + "/tests/foreign/";

// A manifest's kernels over `shapes` and seeds seed..seed+seeds-1, every plan in its own worker
// process, as `moeoracle compare` runs them: a foreign kernel may crash the driver (a shared
// array overflowed on lavapipe corrupts the process's heap).
std::vector<CaseResult> run_isolated(const std::string& manifest, const std::string& shapes, int seeds,
                                     uint64_t seed = 1) {
  CompareOptions o;
  o.kernels = kForeign + manifest, o.shapes = shapes, o.seeds = seeds, o.seed = seed, o.quiet = true;
  o.isolate = true, o.worker_exe = MOE_CLI;
  return compare_cases(o);
}

using Pred = std::function<bool(const CaseResult&)>;

// ---- The criteria a defect must be caught by (a case may fail by others too).

// An output beyond its per-element bound (or, for Exact outputs, not bit-equal), none unwritten,
// no driver error.
bool by_element(const CaseResult& r) {
  if (!r.error.empty()) return false;
  bool element = false;
  for (const Verdict& v : r.outputs) element |= !v.pass && (v.failed & kElement) && v.unwritten == 0;
  return element;
}

// An output with elements still holding the poison pattern.
bool by_unwritten(const CaseResult& r) {
  for (const Verdict& v : r.outputs)
    if (!v.pass && (v.failed & kUnwritten) && v.unwritten > 0) return true;
  return false;
}

// The poison read back: scratch read before it was written gives NaN, and since the NaN of the
// poison keeps its payload through the arithmetic, the result may even be the poison's bits
// (then reported as unwritten).
bool by_poison(const CaseResult& r) {
  for (const Verdict& v : r.outputs)
    if (!v.pass && (v.unwritten > 0 || v.nan_found > 0)) return true;
  return false;
}

// A row of routing indices that is not the truth's set (nor a near-tie alternative).
bool by_index_set(const CaseResult& r) {
  const Verdict* v = verdict(r, "idx");
  return v && !v->pass && (v->failed & kIndexSet);
}

// The case's error names `what` ("past its end": the guard region; "outside its views").
Pred by_error(const std::string& what) {
  return [what](const CaseResult& r) { return r.error.find(what) != std::string::npos; };
}

// ---- Verdicts of one kernel.

// A correct kernel: no case fails, at least `min_passed` pass.
void expect_correct(const std::vector<CaseResult>& rs, const std::string& kernel, int min_passed) {
  int passed = 0;
  for (const CaseResult* r : of_kernel(rs, kernel)) {
    EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " " << r->error;
    passed += r->status() == CaseResult::Status::Pass;
  }
  EXPECT_GE(passed, min_passed) << kernel;
}

// A defective kernel: where `shows` holds the case fails and `criterion` names why; elsewhere it
// passes. At least `min_caught` cases must show the defect (so the case set reaches it). Where
// `unsure` holds (a defect within the bound for some seeds), a failure must still be by
// `criterion` and counts as caught, and a pass is allowed.
void expect_defect(const std::vector<CaseResult>& rs, const std::string& kernel, const Pred& shows,
                   const Pred& criterion, int min_caught, const Pred& unsure = nullptr) {
  int caught = 0;
  for (const CaseResult* r : of_kernel(rs, kernel)) {
    if (unsure && unsure(*r)) {
      if (r->status() == CaseResult::Status::Fail) {
        EXPECT_TRUE(criterion(*r)) << "caught by another criterion: " << case_line(*r) << " " << r->error;
        caught += criterion(*r);
      }
    } else if (shows(*r)) {
      EXPECT_EQ(r->status(), CaseResult::Status::Fail) << case_line(*r);
      EXPECT_TRUE(criterion(*r)) << "caught by another criterion: " << case_line(*r) << " " << r->error;
      caught += r->status() == CaseResult::Status::Fail && criterion(*r);
    } else {
      EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " " << r->error;
    }
  }
  EXPECT_GE(caught, min_caught) << kernel;
}

// A skipped case of `kernel` whose reason contains `reason` exists (the manifest's limits said why).
void expect_skip(const std::vector<CaseResult>& rs, const std::string& kernel, const std::string& reason) {
  bool found = false;
  for (const CaseResult& r : rs)
    found |= r.skipped && r.skip_reason.find("'" + kernel + "'") != std::string::npos &&
             r.skip_reason.find(reason) != std::string::npos;
  EXPECT_TRUE(found) << kernel << ": no case skipped for '" << reason << "'";
}

// ---- ggml / llama.cpp idioms.

TEST(foreign_corpus, GgmlKernels) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = run_isolated("ggml.json", "all", 2);
  const uint32_t sg = vk::Context("").info().subgroup_size;

  // rms_norm fused with the weight, shared-memory tree: the real cases and the add_one = 0
  // remainders (the add_one = 1 ones, which ggml does not implement, are skipped by its limit).
  expect_correct(rs, "ggml_rms_norm_mul", 8);
  expect_skip(rs, "ggml_rms_norm_mul", "add_one == 0 (add_one = 1)");
  // Warp-32 partials: right only where subgroups are 32 wide (below, partials overwrite each
  // other; at 64, each subgroup's sum is stored twice).
  const Pred not_32 = [](const CaseResult& r) { return subgroup_of(r) != 32; };
  // With dim = 1 only lane 0 holds a square: the lost partials are all zeros (no defect to see).
  const Pred shows = [](const CaseResult& r) { return subgroup_of(r) != 32 && param(r, "dim") > 1; };
  expect_defect(rs, "ggml_rms_norm_subgroup", shows, by_element, sg != 32 ? 8 : 0);
  // partial[BLOCK_SIZE / 32] indexed by gl_SubgroupID: below 32 the extra partials go past the
  // array (undefined: on lavapipe it may kill the worker), which the runner's access checks name;
  // above 32 the combine adds slots nobody wrote. BLOCK_SIZE = min(256, the device's subgroups per
  // workgroup x the subgroup size): 8 slots at lavapipe's subgroup 8 and 16, 4 at subgroup 4.
  expect_defect(
      rs, "ggml_rms_norm_subgroup_id", not_32,
      [](const CaseResult& r) {
        return subgroup_of(r) < 32 ? by_error("index into 'partial' (an array of ")(r) : by_element(r);
      },
      sg != 32 ? 8 : 0);

  // NeoX rope: every case with an even head_dim passes (odd ones skipped: ggml asserts it).
  // ggml's angle p * theta_scale^i, theta_scale = base^(-2/R), carries an error growing with i
  // (R = 512: 255 steps); the rope bound once failed it at 122-133 % on lavapipe and now budgets
  // that form too (power_form_rel in rope_bound, kernels_cpu/spec/rope_spec.cpp).
  expect_correct(rs, "ggml_rope_neox", 20);
  expect_skip(rs, "ggml_rope_neox", "head_dim % 2 == 0 (head_dim = 31)");
  // A split-K matvec in two passes (a manifest sequence: pass 1's partials in a named scratch
  // buffer, split_k_reduce adds them): every 4-bit group-64 case.
  expect_correct(rs, "ggml_mul_mat_vec_q4_split_k -> ggml_split_k_reduce", 2 * 20);
  // The chunk size rounded down: the last groups % 4 groups dropped. At 16448 columns one
  // dropped group (64 of 16448 terms) is within the any-order bound in 38 of 200 seeds: asserted
  // only where it always shows.
  const Pred drops = [](const CaseResult& r) { return (param(r, "cols") / 64) % 4 != 0; };
  expect_defect(
      rs, "ggml_mul_mat_vec_q4_split_k_floor -> ggml_split_k_reduce_floor",
      [drops](const CaseResult& r) { return drops(r) && param(r, "cols") < 16384; }, by_element, 2 * 4,
      [drops](const CaseResult& r) { return drops(r) && param(r, "cols") >= 16384; });

  // GPT-J pairs on a NeoX model: the two pairings coincide only when one pair is rotated.
  expect_defect(
      rs, "ggml_rope_norm_on_neox", [](const CaseResult& r) { return param(r, "rotary_dim") > 2; }, by_element, 2 * 5);
}

// ---- A hand-rolled C++ Vulkan engine, plain bindings.

TEST(foreign_corpus, HandRolledEngineKernels) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = run_isolated("vk_engine.json", "all", 2);

  // MLX affine 4-bit with fma(q, s*x, b*x), x staged in shared xs[8192]: every 4-bit, group-64
  // case (5 remainders + 5 real) with cols <= 8192.
  expect_correct(rs, "vk_dequant_matvec_q4", 2 * 10);
  // The same cache with no check of cols: above 8192 columns the staging overflows it (undefined:
  // on lavapipe the worker died of heap corruption at 16448 columns, and at 8256 it read the 64
  // floats written past the array back intact, an uncaught defect), which the access checks now
  // name at every such case, on every device.
  expect_defect(
      rs, "vk_matvec_q4_xs8192_unchecked", [](const CaseResult& r) { return param(r, "cols") > 8192; },
      by_error("index into 'xs' (an array of 8192 elements)"), 2);
  expect_correct(rs, "vk_residual_add_vec4", 2 * 7);
  // The n % 4 tail never written.
  expect_defect(
      rs, "vk_residual_add_vec4_no_tail", [](const CaseResult& r) { return param(r, "n") % 4 != 0; }, by_unwritten,
      2 * 5);
  // 64 heads compiled in: the 32-head A3B decode writes past y; 129 heads leave 65 unwritten.
  expect_defect(
      rs, "vk_gated_norm_decode_64heads", [](const CaseResult& r) { return param(r, "heads") != 64; },
      [](const CaseResult& r) {
        return param(r, "heads") < 64 ? by_error("index into 'gated_out' (binding 3) past the buffer's usable size")(r)
                                      : by_unwritten(r);
      },
      2 * 2);
  expect_skip(rs, "vk_gated_norm_decode_64heads", "tokens == 1 (tokens = 2)");
  // 512 experts compiled in: every case with another expert count (the remainders with k <= 16,
  // A3B's 256) routes to experts that do not exist; the A17B cases (ties, near-ties, NaN/inf
  // tokens, not renormalised) pass.
  expect_defect(
      rs, "vk_router_topk_512experts",
      // More than 512 experts all tied: the truth is experts 0..K-1, inside the 512 it scans.
      [](const CaseResult& r) {
        return param(r, "experts") != 512 &&
               !(param(r, "experts") > 512 && r.shape.find("all equal") != std::string::npos);
      },
      // Fewer experts: it reads logits past the row (the access checks name it); more: it
      // never looks past expert 511.
      [](const CaseResult& r) {
        return param(r, "experts") < 512 ? by_error("index into 'logits'")(r) : by_index_set(r);
      },
      2 * 15);
  expect_skip(rs, "vk_router_topk_512experts", "k <= 16 (k = 33)");
}

// ---- A Metal kernel ported to Vulkan. Its defect reads shared memory it never wrote, and on
// lavapipe shared memory keeps what earlier dispatches of the same process left there: run in
// one process after vk_dequant_matvec_q4 on the same case (which stages that very x in its
// 8192-float array), its out-of-bounds reads find exactly the right values and it passes (also
// with the malloc perturb of compare/run/run_case.cpp: observed with --no-isolate). In its own
// worker (isolated plans, as compare runs by default) nothing else wrote there.

TEST(foreign_corpus, MetalPortKernels) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = run_isolated("metal_port.json", "all", 2);
  const vk::DeviceInfo info = vk::Context("").info();
  const uint32_t lanes =
      info.max_workgroup_subgroups ? info.max_workgroup_subgroups * info.subgroup_size : info.max_workgroup_invocations;
  if (lanes < 256) {
    expect_skip(rs, "metal_v3_port_matvec_q4", "256 <= max_workgroup_subgroups * subgroup_size");
    return;  // 256 lanes do not fit a workgroup at this subgroup size
  }
  // x_shared[4096] read past its end for cols > 4096 (the A17B o_proj, cols 8256 and 16448).
  expect_defect(
      rs, "metal_v3_port_matvec_q4", [](const CaseResult& r) { return param(r, "cols") > 4096; },
      by_error("index into 'x_shared' (an array of 4096 elements)"), 2 * 3);
}

// ---- Engine layouts (docs/manifests.md): per-slot expert bindings and a packed params buffer,
// in-place updates, a head-major KV cache allocated for max_seq, scratch partial sums.

TEST(foreign_corpus, EngineLayoutKernels) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = run_isolated("layouts.json", "all", 2);

  // One token, K = 8, gated: the A3B decode.
  expect_correct(rs, "vk_moe_combine_decode_k8", 2);
  expect_skip(rs, "vk_moe_combine_decode_k8", "k == 8 (k = 10)");
  // In place inside the conv output rows: the A17B/A3B decode and the 64-token prefill.
  // (The remainder cases run on the next kernel, so no skip record names this one's limits:
  // count that exactly the 16 x 128 cases ran.)
  expect_correct(rs, "vk_linear_qk_norm_inplace_a3b", 2 * 2);
  EXPECT_EQ(of_kernel(rs, "vk_linear_qk_norm_inplace_a3b").size(), 2u * 2);
  // The head_dim % 4 tail forgotten: every remainder head_dim (1, 31, 33, 67, 129, 4099).
  expect_defect(
      rs, "mlx_qk_norm_inplace_unroll4", [](const CaseResult& r) { return param(r, "head_dim") % 4 != 0; }, by_element,
      2 * 6);

  // Head-major caches for max_seq 8192: every stage case (capacity <= 4098).
  expect_correct(rs, "vk_kv_append_head_major", 2 * 10);
  // The shader's MAX_SEQ 2048 against the host's 8192: wrong wherever there is a second kv head.
  expect_defect(
      rs, "vk_kv_append_head_major_maxseq2048", [](const CaseResult& r) { return param(r, "kv_heads") > 1; },
      by_error("outside its views"), 2 * 8);
  // Decode-only scores over the head-major cache: the T = 1 cases.
  expect_correct(rs, "vk_attn_scores_decode_head_major", 2 * 4);
  expect_skip(rs, "vk_attn_scores_decode_head_major", "tokens == 1 (tokens = 3)");

  // Scratch partial sums: every rmsnorm_gated case; without the barrier, the poisoned scratch
  // is read wherever a workgroup (128 lanes) holds more than one subgroup.
  expect_correct(rs, "vk_gated_norm_scratch", 2 * 10);
  // On a GPU the race's outcome depends on the warps' timing (on an H100 the small dv cases
  // passed): asserted on lavapipe, where the subgroups of a workgroup run in order.
  const bool cpu = vk::Context("").info().type == "cpu";
  const Pred multi = [](const CaseResult& r) { return subgroup_of(r) < 128; };
  expect_defect(rs, "vk_gated_norm_scratch_no_barrier", cpu ? multi : Pred([](const CaseResult&) { return false; }),
                by_poison, cpu ? 2 * 10 : 0, cpu ? Pred(nullptr) : multi);
}

}  // namespace
}  // namespace moe::compare
