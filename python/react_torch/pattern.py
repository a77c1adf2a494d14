"""Patterns as the Go core produced them (the msgpack form of pkg/wire), and
each rank's execution plan as libreact computed it (pkg/plan).

Python holds no copy of Go's logic: the flows, the messages, the element
ranges they carry and the order they run in all come from libreact.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Tuple

import msgpack
import numpy as np
from . import _lib

REDUCE, COPY = 1, 2  # a plan range's kind (pkg/plan)


@dataclasses.dataclass
class Pattern:
    """A checked pattern (backend._decode) as the executor needs it: what it
    is, and its msgpack form, from which libreact makes each rank's plan."""

    op: str
    algo: str
    ranks: int
    root: int
    nflows: int
    raw: bytes

    @classmethod
    def decode(cls, raw: bytes) -> "Pattern":
        m = msgpack.unpackb(raw, raw=False)
        return cls(op=m["op"], algo=m["algo"], ranks=int(m["ranks"]), root=int(m["root"]), nflows=int(m["flows"]["src"]["shape"][0]), raw=raw)


@dataclasses.dataclass(eq=False)
class Message:
    """Flows of one step between one pair of ranks, sent as one buffer: the
    working buffer's ranges end to end (pkg/plan.Message)."""

    step: int
    src: int
    dst: int
    tag: int  # the step modulo the plan's tag_steps
    flows: List[int]
    ranges: List[Tuple[int, int]] = dataclasses.field(default_factory=list)
    kinds: List[int] = dataclasses.field(default_factory=list)  # per range: REDUCE or COPY
    size: int = 0
    segs: List[Tuple[int, int]] = dataclasses.field(default_factory=list)
    # a send: the receives it waits for, and per dep whether it streams along it segment by segment
    deps: List[int] = dataclasses.field(default_factory=list)
    aligned: List[bool] = dataclasses.field(default_factory=list)
    # a receive: the receive before it on its elements (-1), the sends it is applied after,
    # whether it lands in place, else its offset in scratch
    after: int = -1
    war: List[int] = dataclasses.field(default_factory=list)
    direct: bool = False
    offset: int = 0
    at: int = 0  # a receive: where its flows start in the plan's flows and arrivals


@dataclasses.dataclass(eq=False)
class Plan:
    """One rank's plan of a pattern for an element count, element size and
    segment size, as libreact computed it (pkg/plan; react.plan/v1)."""

    sends: List[Message]  # in step order
    recvs: List[Message]
    need: int  # scratch elements
    peers: List[int]
    tag_steps: int
    max_segments: int
    per_peer: Dict[int, List[int]] = dataclasses.field(default_factory=dict)  # sends by peer, in step order
    by_peer: Dict[int, List[int]] = dataclasses.field(default_factory=dict)  # receives of elements by peer, in step order
    # per receive: the peers of the sends that stream along it (a segment
    # applied may let them go), of the sends that wait for it whole, and the
    # receives applied after it (Message.after): what an event can change
    rdeps_peers: List[List[int]] = dataclasses.field(default_factory=list)
    rdeps_full_peers: List[List[int]] = dataclasses.field(default_factory=list)
    next: List[List[int]] = dataclasses.field(default_factory=list)
    # per step: (sends, recvs), the CUDA path's batches
    steps: List[Tuple[List[Message], List[Message]]] = dataclasses.field(default_factory=list)
    # every flow this rank receives, receive by receive, and its arrival in
    # the last run (the executor writes them in place; libreact reads them
    # where they lie): a call makes no record of its own
    flows: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    arrivals: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.float64))
    where: Tuple[int, int] = (0, 0)  # the two arrays' addresses


def _pairs(x: List[int]) -> List[Tuple[int, int]]:
    return list(zip(x[0::2], x[1::2]))


def _message(d: dict) -> Message:
    m = Message(step=d["step"], src=d["src"], dst=d["dst"], tag=d["tag"], flows=d["flows"], ranges=_pairs(d["ranges"]),
                kinds=d["kinds"], size=d["size"], segs=_pairs(d["segs"]))
    if "deps" in d:
        m.deps, m.aligned = d["deps"], d["aligned"]
    else:
        m.after, m.war, m.direct, m.offset = d["after"], d["war"], d["direct"], d["offset"]
    return m


def plan(p: Pattern, rank: int, numel: int, itemsize: int, segment_bytes: int) -> Plan:
    d = msgpack.unpackb(_lib.pattern_plan(p.raw, rank, numel, itemsize, segment_bytes), raw=False)
    pl = Plan(sends=[_message(m) for m in d["sends"]], recvs=[_message(m) for m in d["recvs"]], need=d["need"], peers=d["peers"],
              tag_steps=d["tag_steps"], max_segments=d["max_segments"])
    pl.steps = [([], []) for _ in range(max([m.step for m in pl.sends + pl.recvs], default=0))]
    for i, m in enumerate(pl.sends):
        pl.per_peer.setdefault(m.dst, []).append(i)
        pl.steps[m.step - 1][0].append(m)
    at = 0
    for j, m in enumerate(pl.recvs):
        pl.steps[m.step - 1][1].append(m)
        if m.size:
            pl.by_peer.setdefault(m.src, []).append(j)
        m.at, at = at, at + len(m.flows)
    nr = len(pl.recvs)
    pl.rdeps_peers, pl.rdeps_full_peers, pl.next = [[] for _ in range(nr)], [[] for _ in range(nr)], [[] for _ in range(nr)]
    for m in pl.sends:
        for j, ok in zip(m.deps, m.aligned):
            into = pl.rdeps_peers[j] if ok else pl.rdeps_full_peers[j]
            if m.dst not in into:
                into.append(m.dst)
    for j, m in enumerate(pl.recvs):
        if m.after >= 0:
            pl.next[m.after].append(j)
    pl.flows = np.array([f for m in pl.recvs for f in m.flows], dtype=np.int64)
    pl.arrivals = np.full(at, 1e-9)  # a receive of no elements arrives at once
    pl.where = (pl.flows.ctypes.data, pl.arrivals.ctypes.data)
    return pl
