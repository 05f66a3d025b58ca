// Every op of op_list.def is bound: the list declares one bind_<stem>() per op and calls them
// all, so an op without a binding is a link error, not a silent gap. Also the op list itself
// and the three-way self-check (`moeoracle selfcheck`) as data.
#include <set>

#include "common.h"
#include "core/check_util.h"
#include "op_registry.h"

namespace moe::python {

#define MOE_OP(stem, summary) void bind_##stem(py::module_& m);
#include "op_list.def"
#undef MOE_OP

namespace {

py::dict tier_dict(const TierReport& t) {
  py::dict d;
  d["pass"] = t.pass(), d["worst_ratio"] = t.worst_ratio, d["worst_output"] = t.worst_output;
  d["worst_index"] = t.worst_index, d["expected"] = t.expected, d["found"] = t.found, d["bound"] = t.bound;
  d["special_mismatch"] = t.special_mismatch, d["compared"] = t.compared, d["seconds"] = t.seconds;
  return d;
}

py::dict check_dict(const CheckResult& r) {
  py::dict d;
  d["op"] = r.op, d["shape"] = r.shape, d["params"] = r.params, d["seed"] = r.seed, d["pass"] = r.pass();
  d["truth_seconds"] = r.truth_seconds, d["ref32"] = tier_dict(r.ref32), d["fast"] = tier_dict(r.fast);
  py::list evidence;
  if (!r.ref32.pass()) evidence.append(describe(r, r.ref32));
  if (!r.fast.pass()) evidence.append(describe(r, r.fast));
  d["evidence"] = evidence;
  return d;
}

CheckScope parse_scope(const std::string& s) {
  if (s == "remainders") return CheckScope::Remainders;
  if (s == "real") return CheckScope::Real;
  if (s == "all") return CheckScope::All;
  throw py::value_error("selfcheck: scope '" + s + "', expected remainders, real or all");
}

// The op checks of `ops` (empty: all) at `scope`, in op-list order.
py::list selfcheck(const std::vector<std::string>& ops, uint64_t seed, const std::string& scope) {
  const CheckScope sc = parse_scope(scope);
  std::set<std::string> known;
  for (const OpInfo& op : op_registry()) known.insert(op.stem);
  for (const std::string& o : ops)
    if (!known.count(o)) throw py::value_error("selfcheck: unknown op '" + o + "' (see moeoracle.ops.OPS)");
  py::list out;
  for (const OpInfo& op : op_registry()) {
    if (!ops.empty() && std::find(ops.begin(), ops.end(), op.stem) == ops.end()) continue;
    std::vector<CheckResult> rs;
    {
      py::gil_scoped_release nogil;
      rs = op.check(seed, sc);
    }
    for (const CheckResult& r : rs) out.append(check_dict(r));
  }
  return out;
}

}  // namespace

void bind_ops(py::module_& m) {
  m.attr("OP_PARAMS") = py::dict();
#define MOE_OP(stem, summary) bind_##stem(m);
#include "op_list.def"
#undef MOE_OP
  py::list ops;
  for (const OpInfo& op : op_registry()) ops.append(py::make_tuple(op.stem, op.summary));
  m.attr("OP_LIST") = ops;
  m.def("selfcheck", &selfcheck, py::arg("ops"), py::arg("seed"), py::arg("scope"),
        "Each op's f32 and fast tiers against the f64 truth, with the C++ checks' error bounds");
}

}  // namespace moe::python
