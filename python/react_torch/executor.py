"""The pattern executor (the paper's RCollective): runs one collective as its
pattern's point-to-point flows on an inner process group, and times every
flow this rank receives.

Per step a rank posts all its sends and receives at once (one message per
(step, src, dst): the flows of a message are sent as one buffer, tagged with
the first flow's index, in flow order on both sides), then applies what it
received. A flow's completion time is stamped when its receive completes,
measured from the moment the rank posted the step: it includes waiting for
a late sender, as the paper's event pairs do.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional

import torch
import torch.distributed as dist

from .pattern import COPY, REDUCE, Pattern, Plan

SUM, AVG, PRODUCT, MIN, MAX = "sum", "avg", "product", "min", "max"


def reduce_name(op) -> str:
    """Maps a torch ReduceOp to the executor's name; unsupported ops raise."""
    r = dist.ReduceOp
    table = {r.SUM: SUM, r.PRODUCT: PRODUCT, r.MIN: MIN, r.MAX: MAX}
    if hasattr(r, "AVG"):
        table[r.AVG] = AVG
    for k, v in table.items():
        if op == k:
            return v
    raise ValueError(f"react_torch: reduce op {op} is not supported (sum, avg, product, min, max are)")


def check_reduce(name: str, dtype: torch.dtype) -> None:
    if name == AVG and not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(f"react_torch: avg needs a floating point tensor, got {dtype}")
    if name in (MIN, MAX) and dtype.is_complex:
        raise TypeError(f"react_torch: {name} is not defined for {dtype}")
    if dtype == torch.bool and name not in (MIN, MAX, SUM, PRODUCT):
        raise TypeError(f"react_torch: {name} is not supported for bool")


def _combine(acc: torch.Tensor, x: torch.Tensor, name: str) -> None:
    if acc.dtype == torch.bool:
        if name in (SUM, MAX):
            acc.logical_or_(x)
        else:
            acc.logical_and_(x)
    elif name in (SUM, AVG):
        acc.add_(x)
    elif name == PRODUCT:
        acc.mul_(x)
    elif name == MIN:
        torch.minimum(acc, x, out=acc)
    else:
        torch.maximum(acc, x, out=acc)


class Executor:
    """Runs plans on one inner group. Not safe for concurrent calls."""

    def __init__(self, pg: dist.ProcessGroup, rank: int, size: int):
        self.pg, self.rank, self.size = pg, rank, size
        self._threads: Optional[ThreadPoolExecutor] = None

    def _pool(self) -> ThreadPoolExecutor:
        if self._threads is None:
            self._threads = ThreadPoolExecutor(max_workers=4, thread_name_prefix="react-recv")
        return self._threads

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=False)
            self._threads = None

    def _parts(self, p: Pattern, pl: Plan, flows: List[int], work: torch.Tensor) -> List[torch.Tensor]:
        if p.op == "allgather":
            out = []
            m = pl.block
            for f in flows:
                for b in p.blocks[p.blocks_start[f] : p.blocks_start[f + 1]]:
                    out.append(work[int(b) * m : (int(b) + 1) * m])
            return out
        return [work[int(pl.chunk_lo[p.chunk[f]]) : int(pl.chunk_hi[p.chunk[f]])] for f in flows]

    def _wait_stamped(self, w) -> float:
        w.wait()
        return time.perf_counter()

    def run(self, p: Pattern, pl: Plan, work: torch.Tensor, reduce: str = SUM) -> Dict[int, float]:
        """Runs the pattern in place on the flat buffer work; returns the FCT
        (seconds) of every flow this rank receives."""
        fct: Dict[int, float] = {}
        for sends, recvs in pl.steps:
            if not sends and not recvs:
                continue
            t0 = time.perf_counter()
            send_works = []
            recv_works = []  # (index into recvs, work)
            inbox: List[Optional[tuple]] = [None] * len(recvs)
            stamps: List[float] = [t0] * len(recvs)
            for m in sends:
                parts = self._parts(p, pl, m.flows, work)
                if sum(x.numel() for x in parts) == 0:
                    continue
                buf = parts[0] if len(parts) == 1 else torch.cat(parts)
                send_works.append(self.pg.send([buf], m.dst, m.tag))
            for k, m in enumerate(recvs):
                parts = self._parts(p, pl, m.flows, work)
                n = sum(x.numel() for x in parts)
                if n == 0:
                    continue
                buf = torch.empty(n, dtype=work.dtype, device=work.device)
                recv_works.append((k, self.pg.recv([buf], m.src, m.tag)))
                inbox[k] = (buf, parts)
            # Gloo's point-to-point works have no future and complete only in
            # wait(), so each receive beyond the first is waited on by a pool
            # thread (wait releases the GIL): every message gets its own stamp.
            later = [(k, self._pool().submit(self._wait_stamped, w)) for k, w in recv_works[1:]]
            if recv_works:
                k, w = recv_works[0]
                stamps[k] = self._wait_stamped(w)
            for k, fut in later:
                stamps[k] = fut.result()
            for w in send_works:
                w.wait()
            for k, m in enumerate(recvs):
                for f in m.flows:
                    fct[f] = max(stamps[k] - t0, 1e-9)
                if inbox[k] is None:
                    continue
                buf, parts = inbox[k]
                off = 0
                if p.op == "allgather":
                    kinds = [COPY] * len(parts)
                else:
                    kinds = [int(x) for x in p.kind[m.flows]]
                for part, kind in zip(parts, kinds):
                    seg = buf[off : off + part.numel()]
                    off += part.numel()
                    if kind == REDUCE:
                        _combine(part, seg, reduce)
                    else:
                        part.copy_(seg)
        return fct
