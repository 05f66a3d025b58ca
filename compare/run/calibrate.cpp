#include "compare/run/calibrate.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "compare/decide/metrics.h"
#include "compare/manifest/manifest.h"
#include "compare/vk/runner.h"
#include "core/check.h"
#include "core/rng.h"

namespace moe::compare {

namespace {

// One function per specialization, so the driver compiles it as it would inside a kernel.
constexpr const char* kSweep = R"(#version 450
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint FN = 0u;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 2) writeonly buffer R { float r[]; };
layout(push_constant) uniform P { uint n; } pc;
void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= pc.n) return;
  const float v = x[i];
  float o;
  if (FN == 0u) o = exp(v);
  else if (FN == 1u) o = exp2(v);
  else if (FN == 2u) o = log(v);
  else if (FN == 3u) o = log2(v);
  else if (FN == 4u) o = sin(v);
  else if (FN == 5u) o = cos(v);
  else if (FN == 6u) o = inversesqrt(v);
  else o = v / y[i];
  r[i] = o;
}
)";

enum Fn { kExp, kExp2, kLog, kLog2, kSin, kCos, kInvSqrt, kDiv, kFns };

constexpr int64_t kPoints = 1 << 20;

// The sweep's inputs: half an even grid over the range, half seeded random points in it
// (log-spaced where the function's ULP scale varies with magnitude).
void inputs(Fn fn, std::vector<float>& x, std::vector<float>& y) {
  x.resize(size_t(kPoints)), y.assign(size_t(kPoints), 1.0f);
  Rng rng(0xCA11B, uint64_t(fn));
  for (int64_t i = 0; i < kPoints; ++i) {
    const double t = i < kPoints / 2 ? double(i) / double(kPoints / 2 - 1) : rng.uniform01();
    double v = 0;
    switch (fn) {
      case kExp: v = -87.0 + t * 175.5; break;
      case kExp2: v = -125.0 + t * 252.0; break;
      case kLog:
      case kLog2:  // one point in four inside [0.5, 2] (absolute budget), the rest anywhere
        v = (i % 4 == 0) ? 0.5 + 1.5 * t : std::exp2(-125.0 + t * 252.0);
        break;
      case kSin:
      case kCos: v = -3.1415925 + t * 6.283185; break;  // inside [-pi, pi] in f32
      case kInvSqrt: v = std::exp2(-125.0 + t * 252.0); break;
      case kDiv:
        v = (rng.uniform01() < 0.5 ? -1 : 1) * std::exp2(-60.0 + 120.0 * t);
        y[size_t(i)] = float((rng.uniform01() < 0.5 ? -1 : 1) * std::exp2(-60.0 + 120.0 * rng.uniform01()));
        break;
      default: break;
    }
    x[size_t(i)] = float(v);
  }
}

double exact(Fn fn, double v, double w) {
  switch (fn) {
    case kExp: return std::exp(v);
    case kExp2: return std::exp2(v);
    case kLog: return std::log(v);
    case kLog2: return std::log2(v);
    case kSin: return std::sin(v);
    case kCos: return std::cos(v);
    case kInvSqrt: return 1.0 / std::sqrt(v);
    default: return v / w;
  }
}

std::vector<float> run_sweep(vk::Context& ctx, Fn fn, const std::vector<float>& x, const std::vector<float>& y) {
  static const std::vector<uint32_t> spirv = [] {
    KernelEntry k;
    k.name = "calibrate";
    return compile_glsl(kSweep, "calibrate.comp", k);
  }();
  const size_t bytes = x.size() * 4;
  vk::Buffer bx = ctx.make_buffer(bytes), by = ctx.make_buffer(bytes), br = ctx.make_buffer(bytes);
  bx.upload(x.data(), bytes), by.upload(y.data(), bytes), br.fill_u32(kPoison);
  vk::Dispatch d;
  d.label = "calibrate", d.spirv = spirv;
  d.bindings = {{0, &bx, 0, 0}, {1, &by, 0, 0}, {2, &br, 0, 0}};
  const uint32_t n = uint32_t(x.size());
  d.push_constants.resize(4);
  std::memcpy(d.push_constants.data(), &n, 4);
  d.spec_constants = {{0, uint32_t(fn)}};
  d.groups[0] = (n + 255) / 256;
  ctx.run({d}, 60000);
  std::vector<float> r(x.size());
  br.download(r.data(), bytes);
  return r;
}

}  // namespace

Calibration calibrate(vk::Context& ctx) {
  Calibration c;
  c.device = ctx.info().name + " (" + ctx.info().driver + ")";
  c.points = kPoints;
  Precision& m = c.measured;
  m.exp_a = m.exp_b = m.log_abs = m.log_ulp = m.sincos_abs = m.inversesqrt_ulp = m.division_ulp = 0;
  double exp_small = 0;                 // the largest ULP error of exp/exp2 at |x| <= 1
  std::vector<std::pair<double, double>> exp_large;  // (|x|, ULP error) beyond
  for (int f = 0; f < kFns; ++f) {
    const Fn fn = Fn(f);
    std::vector<float> x, y;
    inputs(fn, x, y);
    const std::vector<float> r = run_sweep(ctx, fn, x, y);
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i], want = exact(fn, v, y[i]);
      if (!std::isfinite(want) || std::fabs(want) > 3.0e38 || std::fabs(want) < 1.2e-38) continue;  // outside the rules
      const double err_ulp = ulp_error(r[i], want), err_abs = std::fabs(double(r[i]) - want);
      switch (fn) {
        case kExp:
        case kExp2:
          if (std::fabs(v) <= 0.125) exp_small = std::max(exp_small, err_ulp);
          else exp_large.emplace_back(std::fabs(v), err_ulp);
          break;
        case kLog:
        case kLog2:
          if (v >= 0.5 && v <= 2) m.log_abs = std::max(m.log_abs, err_abs);
          else m.log_ulp = std::max(m.log_ulp, err_ulp);
          break;
        case kSin:
        case kCos: m.sincos_abs = std::max(m.sincos_abs, err_abs); break;
        case kInvSqrt: m.inversesqrt_ulp = std::max(m.inversesqrt_ulp, err_ulp); break;
        default: m.division_ulp = std::max(m.division_ulp, err_ulp); break;
      }
    }
  }
  // exp: a = the error near 0, b = the growth with |x| beyond it (the argument's own rounding).
  m.exp_a = exp_small;
  for (const auto& [ax, e] : exp_large) m.exp_b = std::max(m.exp_b, (e - m.exp_a) / ax);
  m.source = "measured on " + c.device;
  // Budgets: times the safety factor, at least one ULP (2^-24 absolute), at most the rules —
  // unless the device itself breaks the rule (lavapipe's exp near 0: 3.2 ULP against 3), where
  // the budget is what it does with the out-of-rule margin: the kernel's author cannot fix the
  // driver, and a correct kernel must not fail for it.
  const Precision spec = spec_precision();
  Precision& b = c.budget;
  auto budget = [](double measured, double floor, double rule) {
    return std::max(std::clamp(measured * kCalibrationSafety, floor, rule), measured * kOutOfRuleMargin);
  };
  auto ulp = [&](double measured, double rule) { return budget(measured, 1.0, rule); };
  auto abs = [&](double measured, double rule) { return budget(measured, kU32, rule); };
  b.exp_a = ulp(m.exp_a, spec.exp_a);
  b.exp_b = budget(m.exp_b, 0.0, spec.exp_b);
  b.log_abs = abs(m.log_abs, spec.log_abs);
  b.log_ulp = ulp(m.log_ulp, spec.log_ulp);
  b.sincos_abs = abs(m.sincos_abs, spec.sincos_abs);
  b.inversesqrt_ulp = ulp(m.inversesqrt_ulp, spec.inversesqrt_ulp);
  b.division_ulp = ulp(m.division_ulp, spec.division_ulp);
  b.source = "calibrated on " + c.device;
  return c;
}

nlohmann::json precision_to_json(const Precision& p) {
  return {{"exp_a", p.exp_a},           {"exp_b", p.exp_b},   {"log_abs", p.log_abs},
          {"log_ulp", p.log_ulp},       {"sincos_abs", p.sincos_abs}, {"inversesqrt_ulp", p.inversesqrt_ulp},
          {"division_ulp", p.division_ulp}, {"source", p.source}};
}

Precision precision_from_json(const nlohmann::json& j) {
  Precision p;
  try {
    p.exp_a = j.at("exp_a"), p.exp_b = j.at("exp_b"), p.log_abs = j.at("log_abs"), p.log_ulp = j.at("log_ulp");
    p.sincos_abs = j.at("sincos_abs"), p.inversesqrt_ulp = j.at("inversesqrt_ulp");
    p.division_ulp = j.at("division_ulp"), p.source = j.at("source");
  } catch (const nlohmann::json::exception& e) {
    MOE_FAIL("precision: " << e.what());
  }
  return p;
}

Calibration calibrate_in_child(const std::string& device) {
  int p[2];
  MOE_CHECK(::pipe(p) == 0, "calibrate: cannot create a pipe: " << std::strerror(errno));
  const pid_t pid = ::fork();
  MOE_CHECK(pid >= 0, "calibrate: cannot fork: " << std::strerror(errno));
  if (pid == 0) {
    ::close(p[0]);
    nlohmann::json out;
    try {
      vk::Context ctx(device);
      const Calibration c = calibrate(ctx);
      out = {{"measured", precision_to_json(c.measured)}, {"budget", precision_to_json(c.budget)},
             {"points", c.points}, {"device", c.device}};
    } catch (const std::exception& e) {
      out = {{"error", e.what()}};
    }
    const std::string s = out.dump();
    for (size_t done = 0; done < s.size();) {
      const ssize_t n = ::write(p[1], s.data() + done, s.size() - done);
      if (n <= 0) break;
      done += size_t(n);
    }
    ::_exit(0);
  }
  ::close(p[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  ::close(p[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  MOE_CHECK(!text.empty(), "calibrate: the calibration process died (status " << status << ")");
  const nlohmann::json j = nlohmann::json::parse(text);
  MOE_CHECK(!j.contains("error"), "calibrate: " << j["error"].get<std::string>());
  Calibration c;
  c.measured = precision_from_json(j["measured"]), c.budget = precision_from_json(j["budget"]);
  c.points = j["points"], c.device = j["device"];
  return c;
}

std::string apply_precision(const std::string& mode, const std::string& device, bool in_child) {
  if (mode == "spec") {
    set_precision(spec_precision());
    return "the Vulkan precision rules";
  }
  MOE_CHECK(mode == "measured", "--precision '" << mode << "': expected measured or spec");
  Calibration c;
  if (in_child) {
    c = calibrate_in_child(device);
  } else {
    vk::Context ctx(device);
    c = calibrate(ctx);
  }
  set_precision(c.budget);
  return c.budget.source;
}

int calibrate_command(const std::string& device) {
  vk::Context ctx(device);
  const Calibration c = calibrate(ctx);
  const Precision rule = spec_precision();
  std::printf("device: %s; %lld points per function; budget = measured x %g, at least 1 ULP (2^-24), at most the rule\n\n",
              c.device.c_str(), static_cast<long long>(c.points), kCalibrationSafety);
  std::printf("%-28s %14s %14s %14s\n", "function", "measured", "budget", "Vulkan rule");
  auto row = [](const char* name, double m, double b, double r) {
    std::printf("%-28s %14.4g %14.4g %14.4g%s\n", name, m, b, r, m > r ? "  (the device breaks the rule)" : "");
  };
  row("exp, exp2: ULP at x = 0", c.measured.exp_a, c.budget.exp_a, rule.exp_a);
  row("exp, exp2: ULP per |x|", c.measured.exp_b, c.budget.exp_b, rule.exp_b);
  row("log, log2 in [0.5, 2]: abs", c.measured.log_abs, c.budget.log_abs, rule.log_abs);
  row("log, log2 elsewhere: ULP", c.measured.log_ulp, c.budget.log_ulp, rule.log_ulp);
  row("sin, cos on [-pi, pi]: abs", c.measured.sincos_abs, c.budget.sincos_abs, rule.sincos_abs);
  row("inversesqrt: ULP", c.measured.inversesqrt_ulp, c.budget.inversesqrt_ulp, rule.inversesqrt_ulp);
  row("division: ULP", c.measured.division_ulp, c.budget.division_ulp, rule.division_ulp);
  return 0;
}

}  // namespace moe::compare
