"""Patterns as the Go core produced them (the msgpack form of pkg/wire), and
each rank's execution plan.

Python holds no copy of Go's logic: the flows come from libreact, and the
blocks an allgather flow carries and the owner of a reducescatter chunk come
from its layout call.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

import msgpack
import numpy as np

REDUCE, COPY = 1, 2


def _col(c: dict) -> np.ndarray:
    return np.frombuffer(c["data"], dtype=c["dtype"])


@dataclasses.dataclass
class Pattern:
    op: str
    algo: str
    ranks: int
    root: int
    chunk: np.ndarray
    step: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray
    fraction: np.ndarray
    raw: bytes
    # layout (from libreact): per flow the blocks it carries (allgather), per chunk its owner (reducescatter),
    # per flow the flows it waits for (preds[pred_start[f]:pred_start[f+1]], Go's dependency rule)
    blocks_start: Optional[np.ndarray] = None
    blocks: Optional[np.ndarray] = None
    owner: Optional[np.ndarray] = None
    pred_start: Optional[np.ndarray] = None
    preds: Optional[np.ndarray] = None
    exchange_row: int = 0  # values of one epoch in the control plane's exchange (pkg/wire/exchange.go)

    @property
    def nflows(self) -> int:
        return len(self.src)

    @property
    def nchunks(self) -> int:
        return int(self.chunk.max()) + 1 if self.nflows else 0

    @classmethod
    def decode(cls, raw: bytes, layout: Optional[bytes] = None) -> "Pattern":
        m = msgpack.unpackb(raw, raw=False)
        f = m["flows"]
        p = cls(op=m["op"], algo=m["algo"], ranks=int(m["ranks"]), root=int(m["root"]), chunk=_col(f["chunk"]), step=_col(f["step"]),
                src=_col(f["src"]), dst=_col(f["dst"]), kind=_col(f["kind"]), fraction=_col(f["fraction"]), raw=raw)
        if layout is not None:
            ly = msgpack.unpackb(layout, raw=False)
            p.blocks_start, p.blocks, p.owner = _col(ly["start"]), _col(ly["blocks"]), _col(ly["owner"])
            p.pred_start, p.preds = _col(ly["pred_start"]), _col(ly["preds"])
            p.exchange_row = int(ly["exchange_row"])
        return p


TAG_STEPS = 16


@dataclasses.dataclass
class Message:
    """Flows of one step between one pair of ranks, sent as one buffer."""

    step: int
    src: int
    dst: int
    # the step modulo TAG_STEPS: the same on both sides, and unique among the
    # messages of a pair that can be in flight at once (one a step, and both
    # sides post theirs in step order; Gloo matches a tag's in order)
    tag: int
    flows: List[int]


@dataclasses.dataclass
class Plan:
    """One rank's view of a pattern for a given element count."""

    steps: List[Tuple[List[Message], List[Message]]]  # per step: (sends, recvs)
    # the dataflow view: every message this rank sends and receives, in step
    # order, and per send the receives (indexes into recvs) it waits for
    sends: List[Message]
    recvs: List[Message]
    deps: List[List[int]]
    # per receive: this rank's sends and receives whose data it was built
    # from (its flows' ancestors under the preds): they are over before it
    # can arrive, so it may land in their elements
    before_s: List[set]
    before_r: List[set]
    # element range of each chunk in the working buffer (all ops but allgather)
    chunk_lo: np.ndarray
    chunk_hi: np.ndarray
    block: int  # elements per block (allgather, reducescatter)
    peers: List[int]  # the ranks this rank exchanges with, in any step


def chunk_bounds(p: Pattern, numel: int) -> Tuple[np.ndarray, np.ndarray]:
    """Element ranges of the chunks: contiguous, in chunk order, sized by share.

    For reducescatter the working buffer is the N blocks of the input and the
    chunks a rank owns tile its own block, in chunk order.
    """
    nc = p.nchunks
    share = np.zeros(nc)
    for c in range(nc):
        idx = np.nonzero(p.chunk == c)[0]
        share[c] = p.fraction[idx[0]] if len(idx) else 0.0
    lo, hi = np.zeros(nc, dtype=np.int64), np.zeros(nc, dtype=np.int64)
    if p.op == "reducescatter":
        block = numel // p.ranks
        for r in range(p.ranks):
            mine = [c for c in range(nc) if p.owner[c] == r]
            tot = share[mine].sum()
            acc = 0.0
            for c in mine:
                lo[c] = r * block + int(round(acc / tot * block))
                acc += share[c]
                hi[c] = r * block + int(round(acc / tot * block))
        return lo, hi
    cum = np.concatenate([[0.0], np.cumsum(share)])
    cum /= cum[-1]
    bounds = np.rint(cum * numel).astype(np.int64)
    return bounds[:-1], bounds[1:]


def plan(p: Pattern, rank: int, numel: int) -> Plan:
    groups: Dict[Tuple[int, int, int], Message] = {}
    order: List[Message] = []
    for i in range(p.nflows):
        s, a, b = int(p.step[i]), int(p.src[i]), int(p.dst[i])
        if a != rank and b != rank:
            continue
        key = (s, a, b)
        m = groups.get(key)
        if m is None:
            m = Message(step=s, src=a, dst=b, tag=s % TAG_STEPS, flows=[])
            groups[key] = m
            order.append(m)
        m.flows.append(i)
    nsteps = int(p.step.max()) if p.nflows else 0
    steps: List[Tuple[List[Message], List[Message]]] = [([], []) for _ in range(nsteps)]
    for m in order:
        (steps[m.step - 1][0] if m.src == rank else steps[m.step - 1][1]).append(m)
    sends = [m for st in steps for m in st[0]]
    recvs = [m for st in steps for m in st[1]]
    into = {f: j for j, m in enumerate(recvs) for f in m.flows}
    if p.preds is None:
        raise ValueError("react_torch: the pattern came without its layout's dependencies (pred_start, preds)")
    deps = [sorted({into[int(g)] for f in m.flows for g in p.preds[p.pred_start[f] : p.pred_start[f + 1]]}) for m in sends]
    out_of = {f: i for i, m in enumerate(sends) for f in m.flows}
    before_s: List[set] = []
    before_r: List[set] = []
    for m in recvs:
        seen, todo, bs, br = set(m.flows), list(m.flows), set(), set()
        while todo:
            f = todo.pop()
            for g in p.preds[p.pred_start[f] : p.pred_start[f + 1]]:
                g = int(g)
                if g not in seen:
                    seen.add(g)
                    todo.append(g)
                    if g in out_of:
                        bs.add(out_of[g])
                    if g in into:
                        br.add(into[g])
        before_s.append(bs)
        before_r.append(br)
    lo, hi = (np.zeros(0, dtype=np.int64),) * 2
    block = 0
    if p.op in ("allgather", "reducescatter"):
        block = numel // p.ranks
    if p.op != "allgather":
        lo, hi = chunk_bounds(p, numel)
    peers = sorted({m.dst if m.src == rank else m.src for m in order})
    return Plan(steps=steps, sends=sends, recvs=recvs, deps=deps, before_s=before_s, before_r=before_r, chunk_lo=lo, chunk_hi=hi, block=block, peers=peers)
