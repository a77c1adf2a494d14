"""Collective benchmark in nccl-tests' columns, react against the inner
backend's own collective, measured in the same run.

    torchrun --nproc_per_node=4 -m react_torch.bench --op allreduce -b 1M -e 64M --epochs 20

Inputs are small integers held in floats, so results are exact and #wrong
counts elements that differ from the expected value. The backends' epochs
alternate, so both see the same machine load; ratio is the inner backend's
mean time over this row's, and switches counts react's pattern changes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import react_torch  # noqa: F401


def _size(s: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper()
    return int(float(s[:-1]) * mult[s[-1]]) if s and s[-1] in mult else int(s)


def busbw_factor(op: str, n: int) -> float:
    return {"allreduce": 2 * (n - 1) / n, "allgather": (n - 1) / n, "reducescatter": (n - 1) / n}.get(op, 1.0)


def run_op(op: str, x: torch.Tensor, group, n: int, root: int):
    if op == "allreduce":
        dist.all_reduce(x, group=group)
        return x
    if op == "allgather":
        out = torch.empty(x.numel() * n, dtype=x.dtype)
        dist.all_gather_into_tensor(out, x, group=group)
        return out
    if op == "reducescatter":
        out = torch.empty(x.numel() // n, dtype=x.dtype)
        dist.reduce_scatter_tensor(out, x, group=group)
        return out
    if op == "broadcast":
        dist.broadcast(x, src=root, group=group)
        return x
    dist.reduce(x, dst=root, group=group)
    return x


def expected(op: str, rank: int, n: int, count: int, root: int) -> torch.Tensor:
    if op in ("allreduce",):
        return torch.full((count,), float(n * (n + 1) // 2))
    if op == "reduce":
        return torch.full((count,), float(n * (n + 1) // 2)) if rank == root else None
    if op == "allgather":
        return torch.cat([torch.full((count,), float(r + 1)) for r in range(n)])
    if op == "reducescatter":
        return torch.full((count // n,), float(n * (n + 1) // 2))
    return torch.full((count,), float(root + 1))


def _one(op, group, rank, n, count, root):
    x = torch.full((count,), float(rank + 1))
    dist.barrier(group=group) if group is not None else dist.barrier()
    t0 = time.perf_counter()
    y = run_op(op, x, group, n, root)
    dt = time.perf_counter() - t0
    want = expected(op, rank, n, count, root)
    return dt, (int((y != want).sum()) if want is not None else 0)


def measure(op, groups, rank, n, count, root, epochs, warmup):
    """Runs the backends' epochs interleaved (alternating which goes first),
    so that both see the same machine load; returns per backend the mean and
    p95 of the slowest rank's time and the wrong element count."""
    times = [[] for _ in groups]
    wrong = [0 for _ in groups]
    for i in range(warmup + epochs):
        order = range(len(groups)) if i % 2 == 0 else reversed(range(len(groups)))
        for g in order:
            dt, bad = _one(op, groups[g], rank, n, count, root)
            if i >= warmup:
                times[g].append(dt)
                wrong[g] += bad
    out = []
    for g, group in enumerate(groups):
        t = torch.tensor(times[g], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)  # the slowest rank's time per epoch
        w = torch.tensor([wrong[g]])
        dist.all_reduce(w, group=group)
        ts = sorted(t.tolist())
        out.append((statistics.mean(ts), ts[min(len(ts) - 1, int(0.95 * len(ts)))], int(w), t.tolist()))
    return out


def _switches(op, count, n, root) -> int:
    """Pattern switches the react group made for this benchmark's key."""
    from . import backend_of

    keys = getattr(backend_of(), "_keys", {})
    numel = count * n if op == "allgather" else count
    st = keys.get((op, "float32", numel, root))
    return st.switches if st is not None else 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m react_torch.bench")
    ap.add_argument("--op", default="allreduce", choices=["allreduce", "allgather", "reducescatter", "broadcast", "reduce"])
    ap.add_argument("-b", "--min-bytes", default="1M")
    ap.add_argument("-e", "--max-bytes", default="64M")
    ap.add_argument("-f", "--step-factor", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--root", type=int, default=0)
    ap.add_argument("--no-baseline", action="store_true", help="skip the inner backend's own collective")
    ap.add_argument("--json", default="", help="also write every row (with per-epoch times) to this file (rank 0)")
    args = ap.parse_args(argv)
    dist.init_process_group("react", timeout=timedelta(seconds=300))
    rank, n = dist.get_rank(), dist.get_world_size()
    inner = dist.new_group(backend="gloo")
    root = args.root if args.op in ("broadcast", "reduce") else -1
    if rank == 0:
        print(f"# react_torch.bench: {args.op}, {n} ranks, {args.epochs} epochs after {args.warmup} warm-up, float32; time in us (slowest rank)")
        print(f"# {'size':>12} {'count':>10} {'type':>6} {'redop':>6} {'root':>4} | {'backend':>7} {'time':>10} {'p95':>10} {'algbw':>7} {'busbw':>7} {'#wrong':>6} | {'ratio':>5} {'switches':>8}")
    size = _size(args.min_bytes)
    results = []
    while size <= _size(args.max_bytes):
        count = max(size // 4 // n * n, n)
        nbytes = count * 4 * (n if args.op == "allgather" else 1)
        names = ["react"] + ([] if args.no_baseline else ["gloo"])
        groups = [None] + ([] if args.no_baseline else [inner])
        rows = list(zip(names, measure(args.op, groups, rank, n, count, root, args.epochs, args.warmup)))
        switches = _switches(args.op, count, n, root)
        if rank == 0:
            base = rows[-1][1][0]
            for name, (mean, p95, wrong, ts) in rows:
                algbw = nbytes / mean / 1e9
                print(f"  {nbytes:>12} {count:>10} {'float':>6} {'sum' if args.op in ('allreduce', 'reduce', 'reducescatter') else 'none':>6} {root:>4} | {name:>7} "
                      f"{mean * 1e6:>10.1f} {p95 * 1e6:>10.1f} {algbw:>7.2f} {algbw * busbw_factor(args.op, n):>7.2f} {wrong:>6} | "
                      f"{f'{base / mean:.2f}' if len(rows) > 1 else '-':>5}"
                      f" {switches if name == 'react' else '':>8}")
                results.append({"op": args.op, "ranks": n, "bytes": nbytes, "count": count, "backend": name, "mean_s": mean, "p95_s": p95,
                                "algbw_GBps": algbw, "busbw_GBps": algbw * busbw_factor(args.op, n), "wrong": wrong, "times_s": ts,
                                "switches": switches if name == "react" else 0})
            sys.stdout.flush()
        size *= args.step_factor
    if rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
