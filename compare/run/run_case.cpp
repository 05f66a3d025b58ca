// One case through one plan at one subgroup size (plan.h run_plan_case): the kernels picked
// by their limits, the buffers laid out as the manifest describes them (layout.h), then per
// step uploads, poison, the dispatch sequence, the checks on what must not change, and the
// decisions on the step's outputs.
#include <malloc.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "compare/run/plan.h"
#include "compare/run/differences.h"
#include "compare/run/perf.h"
#include "compare/run/layout.h"
#include "compare/run/trace.h"
#include "compare/vk/runner.h"
#include "core/check.h"

namespace moe::compare {

namespace {

void add_device_vars(ExprVars& v, const vk::DeviceInfo& d, uint32_t subgroup) {
  v["subgroup_size"] = subgroup ? subgroup : d.subgroup_size;
  v["max_shared_memory"] = d.max_shared_memory;
  v["max_workgroup_invocations"] = d.max_workgroup_invocations;
  // Subgroups a workgroup may hold at the pinned size (without size control: no extra limit).
  // Not pinned (0), the one limit is maxComputeWorkGroupInvocations: as many subgroups of the
  // default size as that holds.
  v["max_workgroup_subgroups"] = subgroup == 0 ? std::max(1u, d.max_workgroup_invocations / std::max(1u, d.subgroup_size))
                                 : d.max_workgroup_subgroups ? d.max_workgroup_subgroups
                                                             : d.max_workgroup_invocations;
  v["max_workgroup_count_x"] = d.max_workgroup_count[0];
  v["max_workgroup_count_y"] = d.max_workgroup_count[1];
  v["max_workgroup_count_z"] = d.max_workgroup_count[2];
  v["max_storage_buffer_range"] = double(d.max_storage_buffer_range);
}

std::string case_tensor(const ChainStage* st, const std::string& kernel_tensor) {
  if (!st) return kernel_tensor;
  auto it = st->tensors.find(kernel_tensor);
  return it == st->tensors.end() ? kernel_tensor : it->second;
}

ExprVars stage_vars(const ChainStage* st, const ExprVars& vars) {
  if (!st) return vars;
  ExprVars out = vars;
  for (const auto& [name, expr] : st->vars) out[name] = eval_expr(expr, vars);
  return out;
}

std::string step_name(const std::string& output, const OpCase& c, size_t step) {
  if (c.steps.empty()) return output;
  return output + "@" + (c.steps[step].label.empty() ? "step" + std::to_string(step) : c.steps[step].label);
}


// Routing weights belong to experts: where the kernel chose the truth's expert set for a row,
// each found (expert, weight) pair must match the truth's weight OF THAT EXPERT within that
// slot's bound, so weights written in another slot order than their experts fail (the weights
// alone, compared as sorted order statistics, cannot see that). Rows whose set differs on a
// near-tie were judged by the index rule and the order statistics; they are not re-checked.
void check_pairing(Verdict& v, const OutputSpec& spec, const std::vector<double>& truth_w,
                   const std::vector<uint32_t>& found_w, const std::vector<double>& truth_i,
                   const std::vector<uint32_t>& found_i) {
  if (truth_w.size() != truth_i.size() || found_w.size() != truth_w.size() || found_i.size() != truth_i.size()) return;
  const size_t n = truth_w.size();
  MOE_CHECK(spec.row > 0 && n % size_t(spec.row) == 0,
            "output '" << spec.name << "' is paired with indices but its row length (" << spec.row << ") does not divide "
                       << n);
  const size_t K = size_t(spec.row);
  for (size_t r0 = 0; r0 < n; r0 += K) {
    std::vector<int32_t> a(K), b(K);
    for (size_t j = 0; j < K; ++j) a[j] = int32_t(truth_i[r0 + j]), b[j] = std::bit_cast<int32_t>(found_i[r0 + j]);
    std::vector<int32_t> sa = a, sb = b;
    std::sort(sa.begin(), sa.end()), std::sort(sb.begin(), sb.end());
    if (sa != sb) continue;
    for (size_t j = 0; j < K; ++j) {
      const size_t k = size_t(std::find(a.begin(), a.end(), b[j]) - a.begin());
      const float w = std::bit_cast<float>(found_w[r0 + j]);
      const double t = truth_w[r0 + k];
      const double bound = spec.bound.empty() ? 0.0 : spec.bound.size() == 1 ? spec.bound[0] : spec.bound[r0 + k];
      if (std::isnan(t) && std::isnan(w)) continue;
      if (!(std::fabs(double(w) - t) <= bound)) {
        if (v.pass) {
          std::ostringstream os;
          os << "row " << r0 / K << " slot " << j << ": expert " << b[j] << " has weight " << w
             << ", the truth gives that expert " << t << " (bound " << bound
             << "): weights are not paired with their experts";
          v.reason = os.str() + (v.reason.empty() ? "" : "; " + v.reason);
          v.worst_index = int64_t(r0 + j), v.expected = t, v.found = w;
        }
        v.pass = false, v.warn = false, v.failed |= kElement, ++v.over_budget;
      }
    }
  }
}

std::string describe(const BufferLayout& L);

// The kernels that run, and their instances per step: per position the first alternative that
// accepts the pinned subgroup size and whose limits hold at every step (a chain stage may have
// several kernels, e.g. matmul_q at 4 and 8 bits). None: `skip` says every alternative's reason.
struct Picked {
  std::vector<const KernelEntry*> kernels;
  std::vector<std::vector<KernelInstance>> inst;  // [step][position]
  std::string skip;
};

Picked pick_kernels(const Plan& plan, const std::vector<ExprVars>& step_vars, uint32_t subgroup,
                    const vk::DeviceInfo& info, const std::string& where) {
  Picked out;
  out.inst.resize(step_vars.size());
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const std::vector<const KernelEntry*> alts =
        i < plan.alternatives.size() && !plan.alternatives[i].empty() ? plan.alternatives[i]
                                                                      : std::vector<const KernelEntry*>{plan.kernels[i]};
    std::string reasons;
    const KernelEntry* pick = nullptr;
    std::vector<KernelInstance> picked;
    for (const KernelEntry* k : alts) {
      if (subgroup && !k->subgroup_sizes.empty() &&
          !std::count(k->subgroup_sizes.begin(), k->subgroup_sizes.end(), subgroup)) {
        reasons += (reasons.empty() ? "" : "; ") + ("'" + k->name + "' does not run at subgroup size " +
                                                    std::to_string(subgroup));
        continue;
      }
      std::vector<KernelInstance> per_step;
      std::string why;
      for (size_t s = 0; s < step_vars.size() && why.empty(); ++s) {
        ExprVars sv = step_vars[s];
        if (k->driver_subgroup && subgroup) add_device_vars(sv, info, 0);  // unpinned beside pinned kernels
        KernelInstance ki = instantiate(*k, stage_vars(plan.stages[i], sv), where);
        if (!ki.skipped.empty()) why = ki.skipped;
        per_step.push_back(std::move(ki));
      }
      if (!why.empty()) {
        reasons += (reasons.empty() ? "" : "; ") + ("'" + k->name + "': " + why);
        continue;
      }
      pick = k, picked = std::move(per_step);
      break;
    }
    if (!pick) {
      out.skip = "outside the declared limits of " + reasons;
      return out;
    }
    out.kernels.push_back(pick);
    for (size_t s = 0; s < step_vars.size(); ++s) out.inst[s].push_back(std::move(picked[s]));
  }
  return out;
}

// The case's buffers: one per distinct layout of the plan's bindings (identical layouts share a
// buffer, so a chain stage reads what the previous one wrote), and which case tensors each
// written buffer produces.
struct CaseBuffers {
  std::vector<BufferLayout> layouts;
  std::vector<vk::Buffer> buffers;
  std::vector<bool> written;                     // bound with access out/inout somewhere
  std::vector<bool> readable;                    // bound with access in/inout somewhere
  std::vector<std::vector<size_t>> of_binding;   // [position][binding index] -> buffer
  // Case tensor -> the (buffer, view) pairs that hold it as a result after a dispatch.
  std::map<std::string, std::vector<std::pair<size_t, size_t>>> produced;
  // In/out tensors (states) whose value before a step is read from a buffer nothing writes and
  // whose new value is left in another (docs/manifests.md "A state read from one binding and
  // written to another"): between steps the harness copies it across, as the engine's graph does.
  std::set<std::string> carried;
};

// Binding `b` of kernel `k` at every step: the layout of step 0 with the generated values of
// every step (a layout may not change between steps, since buffers and state stay on the device).
BufferLayout place_all_steps(const KernelEntry& k, const ManifestBinding& b, const Plan& plan, const Picked& pk, size_t i,
                             const OpCase& c, const std::string& where) {
  auto rename = [&](const std::string& n) { return case_tensor(plan.stages[i], n); };
  BufferLayout L = place_binding(k, b, rename, pk.inst[0][i].vars, c, kPoison, where);
  for (size_t s = 1; s < pk.inst.size(); ++s) {
    BufferLayout Ls = place_binding(k, b, rename, pk.inst[s][i].vars, c, kPoison, where);
    MOE_CHECK(Ls.key == L.key, where << " '" << k.name << "': binding " << b.binding << " has another layout at step "
                                     << s << " than at step 0; buffers stay on the device between steps, so layouts "
                                     << "must not move");
    for (size_t v = 0; v < L.views.size(); ++v)
      if (!L.views[v].generate.empty()) L.views[v].generated.push_back(std::move(Ls.views[v].generated[0]));
  }
  return L;
}

// Each converted view's values (the case's tensor and every step's upload of it) exactly
// representable in the binding's type, checked before anything runs.
void check_conversions(const CaseBuffers& cb, const OpCase& c) {
  for (const BufferLayout& L : cb.layouts)
    for (const PlacedView& v : L.views) {
      if (v.tensor.empty() || v.type == v.tensor_type) continue;
      check_conversion(v, c.tensors.at(v.tensor).words, "");
      for (size_t s = 0; s < c.steps.size(); ++s)
        if (c.steps[s].upload.count(v.tensor))
          check_conversion(v, c.steps[s].upload.at(v.tensor).words, " (uploaded at step " + std::to_string(s) + ")");
    }
}

// The states a plan carries between steps (CaseBuffers::carried). A result read by a later stage
// through another layout would need a copy the engine never makes: the harness cannot feed it.
void find_carried(CaseBuffers& cb, const OpCase& c, const Plan& plan, const std::string& where) {
  for (const auto& [name, holders] : cb.produced)
    for (size_t bi = 0; bi < cb.layouts.size(); ++bi)
      for (const PlacedView& pv : cb.layouts[bi].views) {
        if (pv.tensor != name || !pv.becomes.empty() ||
            std::any_of(holders.begin(), holders.end(), [&](const auto& h) { return h.first == bi; }))
          continue;
        MOE_CHECK(!c.tensors.at(name).output, where << " plan '" << plan.label << "': tensor '" << name
                                                    << "' is written through one layout and read through another");
        MOE_CHECK(!cb.written[bi], where << " plan '" << plan.label << "': state '" << name << "' is written through "
                                         << "one layout and read through another buffer that is also written ("
                                         << describe(cb.layouts[bi]) << "); its input can only be read from a buffer "
                                         << "every kernel binds \"in\"");
        cb.carried.insert(name);
      }
}

// Lays out every binding (at every step: a layout may not change between steps, since buffers
// and state stay on the device) and checks what can be checked before anything runs.
CaseBuffers lay_out(vk::Context& ctx, const Plan& plan, const Picked& pk, const OpCase& c, const std::string& where,
                    std::string* skip) {
  CaseBuffers cb;
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < pk.kernels.size(); ++i) {
    const KernelEntry& k = *pk.kernels[i];
    cb.of_binding.emplace_back(k.bindings.size(), size_t(0));
    for (size_t bx = 0; bx < k.bindings.size(); ++bx) {
      const ManifestBinding& b = k.bindings[bx];
      if (b.same_as >= 0) continue;  // an alias: its root's buffer, below
      BufferLayout L = place_all_steps(k, b, plan, pk, i, c, where);
      auto [it, fresh] = by_key.emplace(L.key, cb.layouts.size());
      MOE_CHECK(fresh || cb.layouts[it->second].bytes == L.bytes,
                where << " '" << k.name << "': binding " << b.binding << ": scratch '" << b.scratch_name << "' of "
                      << L.bytes << " bytes, another kernel of the plan declares it with "
                      << cb.layouts[it->second].bytes);
      for (size_t v = 0; !fresh && v < L.views.size(); ++v)
        MOE_CHECK(L.views[v].generated == cb.layouts[it->second].views[v].generated,
                  where << " '" << k.name << "': binding " << b.binding << " generates other values than another "
                        << "kernel's binding of the same layout (one buffer): their variables differ");
      if (fresh) {
        if (b.uniform && L.bytes > ctx.info().max_uniform_buffer_range) {
          *skip = "binding " + std::to_string(b.binding) + " of '" + k.name + "' (a uniform buffer) needs " +
                  std::to_string(L.bytes) + " bytes, the device's uniform buffers hold " +
                  std::to_string(ctx.info().max_uniform_buffer_range);
          return cb;
        }
        if (L.bytes > ctx.info().max_storage_buffer_range) {
          *skip = "binding " + std::to_string(b.binding) + " of '" + k.name + "' needs " + std::to_string(L.bytes) +
                  " bytes, the device's storage buffers hold " + std::to_string(ctx.info().max_storage_buffer_range);
          return cb;
        }
        cb.layouts.push_back(std::move(L));
        cb.written.push_back(false), cb.readable.push_back(false);
      }
      if (b.access != Access::In) cb.written[it->second] = true;
      if (b.access != Access::Out) cb.readable[it->second] = true;
      cb.of_binding.back()[bx] = it->second;
    }
    // Aliases ("same_as", resolved to their root at load) share the root's buffer.
    for (size_t bx = 0; bx < k.bindings.size(); ++bx)
      for (size_t root = 0; k.bindings[bx].same_as >= 0 && root < k.bindings.size(); ++root)
        if (int64_t{k.bindings[root].binding} == k.bindings[bx].same_as) cb.of_binding.back()[bx] = cb.of_binding.back()[root];
  }
  for (size_t bi = 0; bi < cb.layouts.size(); ++bi) {
    if (!cb.written[bi]) continue;
    for (size_t v = 0; v < cb.layouts[bi].views.size(); ++v) {
      const PlacedView& pv = cb.layouts[bi].views[v];
      if (pv.tensor.empty()) continue;
      cb.produced[pv.becomes.empty() ? pv.tensor : pv.becomes].push_back({bi, v});
    }
  }
  find_carried(cb, c, plan, where);
  check_conversions(cb, c);
  for (const BufferLayout& L : cb.layouts) cb.buffers.push_back(ctx.make_buffer(std::max<size_t>(L.bytes, 4)));
  return cb;
}

// Every element of every compared output is placed by exactly one written binding (throws).
void check_coverage(const CaseBuffers& cb, const OpCase& c, const Plan& plan) {
  std::set<std::string> outputs;
  for (const auto& [n, spec] : c.outputs) outputs.insert(n);
  for (const CaseStep& st : c.steps)
    for (const auto& [n, spec] : st.outputs) outputs.insert(n);
  for (const std::string& name : outputs) {
    auto it = cb.produced.find(name);
    MOE_CHECK(it != cb.produced.end(), "output '" << name << "' of op '" << c.op << "' is written by no binding of '"
                                                  << plan.label << "'");
    const HostTensor& t = c.tensors.at(name);
    std::vector<uint8_t> count(size_t(t.elems), 0);
    for (const auto& [bi, v] : it->second) {
      const PlacedView& pv = cb.layouts[bi].views[v];
      pv.for_each([&](int64_t t, int64_t) { count[size_t(t)] = uint8_t(std::min(count[size_t(t)] + 1, 255)); });
    }
    for (size_t e = 0; e < count.size(); ++e)
      MOE_CHECK(count[e] == 1, "output '" << name << "' of op '" << c.op << "': element " << e << " is placed by "
                                          << int(count[e]) << " written bindings of '" << plan.label
                                          << "', expected exactly one");
  }
}

// What a view of `name` holds before step s, or nullptr when the device keeps its contents
// (state from the step before).
const std::vector<uint32_t>* step_source(const OpCase& c, const CaseStep* step, size_t s, const std::string& name,
                                         const std::vector<uint32_t>& poison_words) {
  if (step && step->upload.count(name)) {
    const HostTensor& up = step->upload.at(name);
    MOE_CHECK(up.words.size() == c.tensors.at(name).words.size(),
              "op '" << c.op << "' step " << s << " uploads " << up.words.size() << " words to tensor '" << name
                     << "' of " << c.tensors.at(name).words.size());
    return &up.words;
  }
  const HostTensor& t = c.tensors.at(name);
  if (t.output) return &poison_words;
  if (s == 0) return &t.words;
  return nullptr;
}

std::vector<uint32_t> gather(const CaseBuffers& cb, const OpCase& c, const std::string& name,
                             std::map<size_t, std::vector<uint32_t>>& images);

// The states carried into step s > 0: what the kernels left in their written places (unless the
// step uploads the state itself, comparing steps in isolation).
std::map<std::string, std::vector<uint32_t>> carried_values(const CaseBuffers& cb, const OpCase& c,
                                                            const CaseStep* step, size_t s) {
  std::map<std::string, std::vector<uint32_t>> out;
  std::map<size_t, std::vector<uint32_t>> images;
  for (const std::string& name : cb.carried)
    if (s > 0 && !(step && step->upload.count(name))) out[name] = gather(cb, c, name, images);
  return out;
}

// Before step s: each buffer gets the inputs that change, poison where outputs go. Returns the
// bytes uploaded; `expect` receives the image every unwritten buffer must still hold afterwards.
double upload_step(CaseBuffers& cb, const OpCase& c, size_t s, std::map<size_t, std::vector<uint32_t>>& expect) {
  const CaseStep* step = c.steps.empty() ? nullptr : &c.steps[s];
  const std::map<std::string, std::vector<uint32_t>> carried = carried_values(cb, c, step, s);
  double bytes = 0;
  for (size_t bi = 0; bi < cb.layouts.size(); ++bi) {
    const BufferLayout& L = cb.layouts[bi];
    vk::Buffer& buf = cb.buffers[bi];
    if (L.scratch) {
      buf.fill_u32(L.fill);
      continue;
    }
    std::vector<uint32_t> image;
    bool changed = false;
    auto start_image = [&] {  // the buffer as it is, before the first view that changes
      if (changed) return;
      image.assign(size_t(L.bytes / 4), L.fill);
      if (s > 0) buf.download(image.data(), image.size() * 4);
      changed = true;
    };
    for (const PlacedView& v : L.views) {
      if (!v.generate.empty()) {  // generated: with the first step, then when a step's values differ
        if (s == 0 || v.generated[s] != v.generated[s - 1]) start_image(), write_view(v, &v.generated[s], image);
        continue;
      }
      if (v.tensor.empty()) {  // a value: written once, with the first step
        if (s == 0) start_image(), write_view(v, nullptr, image);
        continue;
      }
      const HostTensor& t = c.tensors.at(v.tensor);
      // A carried state's written place that no kernel reads gets poison (its input is read
      // elsewhere), so a kernel that does not write the new state fails.
      const bool carried_out = cb.carried.count(v.tensor) && cb.written[bi] && !cb.readable[bi];
      const std::vector<uint32_t> poison(t.output || carried_out ? t.words.size() : 0, kPoison);
      const std::vector<uint32_t>* src = carried_out ? &poison : step_source(c, step, s, v.tensor, poison);
      if (!src && carried.count(v.tensor) && !cb.written[bi]) src = &carried.at(v.tensor);
      if (!src) continue;
      if (L.plain) {
        if (src == &poison) {
          buf.fill_u32(kPoison);
        } else {
          buf.upload(src->data(), src->size() * 4);
          bytes += double(src->size() * 4);
          if (!cb.written[bi]) expect[bi] = *src;
        }
        break;
      }
      start_image();
      write_view(v, src, image);
    }
    if (!L.plain && changed) {
      buf.upload(image.data(), image.size() * 4);
      bytes += double(image.size() * 4);
      if (!cb.written[bi]) expect[bi] = std::move(image);
    }
  }
  return bytes;
}

// A buffer in messages: "tensor 'x'", "a scratch buffer", "the buffer viewing 'e', 'w'".
std::string describe(const BufferLayout& L) {
  if (L.plain) return "tensor '" + L.views[0].tensor + "'";
  if (L.scratch) return "a scratch buffer";
  std::string names;
  for (const PlacedView& v : L.views)
    if (!v.tensor.empty() && names.find("'" + v.tensor + "'") == std::string::npos)
      names += (names.empty() ? "'" : ", '") + v.tensor + "'";
  return "the buffer viewing " + (names.empty() ? std::string("values") : names);
}

// After a step: guards, writes outside the views, unchanged inputs. "" or the error.
std::string check_after_step(const CaseBuffers& cb, const std::map<size_t, std::vector<uint32_t>>& expect,
                             const std::string& at) {
  for (size_t bi = 0; bi < cb.layouts.size(); ++bi) {
    const BufferLayout& L = cb.layouts[bi];
    const std::string what = describe(L);
    if (!cb.buffers[bi].guard_intact()) return what + " was written past its end (guard region changed)" + at;
    if (cb.written[bi] && !L.plain && !L.scratch) {
      std::vector<uint32_t> image(size_t(L.bytes / 4));
      cb.buffers[bi].download(image.data(), image.size() * 4);
      const int64_t w = first_gap_write(L, image);
      if (w >= 0) {
        std::ostringstream os;
        os << what << " was written outside its views (32-bit word " << w
           << " holds 0x" << std::hex << image[size_t(w)] << ", the fill is 0x" << L.fill << ")" << at;
        return os.str();
      }
    }
    auto e = expect.find(bi);
    if (cb.written[bi] || e == expect.end()) continue;
    std::vector<uint32_t> got(e->second.size());
    cb.buffers[bi].download(got.data(), got.size() * 4);
    if (got != e->second) return what + " is an input of every kernel but was changed" + at;
  }
  return "";
}

// The words of case tensor `name` as the written buffers hold it now.
std::vector<uint32_t> gather(const CaseBuffers& cb, const OpCase& c, const std::string& name,
                             std::map<size_t, std::vector<uint32_t>>& images) {
  std::vector<uint32_t> words(c.tensors.at(name).words.size(), kPoison);
  for (const auto& [bi, v] : cb.produced.at(name)) {
    auto it = images.find(bi);
    if (it == images.end()) {
      std::vector<uint32_t> image(size_t(cb.layouts[bi].bytes / 4));
      cb.buffers[bi].download(image.data(), image.size() * 4);
      it = images.emplace(bi, std::move(image)).first;
    }
    if (cb.layouts[bi].plain)
      std::copy(it->second.begin(), it->second.begin() + std::ptrdiff_t(words.size()), words.begin());
    else
      read_view(cb.layouts[bi].views[v], it->second, words);
  }
  return words;
}

// Whether some buffer holds output `name` as f16 (a narrowed view).
bool stored_as_f16(const CaseBuffers& cb, const std::string& name) {
  for (const auto& [bi, v] : cb.produced.at(name))
    if (!cb.layouts[bi].plain && cb.layouts[bi].views[v].narrowed) return true;
  return false;
}

// The bound of an f32 output the kernel stores as f16: its f32 result v, within `bound` of the
// truth t, is then rounded to f16, and Vulkan leaves that conversion's rounding to the
// implementation (nearest or toward zero) unless the shader decorates it, so the stored value is
// one of v's two f16 neighbours: within one f16 spacing at |t| + bound (2^-24 below 2^-14,
// 2^(e - 10) in [2^e, 2^(e+1))). A truth beyond f16's largest value, 65504, cannot be held.
OutputSpec with_f16_rounding(OutputSpec spec, const std::vector<double>& truth, const std::string& op) {
  MOE_CHECK(spec.kind == Kind::Reduction, "op '" << op << "': output '" << spec.name
                                                 << "' is stored as f16, which only an output decided with an "
                                                    "error bound can be (this one is decided as "
                                                 << (spec.kind == Kind::Elementwise ? "ULPs" : "exact bits") << ")");
  std::vector<double> bound(truth.size());
  for (size_t i = 0; i < truth.size(); ++i) {
    if (std::isnan(truth[i])) continue;
    const double b = spec.bound.size() == 1 ? spec.bound[0] : spec.bound[i];
    const double a = std::fabs(truth[i]) + b;
    MOE_CHECK(a <= 65504.0, "op '" << op << "': output '" << spec.name << "' is stored as f16, but element " << i
                                   << " of its truth is " << truth[i] << " (with its bound " << b
                                   << "): f16 holds at most 65504");
    bound[i] = b + (a < 0x1.0p-14 ? 0x1.0p-24 : std::ldexp(1.0, std::ilogb(a) - 10));
  }
  spec.bound = std::move(bound);
  return spec;
}

// The step's outputs decided against its truth (routing weights also paired with their experts).
void decide_step(CaseResult& r, const CaseBuffers& cb, const OpCase& c, size_t s) {
  const CaseStep* step = c.steps.empty() ? nullptr : &c.steps[s];
  const auto& outputs = step ? step->outputs : c.outputs;
  const auto& truth = step ? step->truth : c.truth;
  std::map<size_t, std::vector<uint32_t>> images;
  std::map<std::string, std::vector<uint32_t>> found;
  for (const auto& [name, spec] : outputs) {
    found[name] = gather(cb, c, name, images);
    r.bytes += double(found[name].size() * 4);
  }
  for (const auto& [name, spec] : outputs) {
    const OutputSpec judged = stored_as_f16(cb, name) ? with_f16_rounding(spec, truth.at(name), c.op) : spec;
    Verdict v = decide_output(judged, c.tensors.at(name), truth.at(name), found.at(name));
    if (!spec.paired_with.empty()) {
      MOE_CHECK(outputs.count(spec.paired_with), "op '" << c.op << "': output '" << name << "' is paired with '"
                                                        << spec.paired_with << "', which is not compared");
      check_pairing(v, spec, truth.at(name), found.at(name), truth.at(spec.paired_with), found.at(spec.paired_with));
    }
    v.output = step_name(name, c, s);
    r.outputs.push_back(std::move(v));
  }
}

std::vector<vk::Dispatch> step_sequence(CaseBuffers& cb, const Picked& pk, size_t s, uint32_t subgroup) {
  std::vector<vk::Dispatch> seq;
  for (size_t i = 0; i < pk.kernels.size(); ++i) {
    const KernelEntry& k = *pk.kernels[i];
    const KernelInstance& ki = pk.inst[s][i];
    vk::Dispatch d;
    d.label = k.name, d.spirv = k.spirv, d.entry = k.entry;
    d.required_subgroup_size = k.driver_subgroup ? 0 : subgroup;
    d.check_access = k.access_checks;  // off again for --perf's repeats (time_repeats)
    for (size_t b = 0; b < k.bindings.size(); ++b)
      d.bindings.push_back({k.bindings[b].binding, &cb.buffers[cb.of_binding[i][b]], 0, 0, k.bindings[b].uniform});
    d.push_constants = ki.push_constants;
    for (const auto& [id, bits] : ki.spec_constants) d.spec_constants.push_back({id, bits});
    for (int g = 0; g < 3; ++g) d.groups[g] = ki.groups[g];
    seq.push_back(std::move(d));
  }
  return seq;
}

// Uninitialised shared memory made visible (a kernel reading shared memory it never wrote: a
// loop bound one past its partial sums, a missing initialisation). Its contents are undefined,
// and on a fresh device they are often zeros that hide the defect. On a GPU this dispatch, run
// first in the same command buffer, fills the shared memory of many workgroups with the poison
// pattern (a NaN), and the workgroups of the kernels under test find it there. On a CPU driver
// (lavapipe) a dispatch's shared memory is malloc'ed per dispatch: malloc's perturb option
// (poison_fresh_memory) fills it instead.
vk::Dispatch scrub_dispatch(const vk::DeviceInfo& info, vk::Buffer& sink) {
  static const std::vector<uint32_t> spirv = [] {
    KernelEntry k;
    k.name = "shared_scrub";
    return compile_glsl(R"(#version 450
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint WORDS = 8192u;
shared uint s[WORDS];
layout(std430, set = 0, binding = 0) buffer Sink { uint sink[]; };
void main() {
  for (uint i = gl_LocalInvocationID.x; i < WORDS; i += 256u) s[i] = 0x7FC00BADu;
  barrier();
  // Never true; it keeps the stores from being optimised away.
  if (s[gl_LocalInvocationID.x] == 0x12345u) sink[0] = s[(gl_LocalInvocationID.x + 1u) % WORDS];
}
)", "shared_scrub.comp", k, false, true);  // every worker: from the shared cache
  }();
  vk::Dispatch d;
  d.label = "shared_scrub", d.spirv = spirv;
  d.bindings = {{0, &sink, 0, 0}};
  d.spec_constants = {{0, std::max<uint32_t>(1, info.max_shared_memory / 4)}};
  d.groups[0] = 1024;  // more workgroups than any GPU holds at once: every SM's shared memory
  return d;
}

}  // namespace

void poison_fresh_memory() {
  vk::poison_dispatch_malloc(true);
  // Blocks up to 32 MiB (glibc's largest threshold) come from the heap and freed memory stays
  // there: the cases' vectors of a few MiB are otherwise mapped and unmapped each time, and
  // faulting their pages in again costs more than the fill (8-9 % of a compare run, lavapipe).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

void restore_fresh_memory() {
  vk::poison_dispatch_malloc(false);
  mallopt(M_MMAP_THRESHOLD, 128 << 10);  // glibc's defaults (fixed now: no longer adjusted on free)
  mallopt(M_TRIM_THRESHOLD, 128 << 10);
}

CaseResult run_plan_case(vk::Context& ctx, const Manifest& m, const Plan& plan, const OpCase& c, uint32_t subgroup,
                         uint64_t timeout_ms, std::map<std::string, std::vector<uint32_t>>* downloads,
                         bool perf) {
  CaseResult r;
  PhaseClock clock([&] {
    return c.op + " [" + c.shape + "] seed " + std::to_string(c.seed) + " " + plan.label + " sg " + std::to_string(subgroup);
  });
  r.op = c.op, r.kernel = plan.label, r.manifest = m.path, r.params = c.params, r.shape = c.shape, r.seed = c.seed;
  r.subgroup = subgroup, r.flops = c.flops;
  const size_t nsteps = std::max<size_t>(1, c.steps.size());
  const bool data = reads_data_predicates(plan);  // all_finite(x), ... are computed only if read
  std::vector<ExprVars> step_vars(nsteps);
  for (size_t s = 0; s < nsteps; ++s) {
    step_vars[s] = c.vars;
    if (!c.steps.empty())
      for (const auto& [k, v] : c.steps[s].vars) step_vars[s][k] = v;
    add_device_vars(step_vars[s], ctx.info(), subgroup);
    if (data) add_data_vars(step_vars[s], c);
  }
  const std::string where = m.path.empty() ? "bundled" : m.path;
  const Picked pk = pick_kernels(plan, step_vars, subgroup, ctx.info(), where);
  if (!pk.skip.empty()) {
    r.skipped = true, r.skip_reason = pk.skip;
    clock.quiet();
    return r;
  }
  if (pk.kernels.size() > 1) {
    r.kernel.clear();
    for (const KernelEntry* k : pk.kernels) r.kernel += (r.kernel.empty() ? "" : " -> ") + k->name;
  }
  // Declared differences: the case still runs; a failure is then DIFFERS (report.h).
  try {
    r.difference = declared_difference(pk.kernels, pk.inst, where);
  } catch (const Error& e) {
    r.error = e.what();
    return r;
  }
  // A layout this case cannot hold (a view past its tensor, overlapping elements, an output no
  // binding writes) fails the case with the reason; the manifest should declare a limit for it.
  std::string skip;
  CaseBuffers cb;
  try {
    cb = lay_out(ctx, plan, pk, c, where, &skip);
    if (skip.empty()) check_coverage(cb, c, plan);
  } catch (const Error& e) {
    r.error = e.what();
    return r;
  }
  clock.lap("layout");
  if (!skip.empty()) {
    r.skipped = true, r.skip_reason = skip;
    return r;
  }
  for (const vk::Buffer& buf : cb.buffers) r.system_memory = r.system_memory || !buf.device_local();
  r.gpu_ms = 0;
  std::vector<vk::Dispatch> seq;
  std::map<size_t, std::vector<uint32_t>> expect;  // per unwritten buffer, its last upload
  const bool scrub = ctx.info().type != "cpu" && !perf;
  vk::Buffer sink = ctx.make_buffer(4);
  for (size_t s = 0; s < nsteps; ++s) {
    const std::string at = nsteps > 1 ? " at step " + std::to_string(s) : "";
    r.bytes += upload_step(cb, c, s, expect);
    seq = step_sequence(cb, pk, s, subgroup);
    if (scrub) seq.insert(seq.begin(), scrub_dispatch(ctx.info(), sink));
    clock.lap("upload");
    try {
      const vk::RunResult rr = ctx.run(seq, timeout_ms);
      clock.lap("run");
      for (size_t d = scrub ? 1 : 0; d < rr.gpu_ms.size(); ++d) r.gpu_ms += rr.gpu_ms[d];
      if (rr.gpu_ms.empty()) r.gpu_ms = -1;
      // A NaN reaching min / max / clamp is the kernel's own making where every input is finite
      // (an identity or a read it should not make); from a NaN or inf input a kernel may reach
      // it and still be right whichever operand the driver returns (it tests the input itself).
      for (size_t v = 0; v < rr.access_violations.size(); ++v) {
        if (rr.nan_operand[v] && !inputs_all_finite(c)) continue;
        r.error = "out-of-range access (undefined behaviour): " + rr.access_violations[v] + at;
        return r;
      }
    } catch (const vk::PlanError& e) {  // nothing ran: the case fails, the device is fine
      r.error = (nsteps > 1 ? "step " + std::to_string(s) + ": " : "") + e.what();
      return r;
    } catch (const Error& e) {
      r.error = (nsteps > 1 ? "step " + std::to_string(s) + ": " : "") + e.what();
      r.device_fault = true;
      return r;
    }
    r.error = check_after_step(cb, expect, at);
    if (!r.error.empty()) return r;
    decide_step(r, cb, c, s);
    clock.lap("decide");
  }
  if (downloads) {
    std::map<size_t, std::vector<uint32_t>> images;
    for (const auto& [name, holders] : cb.produced) (*downloads)[name] = gather(cb, c, name, images);
  }
  if (perf && nsteps == 1 && r.gpu_ms > 0 && r.error.empty()) {
    r.error = time_repeats(ctx, seq, timeout_ms, r);
    r.device_fault = !r.error.empty();
  }
  return r;
}

Verdict decide_output(const OutputSpec& spec, const HostTensor& t, const std::vector<double>& truth,
                      const std::vector<uint32_t>& got) {
  if (spec.kind == Kind::Indices) {
    MOE_CHECK(t.type == ElemType::I32 || t.type == ElemType::U32,
              "output '" << spec.name << "' is decided as indices but its tensor is not i32/u32");
    std::vector<int32_t> want(truth.size()), found(got.size());
    for (size_t i = 0; i < truth.size(); ++i) want[i] = int32_t(truth[i]);
    for (size_t i = 0; i < got.size(); ++i) found[i] = std::bit_cast<int32_t>(got[i]);
    return decide_indices(spec, want, found, spec.scores, spec.score_bound);
  }
  if (t.type == ElemType::U32 || t.type == ElemType::I32) {
    MOE_CHECK(spec.kind == Kind::Exact, "output '" << spec.name << "' is an integer tensor: decide it exactly");
    std::vector<uint32_t> want(truth.size());
    for (size_t i = 0; i < truth.size(); ++i)
      want[i] = t.type == ElemType::I32 ? std::bit_cast<uint32_t>(int32_t(truth[i])) : uint32_t(truth[i]);
    return decide_bits(spec, want, got);
  }
  std::vector<float> found(got.size());
  std::memcpy(found.data(), got.data(), got.size() * 4);
  return decide(spec, truth, found, kPoison);
}

}  // namespace moe::compare
