"""The Vulkan kernel gate (`moeoracle compare`, compare/run/driver.h): a kernel manifest's
kernels (or the bundled ones) run on a Vulkan device against the CPU truth, case by case, seed
by seed, at every subgroup size, each case decided with sound per-element error bounds.
"""
from __future__ import annotations

import json as _json
import os
from typing import Sequence

from . import _core


class CompareResult(list):
    """The cases, one dict each, in report order: op, kernel, manifest, params, shape, seed,
    subgroup (0: the driver chose it), subgroup_pinned, status ("PASS", "FAIL", "SKIP", or
    "DIFFERS": failed under a declared difference, not a failure), difference (the declared
    difference's why, "" if none), warn, skip_reason, error, gpu_ms, bytes, flops,
    repro (the command that reruns the case alone) and outputs: per compared output its
    verdict and metrics (name, kind, pass, failed criteria, reason, worst_index, expected,
    found, bound, budget_used, cosine, norm_ratio, max_abs_rel, max_ulp, ...), as in the --json
    report (compare/report/report.h). A non-finite number is None."""

    def __init__(self, cases: list, summary: dict, precision: str):
        super().__init__(cases)
        self.summary = summary      # passed, failed, skipped, ... as the report's summary
        self.precision = precision  # which transcendental error budgets were used

    @property
    def ok(self) -> bool:
        """No case failed (skips allowed): what `moeoracle compare` exits 0 for."""
        return all(c["status"] != "FAIL" for c in self)

    def failures(self) -> list[dict]:
        return [c for c in self if c["status"] == "FAIL"]


def _csv(x: str | Sequence[str] | None) -> str:
    if x is None:
        return ""
    return x if isinstance(x, str) else ",".join(x)


def compare(kernels: str | os.PathLike | None = None, *, ops: str | Sequence[str] | None = None, seed: int = 1,
            seeds: int = 1, shapes: str = "all", device: str | int = "", subgroup: int = 0,
            bounds: str = "probabilistic", precision: str = "measured", timeout_ms: int = 20000,
            case: str | os.PathLike | None = None, worker: str | os.PathLike | None = None, jobs: int = 1,
            perf: bool = False, json: str | os.PathLike | None = None, junit: str | os.PathLike | None = None,
            html: str | os.PathLike | None = None) -> CompareResult:
    """`moeoracle compare` as data. kernels: a manifest JSON (None or "bundled": the bundled
    kernels); ops: names (None: every op the manifest has cases for); seeds seed .. seed+seeds-1;
    shapes: remainders, real, all or one shape label; device: index or name substring ("": the
    first, GPUs first); subgroup: only this size (0: every size); bounds: probabilistic or worst;
    precision: measured (calibrated on the device first, the CLI's default) or spec (the Vulkan
    rules); case: replay one saved case file. The cases run in this process unless worker names
    the moeoracle executable, which then runs each kernel's cases in a worker process (a kernel
    that crashes the driver fails alone; the CLI's default). json/junit/html: also write those
    reports. A bad manifest or option raises moeoracle.Error naming the file and the entry."""
    text, note = _core.compare("" if kernels is None else os.fspath(kernels), _csv(ops), seed, seeds, shapes,
                               str(device), subgroup, timeout_ms, bounds, precision,
                               "" if case is None else os.fspath(case), "" if worker is None else os.fspath(worker),
                               jobs, perf, "" if json is None else os.fspath(json),
                               "" if junit is None else os.fspath(junit), "" if html is None else os.fspath(html))
    report = _json.loads(text)
    return CompareResult(report["cases"], report["summary"], note)


def devices() -> list[dict]:
    """The Vulkan devices (`moeoracle devices`): index, name, driver, type, subgroup sizes,
    limits. Empty when there is no Vulkan."""
    return list(_core.devices())
