"""The 54-day pipeline before and after the engine became a package (issue 29, acceptance 5).

The pipeline is :mod:`bench_pipeline`'s (``simulate`` + ``metrics`` + ``check`` with ercot-5s,
nprr1191 and ieso on llama3-405b-16k-h100, 54 days at 1 s). The baseline revision's tree is
extracted (``git archive``, :func:`bench_fast.extract`) into a temporary directory; the two
trees then run the same child alternately, each run in a fresh subprocess, so that both see the
same machine load. Reported: each tree's least and median time per stage, and the ratio of the
medians (after / before); the target is a pipeline ratio at most 1.0 within the noise (the
spread of the runs is printed).

Usage: ``python bench/bench_engine_package.py [--baseline 6d5456b] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_fast import extract
from bench_pipeline import PIPELINE, PRESET, RULES

ROOT = Path(__file__).resolve().parent.parent
STAGES = ("imports", "simulate", "metrics", "check", "pipeline")


def run(tree: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", PIPELINE, PRESET, "{}", RULES],
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="6d5456b", help="the revision before the split")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each tree")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": extract(args.baseline, Path(tmp)), "after": ROOT}
        runs: dict[str, list[dict]] = {"before": [], "after": []}
        for i in range(args.repeat):
            for name in ("before", "after") if i % 2 == 0 else ("after", "before"):
                runs[name].append(run(trees[name]))
    rows = {}
    for stage in STAGES:
        before = [r[stage] for r in runs["before"]]
        after = [r[stage] for r in runs["after"]]
        rows[stage] = {
            "before_min_s": min(before),
            "before_median_s": statistics.median(before),
            "after_min_s": min(after),
            "after_median_s": statistics.median(after),
            "ratio_median": statistics.median(after) / statistics.median(before),
            "ratio_min": min(after) / min(before),
        }
        sys.stdout.write(
            f"{stage:9s} before {min(before):7.3f} s (median {statistics.median(before):7.3f}) "
            f"after {min(after):7.3f} s (median {statistics.median(after):7.3f})  "
            f"ratio {rows[stage]['ratio_median']:.3f} (least {rows[stage]['ratio_min']:.3f})\n"
        )
    peak = {name: max(r["peak_gb"] for r in runs[name]) for name in runs}
    sys.stdout.write(f"peak RSS before {peak['before']:.3f} GB after {peak['after']:.3f} GB\n")
    summary = {"baseline": args.baseline, "stages": rows, "peak_gb": peak}
    sys.stdout.write(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
