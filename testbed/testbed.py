#!/usr/bin/env python3
"""Emulated shared cluster for react-torch (issue 7; the paper's §7.2, Table 2).

N rank hosts and M external hosts, each a network namespace with one veth
into one Linux bridge (a star). Every host's link is shaped in both
directions with tc tbf (egress of the namespace end = uplink, egress of the
bridge end = downlink). Ranks run `python -m react_torch.bench --json` (per-epoch times
and the pattern switches) inside their namespaces with torchrun's env rendezvous; external
hosts send long-running TCP flows (testbed/flow.py) into one rank. Each
placement runs the static baseline (REACT_TUNE=0) and then REACT
(REACT_TUNE=1).

    testbed.py demo                       4 ranks, one congested rank (p=2), both tables and the swap
    testbed.py run --ranks 4 --flows 2    one placement, baseline then REACT
    testbed.py table --out results.json   the paper's Table 2 (4 and 8 ranks, p = 0, 1, 2)
    testbed.py hosts --hosts 4 --ranks-per-host 2   hosts with several ranks: flat vs hierarchical, REACT
    testbed.py calibrate                  collective time at rate R vs 2R vs unshaped, CPU use
    testbed.py clean [--all]              remove leftovers (namespaces, links, processes) by prefix
    testbed.py check                      exit 0 if namespaces can be made here, 77 (and why) if not

Needs root, iproute2 (ip, tc) and network namespaces. Everything it makes is
named rtb<pid>...; it removes all of it on success, failure, SIGINT, SIGTERM
and SIGHUP; `clean` removes what a SIGKILLed run left (of dead pids only,
unless --all).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

# leftovers: tests reach the namespaces' helpers through this module
from netns import Testbed, Unavailable, check_available, clean, leftovers, library, log, python_exe  # noqa: F401
from swaps import describe_swap, fct_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXIT_UNAVAILABLE = 77  # namespaces cannot be made here: callers fall back (e.g. to the simulator)
MASTER_PORT = 29500
FLOW_PORT = 5201

# Chosen by `calibrate` on a 2-core machine (docs/testbed.md): at these the
# collective time follows the link rate, not the CPUs.
DEFAULT_RATE = "200mbit"
DEFAULT_SIZE = "2M"


# ---------------------------------------------------------------- one run


def cpu_sample() -> Tuple[int, int]:
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v), idle


def size_bytes(s: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper()
    return int(float(s[:-1]) * mult[s[-1]]) if s and s[-1] in mult else int(s)


def run_bench(tb: Testbed, tune: bool, size: str, epochs: int, warmup: int, flows: int, target: int, workdir: str,
              extra_env: Optional[Dict[str, str]] = None, timeout: float = 900, with_gloo: bool = False,
              label: str = "", direction: str = "in", per_host: int = 1, hosts: str = "") -> dict:
    """One bench run with `flows` external flows into (direction "in") or out of ("out")
    host `target`, one per external host; returns its record. Each host
    runs per_host ranks (ranks r*per_host .. of host r), which share its
    link; hosts, if given, is REACT_HOSTS (flat or hier)."""
    py = python_exe()
    n = tb.nranks * per_host
    name = f"{'react' if tune else 'baseline'}{label}"
    times_path = os.path.join(workdir, f"{name}.bench.json")
    fct_path = os.path.join(workdir, f"{name}.fct")
    for pth in [times_path, fct_path] + glob.glob(fct_path + ".*"):
        if os.path.exists(pth):
            os.unlink(pth)
    # external flows: sink in the target rank, one sender per external host
    flow_procs, flow_logs = [], []
    fpy = os.path.join(HERE, "flow.py")
    bound = str(int(timeout) + 60)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("REACT_", "TORCHELASTIC", "GLOO_", "NCCL_")) and
                k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    if flows:
        rns, _, rip = tb.rank(target)
        ends = []  # (sink namespace, sink address, sender namespace) per flow
        for j in range(flows):
            xns, _, xip = tb.external(j % tb.nexternal)
            ends.append((rns, rip, xns) if direction == "in" else (xns, xip, rns))
        for j, (sns, _, _) in enumerate(ends):
            lg = open(os.path.join(workdir, f"{name}.sink{j}.log"), "w+")
            flow_logs.append(lg)
            flow_procs.append(tb.popen(sns, [py, fpy, "sink", "--port", str(FLOW_PORT + j), "--duration", bound], base_env, lg, lg))
        time.sleep(0.3)
        for j, (_, sip, cns) in enumerate(ends):
            lg = open(os.path.join(workdir, f"{name}.send{j}.log"), "w+")
            flow_logs.append(lg)
            flow_procs.append(tb.popen(cns, [py, fpy, "send", "--host", sip, "--port", str(FLOW_PORT + j), "--duration", bound], base_env, lg, lg))
        time.sleep(2.0)  # let the flows fill the link
    master = tb.rank(0)[2]
    # --block 1: the ranks line up before every call, as the table's runs always did
    args = ["-b", size, "-e", size, "--epochs", str(epochs), "--warmup", str(warmup), "--block", "1", "--json", times_path]
    if not with_gloo:
        args.append("--no-baseline")
    ranks, outs = [], []
    c0 = cpu_sample()
    ct0 = os.times()  # the ranks are our children: their CPU time is ours once reaped
    t0 = time.monotonic()
    for r in range(n):
        ns = tb.rank(r // per_host)[0]
        env = dict(base_env)
        env.update({
            "RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_RANK": str(r % per_host), "LOCAL_WORLD_SIZE": str(per_host),
            "GROUP_RANK": str(r // per_host),
            "MASTER_ADDR": master, "MASTER_PORT": str(MASTER_PORT), "GLOO_SOCKET_IFNAME": "eth0",
            "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join([os.environ.get("TESTBED_SRC") or os.path.join(ROOT, "python")] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])),
            "REACT_LIBRARY": library(), "REACT_TUNE": "1" if tune else "0",
        })
        if tune:
            env["REACT_FCT_LOG"] = fct_path
        if hosts:
            env["REACT_HOSTS"] = hosts
        env.update(extra_env or {})
        o = open(os.path.join(workdir, f"{name}.rank{r}.log"), "w+")
        outs.append(o)
        ranks.append(tb.popen(ns, [py, "-m", "react_torch.bench", *args], env, o, o))
    failed = None
    try:
        deadline = time.monotonic() + timeout
        while any(p.poll() is None for p in ranks):
            if time.monotonic() > deadline:
                failed = f"ranks still running after {timeout:.0f}s"
                break
            bad = [i for i, p in enumerate(ranks) if p.poll() not in (None, 0)]
            if bad:
                time.sleep(3)  # let the others fail too, then stop them
                failed = f"rank(s) {bad} exited with {[ranks[i].returncode for i in bad]}"
                break
            time.sleep(0.2)
    finally:
        wall = time.monotonic() - t0
        c1 = cpu_sample()
        tb.stop(ranks)
        ct1 = os.times()
        tb.stop(flow_procs)
        for p in ranks + flow_procs:
            if p in tb.procs:
                tb.procs.remove(p)
    texts = []
    for o in outs:
        o.seek(0)
        texts.append(o.read())
        o.close()
    flow_res = []
    for lg in flow_logs:
        lg.seek(0)
        for line in lg.read().splitlines():
            if line.startswith("{"):
                flow_res.append(json.loads(line))
        lg.close()
    if failed:
        tail = "\n".join(f"--- rank {i}:\n" + "\n".join(t.strip().splitlines()[-15:]) for i, t in enumerate(texts))
        raise RuntimeError(f"{name}: {failed}\n{tail}")
    with open(times_path) as f:
        recs = json.load(f)["results"]
    rec = next(r for r in recs if r["backend"] == "react")
    table = [ln for ln in texts[0].splitlines() if ln.startswith(("#", "  "))]
    busy = (c1[0] - c1[1]) - (c0[0] - c0[1])
    tot = c1[0] - c0[0]
    res = {
        "mode": "react" if tune else "baseline", "ranks": n, "hosts": tb.nranks, "ranks_per_host": per_host,
        "hosts_mode": hosts or "auto", "flows": flows, "target": target if flows else None, "direction": direction,
        "size": size_bytes(size), "epochs": epochs, "warmup": warmup,
        "mean_s": rec["mean_s"], "p95_s": rec["p95_s"], "wrong": rec["wrong"], "times_s": rec["times_s"],
        "changes": rec.get("switches", -1), "wall_s": round(wall, 2), "cpu_util": round(busy / tot, 3) if tot else None,
        "rank_cpu_util": round((ct1.children_user + ct1.children_system - ct0.children_user - ct0.children_system) / wall / (os.cpu_count() or 1), 3),
        "cpu_cores": os.cpu_count(), "flows_measured": flow_res, "table": table,
    }
    hier = per_host > 1 and hosts != "flat" or hosts == "hier"
    # a hierarchical job's key is a shard of the call, its pattern's vertices hosts
    key_log = fct_file(fct_path, -(-rec["count"] // per_host) if hier else rec["count"])
    if tune and key_log:
        res["fct_log"] = key_log
        into = (target if hier else target * per_host) if flows else None
        res["swap"] = describe_swap(key_log, into, size_bytes(size) // (per_host if hier else 1))
    if with_gloo:
        g = [r for r in recs if r["backend"] != "react"]
        if g:
            res["gloo_mean_s"], res["gloo_p95_s"] = g[0]["mean_s"], g[0]["p95_s"]
    return res


# ---------------------------------------------------------------- commands


def _placement(args, tb: Testbed, flows: int, target: int, workdir: str, label: str = "") -> dict:
    """Baseline then REACT on the same placement; returns both and the ratios."""
    runs = {}
    modes = getattr(args, "modes", "baseline,react").split(",")
    for tune in (False, True):
        mode = "react" if tune else "baseline"
        if mode not in modes:
            continue
        where = f" ({getattr(args, 'direction', 'in')} host {target})" if flows else ""
        per_host, hosts = getattr(args, "ranks_per_host", 1), getattr(args, "hosts_mode", "")
        shape = f"{tb.nranks} hosts x {per_host} ranks ({hosts or 'auto'})" if per_host > 1 else f"{tb.nranks} ranks"
        log(f"{shape}, p={flows}{where}, {mode}: {args.epochs} epochs of {args.size} at {tb.rate or 'unshaped'}")
        runs[mode] = run_bench(tb, tune, args.size, args.epochs, args.warmup, flows, target, workdir,
                               timeout=args.timeout, with_gloo=getattr(args, "with_gloo", False), label=label,
                               direction=getattr(args, "direction", "in"), per_host=per_host, hosts=hosts)
        r = runs[mode]
        log(f"  mean {r['mean_s'] * 1e3:.1f} ms, p95 {r['p95_s'] * 1e3:.1f} ms, changes {r['changes']}, wrong {r['wrong']}, "
            f"cpu: ranks {r['rank_cpu_util'] * 100:.0f}%, machine {r['cpu_util'] * 100:.0f}% of {r['cpu_cores']} cores, wall {r['wall_s']}s")
    out = {"ranks": tb.nranks, "p": flows, "target": target, "rate": tb.rate, "size": size_bytes(args.size), "epochs": args.epochs, **runs}
    if "baseline" in runs and "react" in runs:
        b, r = runs["baseline"], runs["react"]
        out.update({"speedup_mean": b["mean_s"] / r["mean_s"], "speedup_p95": b["p95_s"] / r["p95_s"]})
    if "react" in runs:
        out["changes"] = runs["react"]["changes"]
    return out


def _print_tables(res: dict) -> None:
    for mode in ("baseline", "react"):
        r = res.get(mode)
        if r is None:
            continue
        print(f"## {mode} (REACT_TUNE={'1' if mode == 'react' else '0'}), {res['ranks']} ranks, p={res['p']}"
              f"{' into rank %d' % res['target'] if res['p'] else ''}, links {res['rate'] or 'unshaped'}")
        for ln in r["table"]:
            print(ln)
    if "speedup_mean" in res:
        print(f"speedup (baseline/REACT): mean {res['speedup_mean']:.3f}, p95 {res['speedup_p95']:.3f}; pattern changes {res['changes']}")
    elif "changes" in res:
        print(f"pattern changes {res['changes']}")


def _new_testbed(args, nranks: int, nexternal: int) -> Testbed:
    rate = None if args.rate in ("none", "0", "") else args.rate
    return Testbed(nranks, nexternal, rate, burst=args.burst, latency=args.latency)


def cmd_run(args) -> int:
    tb = _new_testbed(args, args.ranks, max(args.flows, 1))
    with tempfile.TemporaryDirectory(prefix="react-testbed-") as tmp:
        workdir = args.workdir or tmp
        os.makedirs(workdir, exist_ok=True)
        try:
            tb.up()
            res = _placement(args, tb, args.flows, args.target, workdir)
        finally:
            tb.down()
        _print_tables(res)
        if res.get("react", {}).get("swap"):
            print(res["react"]["swap"]["text"])
        if args.out:
            _dump(args.out, res)
    return 0


PAPER_TABLE2 = {  # ranks -> p -> (mean, p95, changes)
    4: {0: (0.964, 0.999, 34), 1: (1.138, 1.101, 35.6), 2: (1.348, 1.145, 33.2)},
    8: {0: (0.963, 0.980, 41.25), 1: (1.180, 1.165, 40), 2: (1.383, 1.222, 36.25)},
}


def format_table2(rows: List[dict]) -> str:
    out = ["#Nodes  p   Speedup x          # changes   | paper: mean    p95   # changes",
           "            Mean      p95                  |"]
    last = None
    for r in rows:
        n = r["ranks"]
        pp = PAPER_TABLE2.get(n, {}).get(r["p"])
        paper = f"{pp[0]:>6.3f} {pp[1]:>6.3f} {pp[2]:>8}" if pp else ""
        out.append(f"{(str(n) if n != last else ''):>6} {r['p']:>3}   {r['speedup_mean']:>6.3f}   {r['speedup_p95']:>6.3f}   {r['changes']:>9}   |      {paper}")
        last = n
    return "\n".join(out)


def cmd_table(args) -> int:
    rows = []
    ranks = [int(x) for x in args.ranks.split(",")]
    ps = [int(x) for x in args.p.split(",")]
    with tempfile.TemporaryDirectory(prefix="react-testbed-") as tmp:
        workdir = args.workdir or tmp
        os.makedirs(workdir, exist_ok=True)
        for n in ranks:
            tb = _new_testbed(args, n, max(ps + [1]))
            try:
                tb.up()
                for p in ps:
                    target = args.target if args.target >= 0 else default_target(n)
                    res = _placement(args, tb, p, target, workdir, label=f"-n{n}-p{p}")
                    rows.append(res)
                    print(f"# {n} ranks p={p}: speedup mean {res['speedup_mean']:.3f} p95 {res['speedup_p95']:.3f} changes {res['changes']}", flush=True)
                    if args.out:
                        _dump(args.out, _table_doc(args, rows))
            finally:
                tb.down()
    print("Table 2 (testbed): ratio of mean (or p95) collective completion time, baseline over REACT; tree AllReduce")
    print(format_table2(rows))
    if args.out:
        _dump(args.out, _table_doc(args, rows))
        log(f"wrote {args.out}")
    return 0


def _table_doc(args, rows) -> dict:
    slim = []
    for r in rows:
        s = {k: v for k, v in r.items() if k not in ("baseline", "react")}
        for m in ("baseline", "react"):
            s[m] = {k: v for k, v in r[m].items() if k not in ("table",)}
        slim.append(s)
    return {"format": "react.testbed.table2/v1", "op": "allreduce", "algo": "tree", "rate": args.rate, "burst": args.burst,
            "latency": args.latency, "size": size_bytes(args.size), "epochs": args.epochs, "warmup": args.warmup,
            "cpu_cores": os.cpu_count(), "paper": {str(n): {str(p): v for p, v in d.items()} for n, d in PAPER_TABLE2.items()},
            "table": format_table2(rows), "rows": slim}


def format_hosts(rows: List[dict]) -> str:
    out = ["hosts x ranks  p   hier/flat static   REACT speedup over hier static   # changes",
           "                   mean time ratio      mean      p95"]
    for r in rows:
        out.append(f"{r['hosts']:>5} x {r['ranks_per_host']:<5} {r['p']:>2}   {r['hier_over_flat']:>15.3f}   "
                   f"{r['speedup_mean']:>10.3f} {r['speedup_p95']:>8.3f}   {r['changes']:>9}")
    return "\n".join(out)


def cmd_hosts(args) -> int:
    """Hosts with several ranks sharing their host's link: per p, the flat
    static pattern over all ranks, the hierarchical static one (patterns over
    hosts per rail) and hierarchical REACT, on one placement."""
    rows = []
    ps = [int(x) for x in args.p.split(",")]
    with tempfile.TemporaryDirectory(prefix="react-testbed-") as tmp:
        workdir = args.workdir or tmp
        os.makedirs(workdir, exist_ok=True)
        tb = _new_testbed(args, args.hosts, max(ps + [1]))
        try:
            tb.up()
            for p in ps:
                target = args.target if args.target >= 0 else default_target(args.hosts)
                args.hosts_mode, args.modes = "flat", "baseline"
                flat = _placement(args, tb, p, target, workdir, label=f"-flat-p{p}")
                args.hosts_mode, args.modes = "hier", "baseline,react"
                res = _placement(args, tb, p, target, workdir, label=f"-hier-p{p}")
                res.update({"hosts": args.hosts, "ranks_per_host": args.ranks_per_host, "flat": flat["baseline"],
                            "hier_over_flat": res["baseline"]["mean_s"] / flat["baseline"]["mean_s"]})
                rows.append(res)
                print(f"# {args.hosts} hosts x {args.ranks_per_host} p={p}: hier/flat {res['hier_over_flat']:.3f}, REACT speedup mean "
                      f"{res['speedup_mean']:.3f} p95 {res['speedup_p95']:.3f} changes {res['changes']}", flush=True)
                if args.out:
                    _dump(args.out, _hosts_doc(args, rows))
        finally:
            tb.down()
    print(f"Hosts with several ranks (testbed): {args.size} tree AllReduce, links {args.rate}; hier/flat: the static "
          "hierarchical pattern's mean time over the flat one's; speedup: hierarchical static over hierarchical REACT")
    print(format_hosts(rows))
    if args.out:
        _dump(args.out, _hosts_doc(args, rows))
    return 0


def _hosts_doc(args, rows) -> dict:
    slim = [{k: ({kk: vv for kk, vv in v.items() if kk != "table"} if isinstance(v, dict) else v) for k, v in r.items()} for r in rows]
    return {"format": "react.testbed.hosts/v1", "op": "allreduce", "algo": "tree", "rate": args.rate, "size": size_bytes(args.size),
            "epochs": args.epochs, "warmup": args.warmup, "hosts": args.hosts, "ranks_per_host": args.ranks_per_host,
            "cpu_cores": os.cpu_count(), "table": format_hosts(rows), "rows": slim}


def default_target(n: int) -> int:
    """The congested rank: one that is an inner vertex of a tree (not rank 0, the leader and store)."""
    return 1


def cmd_demo(args) -> int:
    args.epochs = args.epochs or 40
    tb = _new_testbed(args, 4, 2)
    with tempfile.TemporaryDirectory(prefix="react-testbed-") as tmp:
        try:
            tb.up()
            res = _placement(args, tb, 2, args.target if args.target >= 0 else 1, tmp)
        finally:
            tb.down()
        _print_tables(res)
        sw = res["react"].get("swap")
        print("what REACT changed:")
        print(sw["text"] if sw else "  (no FCT log)")
        _demo_report(res, tmp, args.plot)
        if args.out:
            _dump(args.out, res)
    return 0


def _demo_report(res: dict, tmp: str, plot: str) -> None:
    """What the tuner learned (react report on REACT's FCT log) and a
    picture: both runs' epoch times, the switch marked, the links' loads."""
    react = os.path.join(ROOT, "build", "react")
    log_path = res["react"].get("fct_log")
    if not log_path or not os.path.exists(react):
        print(f"(no report: {'no FCT log' if not log_path else react + ' not built'})")
        return
    pat, base = os.path.join(tmp, "pattern.json"), os.path.join(tmp, "static.json")
    with open(pat, "w") as f:
        subprocess.run([react, "pattern", "--op", "allreduce", "--algo", "tree", "--ranks", str(res["ranks"]), "--format", "json"], stdout=f, check=True)
    with open(base, "w") as f:
        json.dump(res["baseline"]["times_s"], f)
    if os.path.dirname(plot):
        os.makedirs(os.path.dirname(plot), exist_ok=True)
    out = subprocess.run([react, "report", "--pattern", pat, "--fcts", log_path, "--plot", plot, "--baseline", base], capture_output=True, text=True)
    print("what the tuner learned (react report):")
    print(out.stdout.rstrip() or out.stderr.rstrip())
    if out.returncode == 0:
        print(f"picture: {plot}")


def cmd_calibrate(args) -> int:
    """Collective time at R, 2R and unshaped, no congestion, static pattern; CPU use."""
    rates = args.rates.split(",")
    rows = []
    with tempfile.TemporaryDirectory(prefix="react-testbed-") as tmp:
        for n in [int(x) for x in args.ranks.split(",")]:
            tb = Testbed(n, 0, None, burst=args.burst, latency=args.latency)
            try:
                tb.up()
                for rate in rates:
                    r = None if rate == "none" else rate
                    for i in range(n):
                        tb.shape(i, r)
                    tb.rate = r
                    res = run_bench(tb, False, args.size, args.epochs, args.warmup, 0, 0, tmp, timeout=args.timeout, label=f"-cal{n}-{rate}")
                    row = {"ranks": n, "rate": rate, "mean_s": res["mean_s"], "p95_s": res["p95_s"], "cpu_util": res["cpu_util"],
                           "rank_cpu_util": res["rank_cpu_util"], "wall_s": res["wall_s"]}
                    rows.append(row)
                    print(f"{n} ranks {rate:>8}: mean {res['mean_s'] * 1e3:8.1f} ms  p95 {res['p95_s'] * 1e3:8.1f} ms  "
                          f"cpu: ranks {res['rank_cpu_util'] * 100:5.1f}%, machine {res['cpu_util'] * 100:5.1f}% of {os.cpu_count()} cores", flush=True)
            finally:
                tb.down()
    if args.out:
        _dump(args.out, {"format": "react.testbed.calibrate/v1", "size": size_bytes(args.size), "epochs": args.epochs, "rows": rows})
    return 0


def cmd_clean(args) -> int:
    found = clean(include_live=args.all)
    n = sum(len(v) for v in found.values())
    print(f"removed {len(found['netns'])} namespaces, {len(found['links'])} links, killed {len(found['pids'])} processes" if n else "nothing to clean")
    return 0


def cmd_check(args) -> int:
    check_available()
    print("ok: network namespaces, veths, a bridge and tc are available")
    return 0


def _dump(path: str, doc: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def _on_signal(signum, frame):
    raise SystemExit(128 + signum)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="testbed.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p, epochs):
        p.add_argument("--rate", default=DEFAULT_RATE, help="tbf rate of every link, both directions ('none' = unshaped)")
        p.add_argument("--burst", default="64kb", help="tbf burst")
        p.add_argument("--latency", default="20ms", help="tbf queue (latency bound)")
        p.add_argument("--size", default=DEFAULT_SIZE, help="allreduce message size")
        p.add_argument("--epochs", type=int, default=epochs)
        p.add_argument("--warmup", type=int, default=3)
        p.add_argument("--timeout", type=float, default=900, help="seconds one bench run may take")
        p.add_argument("--target", type=int, default=-1, help="the congested rank (default 1)")
        p.add_argument("--direction", choices=["in", "out"], default="in", help="external flows into the rank (its downlink) or out of it (uplink)")
        p.add_argument("--workdir", default="", help="keep logs here (default: a temporary folder)")
        p.add_argument("--out", default="", help="write the results as JSON here")

    p = sub.add_parser("run", help="one placement: baseline then REACT")
    common(p, 100)
    p.add_argument("--ranks", "--hosts", type=int, default=4, help="hosts that run ranks (each --ranks-per-host of them)")
    p.add_argument("--ranks-per-host", type=int, default=1, help="ranks a host runs; they share its link")
    p.add_argument("--hosts-mode", default="", choices=["", "auto", "flat", "hier"], help="REACT_HOSTS of the ranks (default: theirs)")
    p.add_argument("--flows", type=int, default=1, help="p: external flows into the target host")
    p.add_argument("--with-gloo", action="store_true", help="also time the inner Gloo allreduce")
    p.add_argument("--modes", default="baseline,react", help="which runs: baseline, react or both")
    p = sub.add_parser("table", help="the paper's Table 2")
    common(p, 100)
    p.add_argument("--ranks", default="4,8")
    p.add_argument("--p", default="0,1,2")
    p = sub.add_parser("hosts", help="hosts with several ranks: flat static, hierarchical static and REACT per p")
    common(p, 60)
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--ranks-per-host", type=int, default=2)
    p.add_argument("--p", default="0,1,2")
    p = sub.add_parser("demo", help="4 ranks, one congested rank")
    common(p, 0)
    p.add_argument("--plot", default=os.path.join("out", "demo.png"), help="the picture of both runs and the links' loads")
    p = sub.add_parser("calibrate", help="collective time at R vs 2R vs unshaped; CPU use")
    common(p, 30)
    p.add_argument("--ranks", default="4,8")
    p.add_argument("--rates", default="100mbit,200mbit,400mbit,none")
    p = sub.add_parser("clean", help="remove leftovers by prefix")
    p.add_argument("--all", action="store_true", help="also those of live testbed processes")
    sub.add_parser("check", help="exit 0 if namespaces can be made, 77 if not")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        args.target = args.target if args.target >= 0 else default_target(args.ranks)

    try:
        check_available()
    except Unavailable as e:
        print(f"testbed: unavailable: {e}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _on_signal)
    try:
        return {"run": cmd_run, "table": cmd_table, "hosts": cmd_hosts, "demo": cmd_demo, "calibrate": cmd_calibrate,
                "clean": cmd_clean, "check": cmd_check}[args.cmd](args)
    except KeyboardInterrupt:
        log("interrupted; cleaned up")
        return 130
    except RuntimeError as e:
        print(f"testbed: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
