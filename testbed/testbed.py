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
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PREFIX = "rtb"
EXIT_UNAVAILABLE = 77  # namespaces cannot be made here: callers fall back (e.g. to the simulator)
SUBNET = "10.77.0"  # private to the namespaces: the bridge has no address, nothing routes out
MASTER_PORT = 29500
FLOW_PORT = 5201
DEFAULT_VENV = os.path.expanduser("~/.cache/react-torch/venv-torch2.15.0")

# Chosen by `calibrate` on a 2-core machine (docs/testbed.md): at these the
# collective time follows the link rate, not the CPUs.
DEFAULT_RATE = "200mbit"
DEFAULT_SIZE = "2M"


class Unavailable(Exception):
    """Network namespaces cannot be made here (not root, no ip/tc, no netns)."""


def log(msg: str) -> None:
    print(f"[testbed {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh(*argv: str, check: bool = True, quiet: bool = False) -> subprocess.CompletedProcess:
    p = subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def python_exe() -> str:
    env = os.environ.get("TESTBED_PYTHON")
    if env:
        return env
    v = os.path.join(os.environ.get("VENV", DEFAULT_VENV), "bin", "python")
    return v if os.path.exists(v) else sys.executable


def library() -> str:
    return os.environ.get("REACT_LIBRARY") or os.path.join(ROOT, "build", "libreact.so")


def check_available() -> None:
    """Raises Unavailable with the reason when namespaces cannot be made."""
    if not sys.platform.startswith("linux"):
        raise Unavailable(f"needs Linux network namespaces; this is {sys.platform}")
    if os.geteuid() != 0:
        raise Unavailable("needs root (it creates network namespaces, veths, a bridge and tc qdiscs); run as root or use the simulator")
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise Unavailable(f"'{tool}' (iproute2) is not installed")
    probe = f"{PREFIX}{os.getpid()}-probe"
    p = sh("ip", "netns", "add", probe, check=False)
    if p.returncode != 0:
        raise Unavailable(f"cannot create a network namespace: {p.stderr.strip()}")
    try:
        q = sh("ip", "link", "add", f"{PREFIX}{os.getpid()}pb", "type", "bridge", check=False)
        if q.returncode != 0:
            raise Unavailable(f"cannot create a Linux bridge: {q.stderr.strip()}")
        sh("ip", "link", "del", f"{PREFIX}{os.getpid()}pb", check=False)
    finally:
        sh("ip", "netns", "del", probe, check=False)


# ---------------------------------------------------------------- cleanup by prefix

_NAME = re.compile(rf"^{PREFIX}(\d+)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def leftovers(pid: Optional[int] = None, include_live: bool = False) -> Dict[str, List[str]]:
    """Namespaces, links and processes named with our prefix: of one testbed pid,
    or of every dead testbed pid (and live ones too with include_live)."""

    def mine(name: str) -> bool:
        m = _NAME.match(name)
        if not m:
            return False
        owner = int(m.group(1))
        if pid is not None:
            return owner == pid
        return include_live or not _alive(owner)

    out = {"netns": [], "links": [], "pids": []}
    p = sh("ip", "netns", "list", check=False)
    for line in p.stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        if mine(name):
            out["netns"].append(name)
            q = sh("ip", "netns", "pids", name, check=False)
            out["pids"] += [x for x in q.stdout.split() if x.isdigit()]
    p = sh("ip", "-o", "link", "show", check=False)
    for line in p.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            name = parts[1].strip().split("@")[0]
            if mine(name):
                out["links"].append(name)
    return out


def clean(pid: Optional[int] = None, include_live: bool = False) -> Dict[str, List[str]]:
    """Kills the processes inside our namespaces, deletes the namespaces, then the links."""
    found = leftovers(pid, include_live)
    for x in found["pids"]:
        try:
            os.kill(int(x), signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 5
    for ns in found["netns"]:
        while time.monotonic() < deadline and sh("ip", "netns", "pids", ns, check=False).stdout.strip():
            time.sleep(0.05)
        sh("ip", "netns", "del", ns, check=False)
    for link in sorted(found["links"], key=lambda n: n.endswith("br")):  # veths first, the bridge last
        sh("ip", "link", "del", link, check=False)
    return found


# ---------------------------------------------------------------- the network


class Testbed:
    """A star: hosts (namespaces) on one bridge, each link shaped both ways."""

    def __init__(self, nranks: int, nexternal: int, rate: Optional[str], burst: str = "64kb", latency: str = "20ms"):
        self.tag = f"{PREFIX}{os.getpid()}"
        self.nranks, self.nexternal = nranks, nexternal
        self.rate, self.burst, self.latency = rate, burst, latency
        self.bridge = f"{self.tag}br"
        self.hosts: List[Tuple[str, str, str]] = []  # (namespace, bridge-side veth, ip)
        for i in range(nranks):
            self.hosts.append((f"{self.tag}-r{i}", f"{self.tag}a{i}", f"{SUBNET}.{i + 1}"))
        for j in range(nexternal):
            self.hosts.append((f"{self.tag}-x{j}", f"{self.tag}a{nranks + j}", f"{SUBNET}.{101 + j}"))
        self.procs: List[subprocess.Popen] = []
        self.made = False

    def rank(self, i: int) -> Tuple[str, str, str]:
        return self.hosts[i]

    def external(self, j: int) -> Tuple[str, str, str]:
        return self.hosts[self.nranks + j]

    def up(self) -> None:
        self.made = True  # from here on down() has something to remove
        sh("ip", "link", "add", self.bridge, "type", "bridge", "stp_state", "0")
        sh("ip", "link", "set", self.bridge, "up")
        for idx, (ns, veth, ip) in enumerate(self.hosts):
            peer = f"{self.tag}b{idx}"
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", veth, "type", "veth", "peer", "name", peer)
            sh("ip", "link", "set", peer, "netns", ns)
            sh("ip", "link", "set", veth, "master", self.bridge, "up")
            n = ("ip", "netns", "exec", ns)
            sh(*n, "ip", "link", "set", "lo", "up")
            sh(*n, "ip", "link", "set", peer, "name", "eth0")
            sh(*n, "ip", "addr", "add", f"{ip}/24", "dev", "eth0")
            sh(*n, "ip", "link", "set", "eth0", "up")
            self.shape(idx, self.rate)
        self.wait_reachable()

    def shape(self, idx: int, rate: Optional[str]) -> None:
        ns, veth, _ = self.hosts[idx]
        for dev, pre in ((veth, ()), ("eth0", ("ip", "netns", "exec", ns))):
            sh(*pre, "tc", "qdisc", "del", "dev", dev, "root", check=False, quiet=True)
            if rate:
                sh(*pre, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", self.burst, "latency", self.latency)

    def wait_reachable(self, timeout: float = 10.0) -> None:
        ns0 = self.hosts[0][0]
        deadline = time.monotonic() + timeout
        for _, _, ip in self.hosts[1:]:
            while sh("ip", "netns", "exec", ns0, "ping", "-c1", "-W1", ip, check=False).returncode != 0:
                if shutil.which("ping") is None or time.monotonic() > deadline:
                    return
                time.sleep(0.1)

    def popen(self, ns: str, argv: List[str], env: Dict[str, str], stdout, stderr) -> subprocess.Popen:
        p = subprocess.Popen(["ip", "netns", "exec", ns, *argv], env=env, stdout=stdout, stderr=stderr,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(p)
        return p

    def stop(self, procs: List[subprocess.Popen], grace: float = 5.0) -> None:
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + grace
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()

    def down(self) -> None:
        sigs = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)  # a second ^C must not stop the cleanup
        try:
            self.stop(self.procs, grace=2.0)
            self.procs = []
            if self.made:
                clean(pid=os.getpid())
                self.made = False
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


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
              label: str = "", direction: str = "in") -> dict:
    """One bench run with `flows` external flows into (direction "in") or out of ("out")
    rank `target`, one per external host; returns its record."""
    py = python_exe()
    n = tb.nranks
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
        ns = tb.rank(r)[0]
        env = dict(base_env)
        env.update({
            "RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", "GROUP_RANK": str(r),
            "MASTER_ADDR": master, "MASTER_PORT": str(MASTER_PORT), "GLOO_SOCKET_IFNAME": "eth0",
            "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join([os.environ.get("TESTBED_SRC") or os.path.join(ROOT, "python")] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])),
            "REACT_LIBRARY": library(), "REACT_TUNE": "1" if tune else "0",
        })
        if tune:
            env["REACT_FCT_LOG"] = fct_path
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
        "mode": "react" if tune else "baseline", "ranks": n, "flows": flows, "target": target if flows else None, "direction": direction,
        "size": size_bytes(size), "epochs": epochs, "warmup": warmup,
        "mean_s": rec["mean_s"], "p95_s": rec["p95_s"], "wrong": rec["wrong"], "times_s": rec["times_s"],
        "changes": rec.get("switches", -1), "wall_s": round(wall, 2), "cpu_util": round(busy / tot, 3) if tot else None,
        "rank_cpu_util": round((ct1.children_user + ct1.children_system - ct0.children_user - ct0.children_system) / wall / (os.cpu_count() or 1), 3),
        "cpu_cores": os.cpu_count(), "flows_measured": flow_res, "table": table,
    }
    key_log = fct_file(fct_path, rec["count"])
    if tune and key_log:
        res["fct_log"] = key_log
        res["swap"] = describe_swap(key_log, target if flows else None, size_bytes(size))
    if with_gloo:
        g = [r for r in recs if r["backend"] != "react"]
        if g:
            res["gloo_mean_s"], res["gloo_p95_s"] = g[0]["mean_s"], g[0]["p95_s"]
    return res


# ---------------------------------------------------------------- what REACT changed


def fct_file(base: str, count: int) -> Optional[str]:
    """The benchmarked key's FCT log: REACT_FCT_LOG=base writes base.OP.DTYPE.NUMEL.jsonl per key
    (older backends wrote every key into base itself)."""
    for p in (f"{base}.allreduce.float32.{count}.jsonl", base):
        if os.path.exists(p):
            return p
    return None


def _load_fct(path: str, nbytes: int) -> Dict[int, List[dict]]:
    """Flows of the benchmarked key per pattern version (the barrier's key is skipped)."""
    by_epoch_ver: Dict[int, Dict[int, dict]] = {}
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            if "flow" not in d or d["bytes"] < nbytes / 64:  # the barrier's key logs tiny flows
                continue
            by_epoch_ver.setdefault(d["version"], {})[d["flow"]] = d
    out = {}
    for ver, flows in by_epoch_ver.items():
        out[ver] = [flows[k] for k in sorted(flows)]
    return out


def describe_swap(path: str, target: Optional[int], nbytes: int) -> dict:
    vers = _load_fct(path, nbytes)
    if not vers:
        return {"versions": [], "text": "no FCT log of the benchmarked collective"}
    first, last = min(vers), max(vers)
    a, b = vers[first], vers[last]

    def into(fl, r):
        return sum(1 for x in fl if x["dst"] == r), sum(x["bytes"] for x in fl if x["dst"] == r)

    def roles(fl, r):
        # per chunk: how many flows rank r receives and sends
        out = {}
        for x in fl:
            c = out.setdefault(x["chunk"], [0, 0])
            if x["dst"] == r:
                c[0] += 1
            if x["src"] == r:
                c[1] += 1
        return out

    perms = {}
    if len(a) == len(b):
        for c in sorted({x["chunk"] for x in a}):
            m, ok = {}, True
            for x, y in zip(a, b):
                if x["chunk"] != c:
                    continue
                for u, v in ((x["src"], y["src"]), (x["dst"], y["dst"])):
                    if m.setdefault(u, v) != v:
                        ok = False
            if ok:
                perms[c] = "ranks swapped " + _cycles(m) if _cycles(m) != "unchanged" else "unchanged"
            else:
                moved = [f"s{x['step']} {x['src']}->{x['dst']} => {y['src']}->{y['dst']}" for x, y in zip(a, b)
                         if x["chunk"] == c and (x["src"], x["dst"]) != (y["src"], y["dst"])]
                perms[c] = "flows moved: " + ", ".join(moved)
    lines = [f"pattern versions run: {sorted(vers)} (first {first}, last {last})"]
    for c, p in perms.items():
        lines.append(f"  chunk {c}: {p}")
    res = {"versions": sorted(vers), "permutations": {str(c): p for c, p in perms.items()}}
    if target is not None:
        fa, fb = into(a, target), into(b, target)
        lines.append(f"  congested rank {target}: receives {fa[0]} flows ({fa[1] / 2**20:.1f} MiB) per epoch in v{first}, "
                     f"{fb[0]} flows ({fb[1] / 2**20:.1f} MiB) in v{last}")
        ra, rb = roles(a, target), roles(b, target)
        for c in sorted(ra):
            lines.append(f"    chunk {c}: in/out flows {ra[c][0]}/{ra[c][1]} -> {rb.get(c, [0, 0])[0]}/{rb.get(c, [0, 0])[1]}")
        res.update({"target": target, "flows_into_target_before": fa[0], "flows_into_target_after": fb[0],
                    "bytes_into_target_before": fa[1], "bytes_into_target_after": fb[1]})
    res["edges_before"] = _edges(a)
    res["edges_after"] = _edges(b)
    res["text"] = "\n".join(lines)
    return res


def _cycles(m: Dict[int, int]) -> str:
    seen, cyc = set(), []
    for s in sorted(m):
        if s in seen or m[s] == s:
            seen.add(s)
            continue
        c, x = [], s
        while x not in seen and x in m:
            seen.add(x)
            c.append(x)
            x = m[x]
        if len(c) > 1:
            cyc.append("(" + " ".join(str(v) for v in c) + ")")
    return " ".join(cyc) if cyc else "unchanged"


def _edges(fl: List[dict]) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for x in fl:
        out.setdefault(f"chunk{x['chunk']}", []).append(f"s{x['step']}:{x['src']}->{x['dst']}")
    return out


# ---------------------------------------------------------------- commands


def _placement(args, tb: Testbed, flows: int, target: int, workdir: str, label: str = "") -> dict:
    """Baseline then REACT on the same placement; returns both and the ratios."""
    runs = {}
    modes = getattr(args, "modes", "baseline,react").split(",")
    for tune in (False, True):
        mode = "react" if tune else "baseline"
        if mode not in modes:
            continue
        where = f" ({getattr(args, 'direction', 'in')} rank {target})" if flows else ""
        log(f"{tb.nranks} ranks, p={flows}{where}, {mode}: {args.epochs} epochs of {args.size} at {tb.rate or 'unshaped'}")
        runs[mode] = run_bench(tb, tune, args.size, args.epochs, args.warmup, flows, target, workdir,
                               timeout=args.timeout, with_gloo=getattr(args, "with_gloo", False), label=label,
                               direction=getattr(args, "direction", "in"))
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
        if args.out:
            _dump(args.out, res)
    return 0


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
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--flows", type=int, default=1, help="p: external flows into the target rank")
    p.add_argument("--with-gloo", action="store_true", help="also time the inner Gloo allreduce")
    p.add_argument("--modes", default="baseline,react", help="which runs: baseline, react or both")
    p = sub.add_parser("table", help="the paper's Table 2")
    common(p, 100)
    p.add_argument("--ranks", default="4,8")
    p.add_argument("--p", default="0,1,2")
    p = sub.add_parser("demo", help="4 ranks, one congested rank")
    common(p, 0)
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
        return {"run": cmd_run, "table": cmd_table, "demo": cmd_demo, "calibrate": cmd_calibrate,
                "clean": cmd_clean, "check": cmd_check}[args.cmd](args)
    except KeyboardInterrupt:
        log("interrupted; cleaned up")
        return 130
    except RuntimeError as e:
        print(f"testbed: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
