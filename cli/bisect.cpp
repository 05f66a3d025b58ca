// `moeoracle bisect`: the model-level differential (compare/model/model_compare.h) from the
// command line: console summary, first failure with its case file, --html and --json reports.
#include <iostream>

#include "compare/model/html_report.h"
#include "compare/model/model_compare.h"
#include "core/check.h"
#include "run.h"

namespace moe {

int run_bisect(const BisectOptions& o) {
  compare::ModelCompareOptions mo;
  mo.model = o.model, mo.kernels = o.kernels, mo.device = o.device, mo.mode = o.mode, mo.prefill = o.prefill;
  mo.subgroup = o.subgroup, mo.timeout_ms = o.timeout_ms, mo.case_out = o.case_out;
  mo.tokens = read_tokens(o.tokens, o.tokens_file, "bisect");
  MOE_CHECK(o.prefill >= 1, "bisect: --prefill " << o.prefill << ", expected >= 1");
  mo.forward.experts_per_tok = o.experts_per_token;
  mo.forward.qk_norm_eps = o.qk_norm_eps == "engine" ? QkNormEps::Engine : QkNormEps::Hf;
  const compare::ModelCompareResult r = compare::run_model_compare(mo);
  compare::write_model_console(std::cout, r);
  if (!o.html.empty()) compare::save_model_html(o.html, r);
  if (!o.json.empty()) compare::save_model_json(o.json, r);
  return r.failed > 0 ? 1 : 0;
}

}  // namespace moe
