// The compare harness's input formats (targets.h): kernel manifests, their expressions, case
// files. Nothing here needs a Vulkan device.
#include <map>
#include <optional>

#include "compare/cases/cases.h"
#include "compare/manifest/manifest.h"
#include "compare/run/case_file.h"
#include "compare/run/driver.h"
#include "compare/run/layout.h"
#include "core/check.h"
#include "fuzz/support.h"
#include "fuzz/targets.h"

namespace moe::fuzz {
namespace fs = std::filesystem;
using namespace moe::compare;

namespace {

// A device as lavapipe reports one (run_case.cpp add_device_vars).
void add_device_vars(ExprVars& v) {
  v["subgroup_size"] = 8, v["max_shared_memory"] = 32768, v["max_workgroup_invocations"] = 1024;
  v["max_workgroup_subgroups"] = 128, v["max_workgroup_count_x"] = 65535, v["max_workgroup_count_y"] = 65535;
  v["max_workgroup_count_z"] = 65535, v["max_storage_buffer_range"] = 134217728.0;
}

// The op's first remainder case (made once per op); nullptr for an op without cases.
const OpCase* case_for(const std::string& op) {
  static std::map<std::string, std::optional<OpCase>> cache;
  auto it = cache.find(op);
  if (it == cache.end()) {
    std::optional<OpCase> c;
    for (const std::string& o : case_ops())
      if (o == op) {
        std::vector<OpCase> cs = make_cases(op, "remainders", 1);
        if (!cs.empty()) c = std::move(cs.front());
      }
    it = cache.emplace(op, std::move(c)).first;
  }
  return it->second ? &*it->second : nullptr;
}

// What the driver does with a kernel before any dispatch: its values for a case of its op, then
// every binding's buffer laid out.
void concretize(const KernelEntry& k) {
  if (k.ops.size() != 1) return;  // fused kernels run on chain cases (compare/manifest/chains.h)
  const OpCase* c = case_for(k.ops[0]);
  if (!c) return;
  ExprVars vars = c->vars;
  add_device_vars(vars);
  const KernelInstance inst = instantiate(k, vars, "input.json");
  if (!inst.skipped.empty()) return;
  for (const ManifestBinding& b : k.bindings)
    if (b.same_as < 0)  // an alias is its root's buffer
      place_binding(k, b, [](const std::string& t) { return t; }, inst.vars, *c, kPoison, "input.json");
}

}  // namespace

void prepare_manifests() {
  kernel_dir();
  for (const std::string& op : case_ops()) case_for(op);
}

void manifest(const uint8_t* data, size_t size) {
  const fs::path p = kernel_dir() / "input.json";
  write_file(p, as_text(data, size));
  const Manifest m = load_manifest(p.string());
  for (const KernelEntry& k : m.kernels) {
    concretize(k);
    if (const KernelSequence* s = m.sequence_of(k.name); s && s->kernels.empty())
      invariant_failed("manifest: an empty sequence");
  }
  for (const std::string& op : case_ops()) {
    std::string why;
    plans_for(m, op, &why);
  }
}

void expr(const uint8_t* data, size_t size) {
  static const ExprVars vars = [] {
    ExprVars v{{"dim", 4096}, {"rows", 3}, {"eps", 1e-6}, {"half", 0.5}, {"neg", -7}, {"zero", 0},
               {"big", 9007199254740992.0}, {"huge", 1e300}};
    add_device_vars(v);
    return v;
  }();
  const std::string e(as_text(data, size));
  expr_names(e);
  try {
    check_expr(e);
  } catch (const Error&) {
    // a syntax error: evaluating must fail too
    try {
      eval_expr(e, vars);
    } catch (const Error&) {
      return;
    }
    invariant_failed("expr: check_expr rejects what eval_expr accepts");
  }
  const double v = eval_expr(e, vars);
  format_value(v);
  std::string why;
  eval_limit(e, vars, &why);
  for (const char* type : {"u32", "i32", "f32", "bool"}) {
    try {
      to_bits(v, type, "value");
    } catch (const Error&) {
      // does not fit: said so
    }
  }
}

void case_file(const uint8_t* data, size_t size) {
  const fs::path p = scratch() / "input.case.safetensors";
  write_file(p, as_text(data, size));
  const CaseFile f = load_case_file(p.string());
  // As `compare --case` decides a kernel's outputs: here against the case's own output words.
  for (const auto& [name, spec] : f.c.outputs) {
    const HostTensor& t = f.c.tensors.at(name);
    decide_output(spec, t, f.c.truth.at(name), t.words);
  }
}

}  // namespace moe::fuzz
