// The Vulkan kernel gate from Python: `moeoracle compare` (compare/run/driver.h compare_cases) on a
// manifest or the bundled kernels, its results as the JSON report (compare/report/report.h
// write_json) that python/moeoracle/compare.py parses.

#include <sstream>

#include "common.h"
#include "compare/cases/bound_mode.h"
#include "compare/run/calibrate.h"
#include "compare/run/driver.h"
#include "compare/vk/runner.h"

namespace moe::python {
namespace {

struct PyCompareOptions {
  compare::CompareOptions co;
  std::string bounds, precision;
};

// Returns (the JSON report text, the line saying which transcendental budgets were used).
py::tuple run(const PyCompareOptions& o) {
  compare::CompareOptions co = o.co;
  co.quiet = true;  // no header on the caller's stdout
  std::vector<compare::CaseResult> results;
  std::string note;
  {
    py::gil_scoped_release nogil;
    // Process-wide settings, as the CLI makes them before a run (cli/main.cpp).
    compare::set_bound_mode(compare::parse_bound_mode(o.bounds));
    note = compare::apply_precision(o.precision, co.device, co.isolate);
    co.precision_note = "transcendental budgets: " + note;
    try {
      results = compare::compare_cases(co);
    } catch (...) {
      compare::restore_fresh_memory();
      throw;
    }
    // On a CPU driver the run poisons fresh malloc blocks (poison_fresh_memory) to expose kernels
    // reading shared memory they never wrote; the Python process gets its malloc back.
    compare::restore_fresh_memory();
    for (const auto& [path, format] :
         {std::pair{co.json, compare::ReportFormat::Json}, std::pair{co.junit, compare::ReportFormat::Junit},
          std::pair{co.html, compare::ReportFormat::Html}})
      if (!path.empty()) compare::save_report(path, format, results);
  }
  std::ostringstream json;
  compare::write_json(json, results);
  return py::make_tuple(json.str(), note);
}

// `moeoracle devices` as data: what decides whether a kernel set can be gated on each device.
py::list devices() {
  py::list out;
  for (const vk::DeviceInfo& d : vk::list_devices()) {
    py::dict r;
    r["index"] = d.index, r["name"] = d.name, r["driver"] = d.driver, r["type"] = d.type;
    r["subgroup_size"] = d.subgroup_size, r["subgroup_sizes"] = d.subgroup_sizes();
    r["subgroup_size_control"] = d.subgroup_size_control, r["subgroup_arithmetic"] = d.subgroup_arithmetic;
    r["max_storage_buffer_range"] = d.max_storage_buffer_range, r["max_shared_memory"] = d.max_shared_memory;
    r["max_workgroup_invocations"] = d.max_workgroup_invocations, r["timestamps"] = d.timestamp_period_ns > 0;
    out.append(r);
  }
  return out;
}

}  // namespace

void bind_compare(py::module_& m) {
  m.def("devices", &devices, "The Vulkan devices the loader reports (empty: no Vulkan)");
  m.def(
      "compare",
      [](const std::string& kernels, const std::string& ops, uint64_t seed, int seeds, const std::string& shapes,
         const std::string& device, uint32_t subgroup, uint64_t timeout_ms, const std::string& bounds,
         const std::string& precision, const std::string& case_file, const std::string& worker, int jobs, bool perf,
         const std::string& json, const std::string& junit, const std::string& html) {
        PyCompareOptions o;
        o.co.kernels = kernels == "bundled" ? "" : kernels;
        o.co.ops = ops, o.co.seed = seed, o.co.seeds = seeds, o.co.shapes = shapes, o.co.device = device;
        o.co.subgroup = subgroup, o.co.timeout_ms = timeout_ms, o.co.case_file = case_file, o.co.jobs = jobs;
        o.co.perf = perf, o.co.json = json, o.co.junit = junit, o.co.html = html;
        // Isolation runs each plan in a worker process of the moeoracle executable (`moeoracle
        // compare-worker`, compare/run/isolate.h); the Python process cannot serve as one.
        o.co.isolate = !worker.empty() && case_file.empty();
        o.co.worker_exe = worker;
        o.bounds = bounds, o.precision = precision;
        MOE_CHECK(seeds > 0, "compare: seeds " << seeds << ", expected >= 1");
        MOE_CHECK(jobs > 0, "compare: jobs " << jobs << ", expected >= 1");
        return run(o);
      },
      py::arg("kernels"), py::arg("ops"), py::arg("seed"), py::arg("seeds"), py::arg("shapes"), py::arg("device"),
      py::arg("subgroup"), py::arg("timeout_ms"), py::arg("bounds"), py::arg("precision"), py::arg("case_file"),
      py::arg("worker"), py::arg("jobs"), py::arg("perf"), py::arg("json"), py::arg("junit"), py::arg("html"));
}

}  // namespace moe::python
