"""Runs torch's own DistributedTest (suite.py) on gloo and on react at world
size 3 and fails on any test that passes on gloo and not on react.

    python tests/torchsuite/run.py                 # every test gloo gets (the CPU subset)
    python tests/torchsuite/run.py --quick         # QUICK below: make test's share
    python tests/torchsuite/run.py -k all_reduce   # tests whose name holds a pattern
    python tests/torchsuite/run.py --spawn         # ranks started as upstream does (slow)

Ranks are forked from the test process by default: spawned ones import torch
again, several seconds a rank and test on a busy machine, which makes the
whole subset take an hour. Prints gloo's and react's counts and every
difference; --json writes the outcomes.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

# make test's share (about a minute for both backends): the calls issue 15
# found broken, and the collectives react runs as patterns.
QUICK = [
    "test_all_reduce_sum", "test_all_reduce_coalesced_sum", "test_all_reduce_complex_unsupported_ops", "test_sparse_all_reduce_sum",
    "test_all_gather", "test_all_gather_coalesced_simple", "test_all_gather_object_subgroup", "test_broadcast", "test_reduce_sum",
    "test_scatter", "test_gather", "test_barrier", "test_batch_isend_irecv_gloo", "test_isend", "test_send_recv_any_source",
    "test_monitored_barrier_gloo_rank_0_timeout", "test_destroy_group", "test_get_backend", "test_accumulate_gradients_no_sync",
    "test_DistributedDataParallelCPU",
]


# Tests no out-of-tree backend can pass on this torch, reported apart and
# not counted: what they check is torch's, not the backend's.
TORCH_LIMITS = {
    "test_ddp_logging_data_cpu": "torch's ProcessGroup names every backend registered with register_backend "
                                 "'custom' (ProcessGroup.name(), which DDP's logger records), while dist.get_backend() "
                                 "gives the registered name ('react'); the test compares the two",
}

# Before torch 2.14 react is a ProcessGroup of its own (torch cannot make a
# Backend written in Python), and torch runs monitored_barrier on Gloo
# groups only ("monitored_barrier is only implemented for GLOO backend").
ROUTE_LIMITS = {
    "test_monitored_barrier_gloo_rank_0_timeout": "before torch 2.14 a react group is a ProcessGroup of its own, and torch runs "
                                                  "monitored_barrier on Gloo groups only",
}


def _torch_limits() -> dict:
    import torch

    version = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    return {**TORCH_LIMITS, **(ROUTE_LIMITS if version < (2, 14) else {})}


def run(backend: str, patterns, spawn: bool, timeout: int, world: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "results.json")
        env = dict(os.environ, TORCHSUITE_BACKEND=backend, TORCHSUITE_RESULTS=out, WORLD_SIZE=str(world),
                   # every spawned rank stands for a host: one pattern over the ranks
                   PYTHONPATH=os.path.join(ROOT, "python"), OMP_NUM_THREADS="1", REACT_HOSTS="flat",
                   DISTRIBUTED_TESTS_DEFAULT_TIMEOUT=str(timeout), TEMP_DIR=tmp)
        env.pop("TORCHSUITE_FORK", None)
        if not spawn:
            env["TORCHSUITE_FORK"] = "1"
        log = os.path.join(tmp, "log")
        t0 = time.time()
        with open(log, "w") as f:
            rc = subprocess.run([sys.executable, os.path.join(HERE, "suite.py"), *patterns], env=env, stdout=f, stderr=subprocess.STDOUT).returncode
        if not os.path.exists(out):
            tail = open(log).read()[-4000:]
            raise SystemExit(f"torchsuite: the {backend} run ended (exit {rc}) without results:\n{tail}")
        res = json.load(open(out))
        print(f"# {backend}: {len(res)} tests in {time.time() - t0:.0f} s", flush=True)
        return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tests/torchsuite/run.py")
    ap.add_argument("-k", action="append", default=[], help="run the tests whose name holds this (repeatable)")
    ap.add_argument("--quick", action="store_true", help="only the tests of QUICK")
    ap.add_argument("--spawn", action="store_true", help="spawn the ranks as upstream does (slow)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds a test may take")
    ap.add_argument("--world-size", type=int, default=3)
    ap.add_argument("--json", default="", help="write both backends' outcomes here")
    args = ap.parse_args(argv)
    # exact names for --quick (a bare name would also pick test_all_reduce_sum_async, ...)
    patterns = [f"*.{t}" for t in QUICK] if args.quick else args.k
    gloo = run("gloo", patterns, args.spawn, args.timeout, args.world_size)
    react = run("react", patterns, args.spawn, args.timeout, args.world_size)
    gp = {t for t, r in gloo.items() if r["outcome"] == "pass"}
    rp = {t for t, r in react.items() if r["outcome"] == "pass"}
    known = _torch_limits()
    limits = sorted(t for t in gp - rp if t in known)
    missing = sorted(t for t in gp - rp if t not in known)
    extra = sorted(rp - gp)
    skipped = sum(1 for r in gloo.values() if r["outcome"] == "skip")
    print(f"torchsuite: world size {args.world_size}: gloo passes {len(gp)}, react passes {len(rp)} "
          f"({len(gloo)} tests, {skipped} skipped on gloo); passing on gloo only: {len(missing)} (+{len(limits)} torch limits); on react only: {len(extra)}")
    for t in missing:
        r = react.get(t, {"outcome": "absent", "detail": ""})
        last = [x for x in r.get("detail", "").strip().splitlines() if x.strip()][-1:] or [""]
        print(f"  gloo only: {t}: react {r['outcome']}: {last[0][:300]}")
    for t in limits:
        print(f"  gloo only, a limit of torch (not counted): {t}: {known[t]}")
    for t in extra:
        print(f"  react only: {t}: gloo {gloo[t]['outcome']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gloo": gloo, "react": react}, f, indent=1, sort_keys=True)
    if args.quick and len(gp) < len(QUICK) // 2:
        print("torchsuite: most of QUICK did not pass on gloo: the suite did not run as meant", file=sys.stderr)
        return 1
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
