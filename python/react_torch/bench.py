"""Collective benchmark in nccl-tests' columns: react against a baseline (the
inner backend's own collective, or react with the tuner off) measured in the
same run.

    torchrun --nproc_per_node=4 -m react_torch.bench --op allreduce -b 1M -e 64M -n 20

Sizes follow nccl-tests: -b/-e and the size column are the whole buffer in
bytes (allgather: the output, reducescatter: the input), count is the
element count of the call (allgather: what each rank sends, reducescatter:
what each rank receives; a multiple of 16 bytes, as nccl-tests rounds it).

Per size, each backend runs -w warm-up iterations, then -n timed iterations,
each timed alone: time is the mean over iterations of the slowest rank's
time, p95 its nearest-rank 95th percentile. The backends run in alternating
blocks of --block iterations (which goes first alternates too), so both see
the same machine load. react/BASE is react's mean time over the baseline's:
above 1 react is slower. Inputs are small integers held in floats, so
results are exact and #wrong counts elements that differ from the expected
value (all timed iterations, all ranks); switches counts pattern changes.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from datetime import timedelta
from typing import List, Optional, Tuple

import torch
import torch.distributed as dist

import react_torch
from react_torch.ops import OPS, REDUCING



def _size(s: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper()
    return int(float(s[:-1]) * mult[s[-1]]) if s and s[-1] in mult else int(s)


def busbw_factor(op: str, n: int) -> float:
    return {"allreduce": 2 * (n - 1) / n, "allgather": (n - 1) / n, "reducescatter": (n - 1) / n}.get(op, 1.0)


def shape(op: str, size: int, n: int, item: int = 4) -> Tuple[int, int, int, int]:
    """(size in bytes, count, input elements, output elements) of one call
    for a requested size, as nccl-tests' GetCollByteCount computes them."""
    count = size // item
    if op in ("allgather", "reducescatter"):
        base = (count // n) & ~(16 // item - 1)
        whole = base * n
        return whole * item, base, *((base, whole) if op == "allgather" else (whole, base))
    return count * item, count, count, count


def percentile(xs: List[float], p: int) -> float:
    """Nearest-rank percentile (nccl-tests' -I report uses the same)."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, (len(s) * p + 99) // 100 - 1))]


def num(v: float, width: int) -> str:
    """v in at most width characters, three significant digits below 1 so
    that a small bandwidth never reads 0.00."""
    if v == 0 or not math.isfinite(v):
        return f"{v:>{width}.0f}" if v == 0 else f"{v:>{width}}"
    if abs(v) < 1:
        s = f"{v:.{2 - math.floor(math.log10(abs(v)))}f}"
        return f"{s:>{width}}" if len(s) <= width else f"{v:>{width}.1e}"
    for d in (2, 1, 0):
        s = f"{v:>{width}.{d}f}"
        if len(s) <= width:
            return s
    return f"{v:>{width}.1e}"


class Call:
    """One size's buffers and its expected result, allocated once."""

    def __init__(self, op: str, rank: int, n: int, size: int, root: int):
        self.op, self.rank, self.n, self.root = op, rank, n, root
        self.nbytes, self.count, nin, nout = shape(op, size, n)
        self.x = torch.full((nin,), float(rank + 1))
        self.out = self.x if op in ("allreduce", "broadcast", "reduce") else torch.empty(nout)
        total = float(n * (n + 1) // 2)
        if op == "allgather":
            self.want = torch.arange(1, n + 1, dtype=torch.float32).repeat_interleave(self.count)
        elif op == "broadcast":
            self.want = torch.full((nout,), float(root + 1))
        elif op == "reduce" and rank != root:
            self.want = None
        else:
            self.want = torch.full((nout,), total)

    @property
    def numel(self) -> int:
        """The element count react keys the collective by."""
        return max(self.x.numel(), self.out.numel())

    def run(self, group) -> Tuple[float, int]:
        """One timed call: (seconds, wrong elements)."""
        if self.op != "allgather":
            self.x.fill_(float(self.rank + 1))  # in-place ops overwrote it
        t0 = time.perf_counter()
        if self.op == "allreduce":
            dist.all_reduce(self.x, group=group)
        elif self.op == "allgather":
            dist.all_gather_into_tensor(self.out, self.x, group=group)
        elif self.op == "reducescatter":
            dist.reduce_scatter_tensor(self.out, self.x, group=group)
        elif self.op == "broadcast":
            dist.broadcast(self.x, src=self.root, group=group)
        else:
            dist.reduce(self.x, dst=self.root, group=group)
        dt = time.perf_counter() - t0
        if self.want is None or torch.equal(self.out, self.want):
            return dt, 0
        return dt, int((self.out != self.want).sum())


def measure(call: Call, groups: list, sync, iters: int, warmup: int, block: int) -> List[Tuple[List[float], int]]:
    """Per group, the slowest rank's time of each timed iteration and the
    wrong elements summed over iterations and ranks. The groups run in
    alternating blocks of iterations, the order flipped each round; sync (a
    Gloo group of the same ranks) lines the ranks up before each block and
    carries the bookkeeping, so none of it runs on a measured group."""
    times: List[List[float]] = [[] for _ in groups]
    wrong = [0] * len(groups)
    for g in groups:
        dist.barrier(group=sync)
        for _ in range(warmup):
            call.run(g)
    rnd = 0
    while any(len(t) < iters for t in times):
        order = list(range(len(groups)))
        for g in order if rnd % 2 == 0 else order[::-1]:
            k = min(block, iters - len(times[g]))
            if k <= 0:
                continue
            dist.barrier(group=sync)
            for _ in range(k):
                dt, bad = call.run(groups[g])
                times[g].append(dt)
                wrong[g] += bad
        rnd += 1
    out = []
    for g in range(len(groups)):
        t = torch.tensor(times[g], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=sync)
        w = torch.tensor([wrong[g]])
        dist.all_reduce(w, group=sync)
        out.append((t.tolist(), int(w)))
    return out


def _switches(group, call: Call) -> Optional[int]:
    """Pattern switches a react group made for this benchmark's key (None:
    not a react group)."""
    b = react_torch.backend_of(group)
    if b is None:
        return None
    if b._hier is not None:  # its keys are shards of the calls: this op's, all sizes so far
        return sum(k["switches"] for k in b.stats() if k["op"] == call.op)
    return sum(k["switches"] for k in b.stats() if (k["op"], k["numel"], k["root"]) == (call.op, call.numel, call.root))


def _hosts(group) -> str:
    b = react_torch.backend_of(group)
    if b is None or b.layout is None:
        return "one rank a host (flat)" if b is not None else "not react"
    how = "hierarchical: one pattern over hosts on every rail" if b._hier is not None else "flat: one pattern over the ranks"
    return f"{b.layout.text}, {how} (REACT_HOSTS, REACT_HOST_ID)"


HEAD = ("size", "count", "type", "redop", "root", "backend", "time", "p95", "algbw", "busbw", "#wrong")
UNITS = ("(B)", "(elements)", "", "", "", "", "(us)", "(us)", "(GB/s)", "(GB/s)", "")
WIDTH = (12, 12, 6, 6, 5, 12, 9, 9, 8, 8, 6)


def _line(cols, ratio_w: int) -> str:
    head = " ".join(f"{c:>{w}}" for c, w in zip(cols[:5], WIDTH[:5]))
    body = " ".join(f"{c:>{w}}" for c, w in zip(cols[5:11], WIDTH[5:11]))
    return f"{head} | {body} | {cols[11]:>{ratio_w}} {cols[12]:>8}".rstrip()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m react_torch.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--op", default="allreduce", choices=OPS)
    ap.add_argument("-b", "--minbytes", "--min-bytes", dest="min_bytes", default="1M", help="smallest size (whole buffer, as nccl-tests)")
    ap.add_argument("-e", "--maxbytes", "--max-bytes", dest="max_bytes", default="64M", help="largest size")
    ap.add_argument("-f", "--stepfactor", "--step-factor", dest="step_factor", type=int, default=2)
    ap.add_argument("-n", "--iters", "--epochs", dest="iters", type=int, default=20, help="timed iterations per size and backend")
    ap.add_argument("-w", "--warmup_iters", "--warmup", dest="warmup", type=int, default=3, help="warm-up iterations per size and backend")
    ap.add_argument("--block", type=int, default=5, help="iterations one backend runs before the other takes over")
    ap.add_argument("--root", type=int, default=0)
    ap.add_argument("--against", default="gloo", choices=["gloo", "react-notune", "none"],
                    help="the baseline: the inner backend's own collective, react with the tuner off, or none")
    ap.add_argument("--no-baseline", action="store_true", help="same as --against none")
    ap.add_argument("--json", default="", help="also write every row (with per-iteration times) to this file (rank 0)")
    args = ap.parse_args(argv)
    against = "none" if args.no_baseline else args.against
    if args.iters < 1 or args.block < 1 or args.warmup < 0:
        ap.error("want -n >= 1, --block >= 1, -w >= 0")
    dist.init_process_group("react", timeout=timedelta(seconds=300))
    rank, n = dist.get_rank(), dist.get_world_size()
    sync = dist.new_group(backend="gloo")
    names, groups = ["react"], [None]
    if against == "gloo":
        names.append("gloo")
        groups.append(sync)
    elif against == "react-notune":
        react_torch.configure(tune=False)
        names.append("react-notune")
        groups.append(dist.new_group(backend="react"))
    root = args.root if args.op in ("broadcast", "reduce") else -1
    base = names[-1].replace("react-", "") if len(names) > 1 else ""
    ratio_col = f"react/{base}" if base else "ratio"
    rw = max(len(ratio_col), 5)
    if rank == 0:
        print(f"# react_torch.bench: {args.op}, {n} ranks, float32; per size and backend {args.warmup} warm-up and {args.iters} timed "
              f"iterations, the backends in alternating blocks of {args.block}")
        print(f"# hosts: {_hosts(None)}")
        print("# size: whole buffer (allgather: output, reducescatter: input); count: elements of the call "
              "(allgather: sent per rank, reducescatter: received per rank), as nccl-tests")
        print("# time: mean of the slowest rank's time per iteration; p95: its nearest-rank 95th percentile"
              + (f"; {ratio_col}: react's time over {names[-1]}'s (> 1: react is slower)" if base else ""))
        print("#" + _line(HEAD + (ratio_col, "switches"), rw)[1:])
        print("#" + _line(UNITS + ("(x)" if base else "", ""), rw)[1:])
    size = _size(args.min_bytes)
    results = []
    while size <= _size(args.max_bytes):
        call = Call(args.op, rank, n, size, root)
        rows = measure(call, groups, sync, args.iters, args.warmup, args.block)
        switches = [_switches(g, call) for g in groups]
        if rank == 0:
            mean0 = statistics.mean(rows[-1][0])
            redop = "sum" if args.op in REDUCING else "none"
            for name, (ts, wrong), sw in zip(names, rows, switches):
                mean, p95 = statistics.mean(ts), percentile(ts, 95)
                algbw = call.nbytes / mean / 1e9
                ratio = mean / mean0 if base and name == "react" else None
                cols = (call.nbytes, call.count, "float", redop, root, name, num(mean * 1e6, 9), num(p95 * 1e6, 9),
                        num(algbw, 8), num(algbw * busbw_factor(args.op, n), 8), wrong,
                        f"{ratio:.3f}" if ratio is not None else "", "" if sw is None else sw)
                print(_line(cols, rw))
                results.append({"op": args.op, "ranks": n, "bytes": call.nbytes, "count": call.count, "backend": name,
                                "iters": args.iters, "warmup": args.warmup, "mean_s": mean, "p95_s": p95,
                                "min_s": min(ts), "median_s": statistics.median(ts), "max_s": max(ts),
                                "algbw_GBps": algbw, "busbw_GBps": algbw * busbw_factor(args.op, n), "wrong": wrong, "times_s": ts,
                                "ratio": ratio, "switches": sw or 0})
            sys.stdout.flush()
        size *= args.step_factor
    control = {}
    for name, g in zip(names, groups):
        c = react_torch.control_stats(g)
        if not c:
            continue
        waited = torch.tensor([float(c["waits"]), c["wait_s"]], dtype=torch.float64)
        dist.all_reduce(waited, group=sync)
        control[name] = {**c, "waits_all_ranks": int(waited[0]), "wait_s_all_ranks": float(waited[1])}
        if rank == 0:
            print(f"# {name}: {c['exchanges']} control exchanges, {c['control_messages']} control messages; epochs that waited for "
                  f"the control plane: {int(waited[0])} ({float(waited[1]):.3f} s), all ranks")
    if rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"baseline": names[-1] if base else None, "results": results, "control": control}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
