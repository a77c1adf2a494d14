#!/usr/bin/env python3
"""Every scenario file with REACT, paper-REACT and the oracle side by side.

Runs `react sim` on each file of examples/scenarios (or those named) with
--seeds seeds a cell (a file of one seed, a deterministic example, runs
once), and prints one table: per file, cell and tuned job, the gain of
REACT and of every compared tuner over the static baseline, the better
oracle's gain, each one's share of it, the p95 gains, and the changes per
100 epochs (reverts included). A last table averages each file, with
REACT's gain less each compared tuner's, run by run, and the standard
error of that mean. Every tuner change is judged on all of it, the
fabric files included, and on seeds it was not tuned on: without the
oracle (most of a run's time) forty seeds a cell fit in minutes.

    python3 scripts/scenarios.py                 # every file, 3 seeds a cell
    python3 scripts/scenarios.py --seeds 10 fig7a.json fig8.json
    python3 scripts/scenarios.py --seed 4 --seeds 40 --no-oracle   # seeds 4-43, no oracle
"""

import argparse
import glob
import json
import math
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pct(x):
    return "-" if x is None else f"{x:+.1f}"


def share(x):
    return "-" if x is None else f"{100 * x:.0f}%"


def cell_name(cell):
    return ",".join(f"{p['param']}={p['value']}" for p in cell.get("params") or []) or "-"


def rows(res):
    """One row per tuned job of every cell."""
    per100 = 100.0 / res["epochs"]
    for cell in res["cells"]:
        for job in cell["jobs"]:
            if not job.get("tuned", True):
                continue
            orc = job.get("best_oracle_improvement")
            row = {
                "cell": cell_name(cell),
                "job": job["name"],
                "react": job["improvement"]["mean"],
                "react_min": job["improvement"]["min"],
                "react_p95": job["improvement_p95"]["mean"],
                "react_share": job.get("share"),
                "react_changes": job["changes"]["mean"] * per100,
                "react_changes_max": job["changes"]["max"] * per100,
                "oracle": orc["mean"] if orc else None,
                "compare": {},
            }
            for c in job.get("compare") or []:
                row["compare"][c["name"]] = {
                    "gain": c["improvement"]["mean"],
                    "p95": c["improvement_p95"]["mean"],
                    "share": c.get("share"),
                    "changes": c["changes"]["mean"] * per100,
                }
            yield row


def paired(res):
    """Per compared tuner, REACT's gain less its gain in every run of
    every tuned job (the same case: a paired difference)."""
    out = {}
    for cell in res["cells"]:
        for run in cell["runs"]:
            for job in run["jobs"]:
                if not job.get("tuned", True):
                    continue
                for c in job.get("compare") or []:
                    out.setdefault(c["name"], []).append(job["improvement"] - c["improvement"])
    return out


def mean_se(xs):
    """The mean and its standard error ('-' where fewer than two)."""
    if len(xs) < 2:
        return "-"
    m = sum(xs) / len(xs)
    se = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1) / len(xs))
    return f"{m:+.1f} ({se:.1f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("files", nargs="*", help="scenario files (default: every file of examples/scenarios)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds a cell (default 3; a file of one seed runs once)")
    ap.add_argument("--no-oracle", action="store_true", help="skip the oracle (react sim --no-oracle); its columns then read -")
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: each file's own); --seed 4 --seeds 3 runs seeds 4-6")
    ap.add_argument("--react", default=os.path.join(ROOT, "build", "react"), help="the react command")
    ap.add_argument("--out", default=None, help="folder for each file's results.json (default: a temporary one)")
    ap.add_argument("--reuse", action="store_true", help="read a file's results.json from --out where one is there instead of running it")
    args = ap.parse_args()
    files = args.files or sorted(glob.glob(os.path.join(ROOT, "examples", "scenarios", "*.json")))
    files = [f if os.path.exists(f) else os.path.join(ROOT, "examples", "scenarios", f) for f in files]
    out = args.out or tempfile.mkdtemp(prefix="react-scenarios-")
    table, totals, start = [], [], time.time()
    for f in files:
        spec = json.load(open(f))
        name = spec["name"]
        own = (spec.get("sweep") or {}).get("seeds", 1)
        seeds = 1 if own == 1 else args.seeds
        t0 = time.time()
        done = os.path.join(out, name, "results.json")
        took_file = os.path.join(out, name, "seconds")
        if args.reuse and os.path.exists(done):
            res = json.load(open(done))
            t0 -= float(open(took_file).read()) if os.path.exists(took_file) else 0
        else:
            cmd = [args.react, "sim", "--scenario", f, "--seeds", str(seeds), "--quiet", "--no-plots",
                   "--format", "json", "--out", os.path.join(out, name)]
            if args.seed is not None:
                cmd += ["--seed", str(args.seed)]
            if args.no_oracle:
                cmd.append("--no-oracle")
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{name}: react sim failed ({run.returncode}): {run.stderr.strip()}", file=sys.stderr)
                return 1
            res = json.loads(run.stdout)
            open(took_file, "w").write(f"{time.time() - t0:.1f}\n")
        took = time.time() - t0
        rs = list(rows(res))
        for r in rs:
            table.append((name, r))
        totals.append((name, seeds, own, took, rs, paired(res)))
        print(f"{name}: {len(res['cells'])} cells x {seeds} seeds (file: {own}) in {took:.0f} s", file=sys.stderr)
    names = sorted({n for _, r in table for n in r["compare"]})
    head = ["file", "cell", "job", "REACT %", "min", "p95"]
    for n in names:
        head += [f"{n} %", f"{n} p95"]
    head += ["oracle %", "share"] + [f"{n} share" for n in names] + ["changes/100 (max)"] + [f"{n} changes/100" for n in names]
    lines = [head]
    for name, r in table:
        line = [name, r["cell"], r["job"], pct(r["react"]), pct(r["react_min"]), pct(r["react_p95"])]
        for n in names:
            c = r["compare"].get(n)
            line += [pct(c and c["gain"]), pct(c and c["p95"])]
        line += [pct(r["oracle"]), share(r["react_share"])]
        line += [share(r["compare"][n]["share"]) if n in r["compare"] else "-" for n in names]
        line += [f"{r['react_changes']:.1f} ({r['react_changes_max']:.0f})"]
        line += [f"{r['compare'][n]['changes']:.1f}" if n in r["compare"] else "-" for n in names]
        lines.append(line)
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    for l in lines:
        print("  ".join(v.rjust(w) if i > 2 else v.ljust(w) for i, (v, w) in enumerate(zip(l, widths))))
    print()
    print("per file: mean over its tuned jobs and cells")
    head = ["file", "seeds", "s", "REACT %"] + [f"{n} %" for n in names] + [f"REACT - {n} (se)" for n in names]
    head += ["oracle %", "share"] + [f"{n} share" for n in names] + ["changes/100"] + [f"{n} changes/100" for n in names]
    lines = [head]

    def mean(xs):
        xs = [x for x in xs if x is not None]
        return sum(xs) / len(xs) if xs else None

    for name, seeds, own, took, rs, diffs in totals:
        line = [name, f"{seeds}/{own}", f"{took:.0f}", pct(mean(r["react"] for r in rs))]
        line += [pct(mean(r["compare"][n]["gain"] for r in rs if n in r["compare"])) for n in names]
        line += [mean_se(diffs.get(n, [])) for n in names]
        line += [pct(mean(r["oracle"] for r in rs)), share(mean(r["react_share"] for r in rs))]
        line += [share(mean(r["compare"][n]["share"] for r in rs if n in r["compare"])) for n in names]
        line += [f"{mean(r['react_changes'] for r in rs) or 0:.1f}"]
        line += [f"{mean(r['compare'][n]['changes'] for r in rs if n in r['compare']) or 0:.1f}" for n in names]
        lines.append(line)
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    for l in lines:
        print("  ".join(v.rjust(w) if i > 0 else v.ljust(w) for i, (v, w) in enumerate(zip(l, widths))))
    print(f"\n{len(files)} files in {time.time() - start:.0f} s; results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
