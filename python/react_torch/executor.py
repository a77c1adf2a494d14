"""The pattern executor (the paper's RCollective): runs one collective as its
pattern's point-to-point flows on an inner process group, and times every
flow this rank receives.

Per step a rank posts all its sends and receives at once (one message per
(step, src, dst): the flows of a message are sent as one buffer, tagged with
the first flow's index, in flow order on both sides), then applies what it
received. A flow's completion time is stamped by a callback on its
receive's future, from the moment the rank posted the step: it includes
waiting for a late sender, as the paper's event pairs do.
"""

from __future__ import annotations

import time
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

    def _parts(self, p: Pattern, pl: Plan, flows: List[int], work: torch.Tensor) -> List[torch.Tensor]:
        if p.op == "allgather":
            out = []
            m = pl.block
            for f in flows:
                for b in p.blocks[p.blocks_start[f] : p.blocks_start[f + 1]]:
                    out.append(work[int(b) * m : (int(b) + 1) * m])
            return out
        return [work[int(pl.chunk_lo[p.chunk[f]]) : int(pl.chunk_hi[p.chunk[f]])] for f in flows]

    def run(self, p: Pattern, pl: Plan, work: torch.Tensor, reduce: str = SUM) -> Dict[int, float]:
        """Runs the pattern in place on the flat buffer work; returns the FCT
        (seconds) of every flow this rank receives."""
        fct: Dict[int, float] = {}
        for sends, recvs in pl.steps:
            if not sends and not recvs:
                continue
            t0 = time.perf_counter()
            works = []
            inbox = []
            stamps: List[Optional[float]] = [None] * len(recvs)
            for m in sends:
                parts = self._parts(p, pl, m.flows, work)
                n = sum(x.numel() for x in parts)
                if n == 0:
                    continue
                buf = parts[0] if len(parts) == 1 else torch.cat(parts)
                works.append(self.pg.send([buf], m.dst, m.tag))
            for k, m in enumerate(recvs):
                parts = self._parts(p, pl, m.flows, work)
                n = sum(x.numel() for x in parts)
                if n == 0:
                    inbox.append(None)
                    stamps[k] = t0
                    continue
                buf = torch.empty(n, dtype=work.dtype, device=work.device)
                w = self.pg.recv([buf], m.src, m.tag)
                w.get_future().add_done_callback(lambda _f, k=k: stamps.__setitem__(k, time.perf_counter()))
                works.append(w)
                inbox.append((buf, parts))
            for w in works:
                w.wait()
            for k, m in enumerate(recvs):
                done = stamps[k] if stamps[k] is not None else time.perf_counter()
                for f in m.flows:
                    fct[f] = max(done - t0, 1e-9)
                if inbox[k] is None:
                    continue
                buf, parts = inbox[k]
                off = 0
                kinds = p.kind[m.flows]
                for part, kind in zip(parts, [int(kinds[i]) for i in range(len(m.flows))] if p.op != "allgather" else [COPY] * len(parts)):
                    seg = buf[off : off + part.numel()]
                    off += part.numel()
                    if kind == REDUCE:
                        _combine(part, seg, reduce)
                    else:
                        part.copy_(seg)
        return fct
