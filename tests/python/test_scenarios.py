"""scripts/scenarios.py: every file, REACT beside the compared tuners, one table."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REACT = os.path.join(ROOT, "build", "react")
SMALL = os.path.join(ROOT, "cmd", "react", "testdata", "sim-small.json")


def run(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "scenarios.py"), "--react", REACT, *args],
                          capture_output=True, text=True, timeout=300)


def test_one_table_with_the_compared_tuner_beside(tmp_path):
    out = run("--seeds", "1", "--out", str(tmp_path), SMALL)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    head = lines[0].split()
    for col in ("REACT", "paper6", "oracle", "share"):
        assert col in head, lines[0]
    rows = [l for l in lines if l.startswith("sim-small ")]
    # two cells (pairs 1 and 2) of one job, then the file's mean
    assert len(rows) == 3, out.stdout
    assert "1 cells x 1 seeds" not in out.stderr and "2 cells x 1 seeds (file: 2)" in out.stderr, out.stderr
    # --reuse reads the results back instead of running the file again
    again = run("--seeds", "1", "--out", str(tmp_path), "--reuse", SMALL)
    assert again.returncode == 0 and again.stdout.splitlines()[:-1] == lines[:-1], again.stdout


def test_many_seeds_without_the_oracle(tmp_path):
    """--no-oracle: the oracle's columns read -, and the per-file table
    gives REACT's gain less the compared tuner's, run by run, with its
    standard error."""
    out = run("--seed", "4", "--seeds", "6", "--no-oracle", "--out", str(tmp_path), SMALL)
    assert out.returncode == 0, out.stderr
    assert "2 cells x 6 seeds (file: 2)" in out.stderr, out.stderr
    lines = out.stdout.splitlines()
    per_file = lines.index("per file: mean over its tuned jobs and cells")
    head = lines[per_file + 1]
    assert "REACT - paper6 (se)" in head, head
    row = lines[per_file + 2].split()
    assert row[0] == "sim-small" and row[1] == "6/2", row
    # REACT and paper6 columns, then the paired difference and its error
    diff, se = row[5], row[6]
    assert diff[0] in "+-" and se.startswith("(") and se.endswith(")"), row
    res = json.load(open(tmp_path / "sim-small" / "results.json"))
    runs = [r for c in res["cells"] for r in c["runs"]]
    assert len(runs) == 12 and {r["seed"] for r in runs} == set(range(4, 10))
    assert all("best_oracle_improvement" not in j for r in runs for j in r["jobs"])
    d = [j["improvement"] - j["compare"][0]["improvement"] for r in runs for j in r["jobs"]]
    assert diff == f"{sum(d) / len(d):+.1f}", (diff, d)


def test_a_failing_file_fails_the_run(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "react.scenario/v1", "name": "bad"}')
    out = run("--out", str(tmp_path), str(bad))
    assert out.returncode == 1 and "bad: react sim failed" in out.stderr, out.stderr
