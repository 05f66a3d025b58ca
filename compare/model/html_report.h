// Reports of a model-level comparison for people and tools.
// HTML: one self-contained page (inline CSS, inline script, the data embedded as JSON; no network
// needed to view it): the verdict, a pass/fail table per op and per layer, plots of the error
// (budget used per op in isolated mode; drift per tap in free mode) against layer and, in free
// mode, against token, histograms of budget used per op, the first failure's evidence with its
// replay command, every failure, and the uncovered ops with their reasons. The script sets
// #status to "rendered N plots" when it is done, or to "error: ..." if anything throws, so a
// headless browser can check it.
#pragma once
#include <ostream>
#include <string>

#include "compare/model/model_compare.h"

namespace moe::compare {

void write_model_html(std::ostream& os, const ModelCompareResult& r);
void save_model_html(const std::string& path, const ModelCompareResult& r);
// {meta, records: [...], drift: [...], first_failure, case_file}
void write_model_json(std::ostream& os, const ModelCompareResult& r);
void save_model_json(const std::string& path, const ModelCompareResult& r);

}  // namespace moe::compare
