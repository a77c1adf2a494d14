#!/usr/bin/env python3
"""How good is the tuner's judge? Reads the results.json of `react sim` runs and
prints, for REACT and each compared tuner setting, the error of the speed-up the
tuner predicted for every change it made against the speed-up the simulator then
measured: the mean collective time of the batch before the change over that of
the batch that judged it (kept or reverted).

    python3 scripts/judge_error.py out/fig5-tree/results.json [more results.json]
"""

import json
import sys


def pairs(decisions):
    """(predicted, observed) speed-up of every change that was judged."""
    out, pending = [], None
    for d in decisions:
        if pending is not None and (d.get("kept") or d.get("reverted")):
            out.append((pending[0], pending[1] / d["observed"]))
            pending = None
        if d.get("effective") and not d.get("reverted") and d.get("predicted"):
            pending = (d["predicted"], d["observed"])
    return out


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main(paths):
    by = {}
    for path in paths:
        res = json.load(open(path))
        for run in (r for cell in res["cells"] for r in cell["runs"]):
            for job in run["jobs"]:
                by.setdefault("REACT", []).extend(pairs(job.get("decisions", [])))
                for c in job.get("compare", []) or []:
                    by.setdefault(c["name"], []).extend(pairs(c.get("decisions", [])))
    print(f"{'tuner':>8} {'changes':>8} {'median |err|':>13} {'p90 |err|':>10} {'mean pred':>10} {'mean obs':>9}")
    for name, ps in by.items():
        errs = [abs(p / o - 1) for p, o in ps]
        mp = sum(p for p, _ in ps) / len(ps) if ps else float("nan")
        mo = sum(o for _, o in ps) / len(ps) if ps else float("nan")
        print(f"{name:>8} {len(ps):>8} {100 * quantile(errs, 0.5):>12.1f}% {100 * quantile(errs, 0.9):>9.1f}% {mp:>10.3f} {mo:>9.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
