#!/usr/bin/env python3
"""How fast does REACT converge once congestion starts? Reads the results.json of
`react sim --scenario examples/scenarios/onset.json` and prints, per tuner (REACT
and each compared setting), the share of the final gain reached within two
batches after the first batch that saw the congestion (plus the lag), the mean
over runs, and how many runs reached 90%.

The final gain is the baseline's mean time over REACT's across the last 30
epochs; the gain reached is the same ratio over the B epochs that start
`lag` epochs after the end of the second batch after the first full batch
under congestion.

    python3 scripts/convergence.py out/onset/results.json [--onset 30 --batch 6 --lag 5]
"""

import argparse
import json


def gain(base, react):
    return sum(base) / sum(react) - 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--onset", type=int, default=30)
    ap.add_argument("--batch", type=int, default=6)
    ap.add_argument("--lag", type=int, default=5)
    a = ap.parse_args()
    res = json.load(open(a.results))
    first_end = -(-a.onset // a.batch) * a.batch + a.batch  # end of the first batch wholly after the onset
    at = first_end + 2 * a.batch + a.lag
    rows = {}
    for cell in res["cells"]:
        for run in cell["runs"]:
            for job in run["jobs"]:
                base = job["baseline"]["epoch_times"]
                tuners = [("REACT", job["react"]["epoch_times"])] + [(c["name"], c["react"]["epoch_times"]) for c in job.get("compare") or []]
                for name, t in tuners:
                    final = gain(base[-30:], t[-30:])
                    if final < 0.02:
                        continue  # nothing to converge to
                    rows.setdefault(name, []).append(gain(base[at:at + a.batch], t[at:at + a.batch]) / final)
    print(f"measured over epochs {at}-{at + a.batch - 1} (first batch under congestion ends at epoch {first_end - 1})")
    print(f"{'tuner':>8} {'runs':>5} {'mean share of final gain':>25} {'runs at 90%':>12}")
    for name, xs in rows.items():
        print(f"{name:>8} {len(xs):>5} {100 * sum(xs) / len(xs):>24.0f}% {sum(x >= 0.9 for x in xs):>12}")


if __name__ == "__main__":
    main()
