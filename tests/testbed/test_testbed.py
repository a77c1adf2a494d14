"""The emulated cluster (testbed/testbed.py): behaviour, not timing.

- under congestion of one rank's downlink (two external TCP flows into it),
  the tuner switches pattern and the final pattern has fewer flows into that
  rank than the static one (it moved the rank off the critical path), and
  its report names that downlink first; the same with hosts of two ranks
  each, on the rails' patterns over hosts;
- with no congestion the tuner keeps nothing and tries at most once (a
  switch and its revert): the pattern in force at the end is the static one;
- nothing (namespace, veth, bridge, process) is left after a run, after a
  run stopped by SIGTERM or SIGINT, and `testbed.py clean` removes what a
  SIGKILLed run left.

Needs root and iproute2; skipped otherwise. Uses the library in build/
(REACT_LIBRARY overrides) and the interpreter running pytest for the ranks.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TESTBED = os.path.join(ROOT, "testbed", "testbed.py")
sys.path.insert(0, os.path.join(ROOT, "testbed"))
import netns  # noqa: E402
import testbed  # noqa: E402

try:
    testbed.check_available()
    _why = None
except testbed.Unavailable as e:
    _why = str(e)

pytestmark = pytest.mark.skipif(_why is not None, reason=f"testbed unavailable: {_why}")

# small but link-bound: 2 MiB tree allreduce on 200 Mbit/s links (docs/testbed.md)
SHORT = ["--size", "2M", "--rate", "200mbit", "--warmup", "2", "--timeout", "240"]


def _env():
    e = dict(os.environ, TESTBED_PYTHON=sys.executable)
    e.setdefault("REACT_LIBRARY", os.path.join(ROOT, "build", "libreact.so"))
    if not os.path.exists(e["REACT_LIBRARY"]):
        pytest.skip(f"no library at {e['REACT_LIBRARY']} (make lib)")
    return e


def _run(args, tmp_path, timeout=400):
    out = tmp_path / "res.json"
    p = subprocess.run([sys.executable, TESTBED, *args, "--out", str(out), "--workdir", str(tmp_path / "w")], env=_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    assert p.returncode == 0, f"testbed exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p, json.loads(out.read_text())


def _react(what, r, tmp_path, *flags):
    """`react replay` or `react report` on the run's FCT log (the live
    run's decisions, made again)."""
    react = os.path.join(ROOT, "build", "react")
    pat = tmp_path / "pattern.json"
    with open(pat, "w") as f:
        subprocess.run([react, "pattern", "--op", "allreduce", "--algo", "tree", "--ranks", str(r["ranks"]), "--format", "json"],
                       stdout=f, check=True)
    return subprocess.run([react, what, "--pattern", str(pat), "--fcts", r["fct_log"], "--bytes", str(r["size"]), *flags],
                          capture_output=True, text=True, check=True).stdout


def _kept(r, tmp_path):
    """The changes the tuner kept, by its own verdicts."""
    out = _react("replay", r, tmp_path, "--format", "json")
    return [d for d in map(json.loads, out.splitlines()) if d.get("kept")]


def _nothing_left(pid):
    left = testbed.leftovers(pid=pid)
    assert left == {"netns": [], "links": [], "pids": []}, left


def test_congested_rank_moved_off_the_critical_path(tmp_path):
    """p = 2 flows into rank 1: the tuner moves rank 1 off the critical path
    (fewer flows into it) and results stay exact. Whether the move is kept
    is the judge's, on measured times: the external flows' load comes in
    bursts (epochs of 0.34 to 1.96 s in one run), and in 3 of about 20 runs
    the moved pattern's first batch fell in one (0.92 s against 0.74 s
    before) and was reverted. The test holds the tuner to having tried. 60
    epochs: the runtime takes a switch two exchanges after the one that
    carried it (docs/runtime.md), up to 18 epochs after the tuner decided."""
    p, res = _run(["run", "--ranks", "4", "--flows", "2", "--target", "1", "--epochs", "60", "--modes", "react", *SHORT], tmp_path)
    r = res["react"]
    assert r["wrong"] == 0
    assert r["changes"] >= 1, f"the tuner made no switch under congestion of rank 1\n{p.stderr[-2000:]}"
    sw = r["swap"]
    assert sw["target"] == 1
    assert sw["flows_into_target_fewest"] < sw["flows_into_target_before"], sw["text"]
    # what the tuner learned names the congested host first. Its direction
    # is not asserted: the external flows' queue on rank 1's downlink (tbf,
    # 20 ms) also holds the ACKs of rank 1's own sends, so its outgoing flows
    # slow too. In 4 runs here the downlink came first (2.0-4.8 competing)
    # with the uplink beside it (0.4-3.1); in one CI run the fit put it all
    # on the uplink (0.84).
    links = json.loads(_react("report", r, tmp_path, "--json"))["links"]
    assert links and (links[0]["rank"], links[0]["significant"]) == (1, True), links
    # the external flows really ran
    assert sum(f.get("bytes", 0) for f in r["flows_measured"] if f.get("role") == "sink") > 0


def test_congested_host_of_two_ranks_moved(tmp_path):
    """4 hosts x 2 ranks sharing their host's link: the job runs hierarchically
    (found by address: one namespace a host), the pattern over hosts that
    every rail runs moves the congested host off the critical path, results
    stay exact. Whether the move is kept is the judge's, on measured times:
    8 ranks on 2 cores hide the congestion in some runs (in one CI run the
    moved pattern's epochs averaged what the old one's did, 0.50 s, and it
    was reverted), so the test holds the tuner to having tried it. 90 epochs:
    with the dataflow executor, one run of 60 in four (the one right after
    the torch suite, on a loaded machine) made no try."""
    p, res = _run(["run", "--hosts", "4", "--ranks-per-host", "2", "--flows", "2", "--target", "1", "--epochs", "90", "--modes", "react",
                   *SHORT], tmp_path, timeout=600)
    r = res["react"]
    assert r["wrong"] == 0 and r["ranks"] == 8 and r["ranks_per_host"] == 2
    assert r.get("fct_log", "").endswith(".allreduce.float32.262144.jsonl"), f"no log of the 1 MiB shard: not hierarchical\n{p.stderr[-2000:]}"
    assert r["changes"] >= 1, f"no switch under congestion of host 1\n{p.stderr[-2000:]}"
    sw = r["swap"]
    assert sw["target"] == 1
    assert sw["flows_into_target_fewest"] < sw["flows_into_target_before"], sw["text"]


def test_no_congestion_no_change(tmp_path):
    p, res = _run(["run", "--ranks", "4", "--flows", "0", "--epochs", "30", "--modes", "react", *SHORT], tmp_path)
    r = res["react"]
    assert r["wrong"] == 0
    # With nothing to route around the tuner keeps nothing and tries at most
    # once (the paper's Table 2 counts 34 changes at p = 0; a try and its
    # revert are two). On 2 shared cores the link model misses these FCTs by
    # about 20% and blames the ranks that forward data; a gain it predicts
    # must exceed half that miss (tuner.misfitShare).
    assert r["changes"] <= 2, f"{r['changes']} switches without congestion"
    # a trial may still be running when the run ends (its verdict comes a
    # batch and the runtime's deferral later): what counts is that none was kept
    kept = _kept(r, tmp_path)
    assert not kept, f"kept a change without congestion ({r['changes']} switches)\n{r['swap']['text']}\n{kept}"


def test_nothing_left_after_success(tmp_path):
    proc = subprocess.Popen([sys.executable, TESTBED, "run", "--ranks", "2", "--flows", "1", "--epochs", "3", "--modes", "baseline",
                             *SHORT], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-3000:]
    _nothing_left(proc.pid)


def _start_and_wait_for_ranks(tmp_path):
    """Starts a long run; returns (process, pids seen inside its namespaces) once ranks and flows run."""
    proc = subprocess.Popen([sys.executable, TESTBED, "run", "--ranks", "3", "--flows", "1", "--epochs", "1000", *SHORT],
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    seen = set()
    while time.monotonic() < deadline:
        left = testbed.leftovers(pid=proc.pid)
        seen |= set(left["pids"])
        if len(left["pids"]) >= 5:  # 3 ranks + sink + sender
            return proc, seen
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    out, err = proc.communicate()
    testbed.clean(pid=proc.pid)
    pytest.fail(f"ranks did not start: {err[-3000:]}")


def _gone(pids):
    alive = []
    for x in pids:
        try:
            with open(f"/proc/{x}/stat") as f:
                if f.read().split(")")[-1].split()[0] != "Z":
                    alive.append(x)
        except FileNotFoundError:
            pass
    return alive


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_nothing_left_after_interrupt(tmp_path, sig):
    proc, seen = _start_and_wait_for_ranks(tmp_path)
    time.sleep(2)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    _nothing_left(proc.pid)
    assert _gone(seen) == [], f"processes left: {_gone(seen)}"


def test_clean_after_sigkill(tmp_path):
    proc, seen = _start_and_wait_for_ranks(tmp_path)
    proc.kill()
    proc.communicate(timeout=30)
    left = testbed.leftovers(pid=proc.pid)
    assert left["netns"] and left["links"], "a SIGKILLed run should leave something for clean to remove"
    p = subprocess.run([sys.executable, TESTBED, "clean"], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    _nothing_left(proc.pid)
    deadline = time.monotonic() + 10
    while _gone(seen) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(seen) == [], f"processes left: {_gone(seen)}"


def test_unavailable_exit_code(monkeypatch, capsys):
    """`demo` exits 77 (and says why) where namespaces cannot be made: not root, or no ip."""
    monkeypatch.setattr(testbed.os, "geteuid", lambda: 1000)
    assert testbed.main(["demo"]) == testbed.EXIT_UNAVAILABLE
    assert "needs root" in capsys.readouterr().err
    monkeypatch.undo()
    monkeypatch.setattr(netns.shutil, "which", lambda tool: None)
    assert testbed.main(["demo"]) == testbed.EXIT_UNAVAILABLE
    assert "'ip'" in capsys.readouterr().err
