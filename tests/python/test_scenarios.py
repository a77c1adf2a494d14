"""scripts/scenarios.py: every file, REACT beside the compared tuners, one table."""

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


def test_a_failing_file_fails_the_run(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "react.scenario/v1", "name": "bad"}')
    out = run("--out", str(tmp_path), str(bad))
    assert out.returncode == 1 and "bad: react sim failed" in out.stderr, out.stderr
