"""The pattern executor (the paper's RCollective): runs one collective as its
pattern's point-to-point flows on an inner process group, and times every
flow this rank receives.

Per step a rank posts all its receives, then all its sends (one message per
(step, src, dst): the flows of a message travel as one buffer, in flow order
on both sides), then applies what it received; step s+1 starts once all of
step s is done. A message larger than one segment travels as several, so
that reducing a segment that has arrived overlaps with receiving the next.
What a step needs (element ranges, segments, scratch offsets) is derived
once per plan (Plan.cache).

CPU (Gloo): a flow's completion time is stamped when its message's last
segment arrives, measured from the moment the rank posted the step; it
includes waiting for a late sender, as the paper's event pairs do. Gloo's
point-to-point works complete only in wait(), so in a step with several
received messages one pool thread per further message waits and stamps
(wait releases the GIL) while the collective's thread applies segments in a
fixed order (deterministic results); a lone message needs no other thread.

CUDA (NCCL): each step's sends and receives form one coalesced batch
(lazily created pair communicators deadlock on cyclic first steps); CUDA
events around the batch time the step, so every flow a rank receives in a
step gets the step's time. The events are read off the training thread
(the control thread calls the returned timer). Not run here: no GPU.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, List, Optional, Tuple, Union

import torch
import torch.distributed as dist

from .pattern import COPY, REDUCE, Message, Pattern, Plan

SUM, AVG, PRODUCT, MIN, MAX = "sum", "avg", "product", "min", "max"
BAND, BOR, BXOR = "band", "bor", "bxor"

SEGMENT_BYTES = 1 << 20  # a message is cut into segments of about this size
MAX_SEGMENTS = 64  # and at most this many (tags: flow * MAX_SEGMENTS + segment)

# A CPU run returns its FCTs; a CUDA run a callable that waits for the GPU
# and returns the FCTs and the collective's GPU time.
FCT = Union[Dict[int, float], Callable[[], Tuple[Dict[int, float], float]]]


def op_name(op) -> str:
    """A torch ReduceOp by name (SUM, BAND, PREMUL_SUM, ...), not
    <ReduceOp object at 0x...>."""
    for k, v in dist.ReduceOp.RedOpType.__members__.items():
        if op == v:
            return k
    return str(op)


def reduce_name(op, what: str = "collective") -> str:
    """Maps a torch ReduceOp to the executor's name; an unsupported op
    raises, naming the collective and the op."""
    r = dist.ReduceOp
    table = {r.SUM: SUM, r.PRODUCT: PRODUCT, r.MIN: MIN, r.MAX: MAX, r.BAND: BAND, r.BOR: BOR, r.BXOR: BXOR}
    if hasattr(r, "AVG"):
        table[r.AVG] = AVG
    for k, v in table.items():
        if op == k:
            return v
    raise ValueError(f"react_torch: {what}: reduce op {op_name(op)} is not supported (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR are)")


def check_reduce(name: str, dtype: torch.dtype, what: str = "collective") -> None:
    if name == AVG and not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(f"react_torch: {what}: reduce op AVG needs a floating point tensor, got {dtype}")
    if name in (MIN, MAX) and dtype.is_complex:
        raise TypeError(f"react_torch: {what}: reduce op {name.upper()} is not defined for {dtype}")
    if name in (BAND, BOR, BXOR) and (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(f"react_torch: {what}: reduce op {name.upper()} needs an integer or bool tensor, got {dtype}")


class PeerError(RuntimeError):
    """A point-to-point transfer of a pattern failed: names the react op,
    the step, the peer and what the inner backend said."""

    def __init__(self, what: str, step: int, direction: str, peer: str, cause: BaseException):
        super().__init__(f"react_torch: {what}, step {step}: {direction} rank {peer} failed: {cause}")
        self.peer = peer


def _combine(acc: torch.Tensor, x: torch.Tensor, name: str) -> None:
    if name == BAND:
        acc.bitwise_and_(x)
    elif name == BOR:
        acc.bitwise_or_(x)
    elif name == BXOR:
        acc.bitwise_xor_(x)
    elif acc.dtype == torch.bool:
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


def _segments(n: int, itemsize: int, seg_bytes: int = SEGMENT_BYTES) -> List[Tuple[int, int]]:
    """Cuts n elements into contiguous segments of about seg_bytes (0: one)."""
    k = max(1, min(MAX_SEGMENTS, (n * itemsize) // seg_bytes)) if seg_bytes > 0 else 1
    bounds = [n * i // k for i in range(k + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(k) if bounds[i + 1] > bounds[i]]


def _overlap(a: List[Tuple[int, int]], b: List[Tuple[int, int]]) -> bool:
    """Whether any element range in a meets any in b."""
    ra = sorted(r for r in a if r[1] > r[0])
    rb = sorted(r for r in b if r[1] > r[0])
    i = j = 0
    while i < len(ra) and j < len(rb):
        if ra[i][0] < rb[j][1] and rb[j][0] < ra[i][1]:
            return True
        if ra[i][1] <= rb[j][1]:
            i += 1
        else:
            j += 1
    return False


class _Msg:
    """One message of a compiled step: the element ranges of the working
    buffer its flows carry (in flow order on both sides), how a received one
    is applied, its segments, and where it lives in the step's scratch."""

    __slots__ = ("msg", "ranges", "kinds", "n", "segs", "direct", "off", "tag")

    def __init__(self, msg: Message, ranges: List[Tuple[int, int]], kinds: Optional[List[int]], seg_bytes: int, item: int):
        self.msg, self.ranges, self.kinds = msg, ranges, kinds
        self.n = sum(b - a for a, b in ranges)
        self.segs = _segments(self.n, item, seg_bytes)
        self.direct, self.off, self.tag = False, 0, msg.tag * MAX_SEGMENTS


class _Step:
    __slots__ = ("sends", "recvs", "need", "early")

    def __init__(self, sends: List[_Msg], recvs: List[_Msg], need: int, early: bool):
        self.sends, self.recvs, self.need, self.early = sends, recvs, need, early


class _Recv:
    """One message being received: its buffer, its segments' works, and
    where each segment's elements go."""

    __slots__ = ("msg", "buf", "parts", "kinds", "segs", "works", "done", "stamp", "what", "peer")

    def __init__(self, msg: Message, buf: torch.Tensor, parts: List[torch.Tensor], kinds: List[int], segs: List[Tuple[int, int]],
                 what: str = "collective", peer: str = ""):
        self.msg, self.buf, self.parts, self.kinds, self.segs = msg, buf, parts, kinds, segs
        self.works: list = []
        self.done: List[threading.Event] = []  # set by wait_all, for a message another thread waits for
        self.stamp = 0.0
        self.what, self.peer = what, peer or str(msg.src)

    def _wait(self, w) -> None:
        try:
            w.wait()
        except Exception as e:
            raise PeerError(self.what, self.msg.step, "receiving from", self.peer, e) from e

    def watched(self) -> "_Recv":
        """Readies the events wait_all sets, before another thread runs it."""
        self.done = [threading.Event() for _ in self.segs]
        return self

    def wait_all(self) -> None:
        for w, ev in zip(self.works, self.done):
            self._wait(w)
            ev.set()
        self.stamp = time.perf_counter()

    def wait_all_applying(self, reduce: Optional[str]) -> None:
        """wait_all on the calling thread, applying each segment as it
        arrives when reduce is given."""
        for i, w in enumerate(self.works):
            self._wait(w)
            if reduce is not None:
                self.apply(i, reduce)
        self.stamp = time.perf_counter()

    def apply(self, i: int, reduce: str) -> None:
        """Applies segment i's elements to the parts it covers."""
        lo, hi = self.segs[i]
        if self.buf is None:  # received in place
            return
        off = 0
        for part, kind in zip(self.parts, self.kinds):
            n = part.numel()
            a, b = max(lo, off), min(hi, off + n)
            if a < b:
                dst, src = part[a - off : b - off], self.buf[a:b]
                if kind == REDUCE:
                    _combine(dst, src, reduce)
                else:
                    dst.copy_(src)
            off += n
            if off >= hi:
                break


class Executor:
    """Runs plans on one inner group. Not safe for concurrent calls."""

    def __init__(self, pg: dist.ProcessGroup, rank: int, size: int, segment_bytes: int = SEGMENT_BYTES,
                 global_ranks: Optional[List[int]] = None):
        self.pg, self.rank, self.size = pg, rank, size
        self.segment_bytes = segment_bytes
        self.global_ranks = global_ranks
        self._threads: Optional[ThreadPoolExecutor] = None
        self._arena: Dict[Tuple[torch.dtype, torch.device], torch.Tensor] = {}

    def _pool(self) -> ThreadPoolExecutor:
        if self._threads is None:
            self._threads = ThreadPoolExecutor(max_workers=8, thread_name_prefix="react-recv")
        return self._threads

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=False)
            self._threads = None
        self._arena.clear()

    def _scratch(self, n: int, like: torch.Tensor) -> torch.Tensor:
        """A step's receive buffers, carved from one reused tensor: a fresh
        allocation per step costs page faults on every call."""
        key = (like.dtype, like.device)
        a = self._arena.get(key)
        if a is None or a.numel() < n:
            a = torch.empty(max(n, 1), dtype=like.dtype, device=like.device)
            self._arena[key] = a
        return a

    def _ranges(self, p: Pattern, pl: Plan, flows: List[int]) -> List[Tuple[int, int]]:
        """The element ranges of the working buffer a message's flows carry."""
        if p.op == "allgather":
            m = pl.block
            return [(int(b) * m, (int(b) + 1) * m) for f in flows for b in p.blocks[p.blocks_start[f] : p.blocks_start[f + 1]]]
        return [(int(pl.chunk_lo[p.chunk[f]]), int(pl.chunk_hi[p.chunk[f]])) for f in flows]

    def _parts(self, p: Pattern, pl: Plan, flows: List[int], work: torch.Tensor) -> List[torch.Tensor]:
        return [work[a:b] for a, b in self._ranges(p, pl, flows)]

    def peer(self, r: int) -> str:
        """A peer as errors name it: its group rank, and its global rank
        when that differs."""
        g = self.global_ranks[r] if self.global_ranks and r < len(self.global_ranks) else r
        return str(r) if g == r else f"{r} (global rank {g})"

    def _kinds(self, p: Pattern, m: Message, nparts: int) -> List[int]:
        if p.op == "allgather":
            return [COPY] * nparts
        return [int(x) for x in p.kind[m.flows]]

    def run(self, p: Pattern, pl: Plan, work: torch.Tensor, reduce: str = SUM) -> FCT:
        """Runs the pattern in place on the flat buffer work; returns the FCT
        (seconds) of every flow this rank receives, or on CUDA a callable
        that returns them and the collective's GPU time once the GPU is done."""
        if work.device.type == "cuda":
            return self._run_cuda(p, pl, work, reduce)
        fct: Dict[int, float] = {}
        what = f"{p.op} of {work.numel()} {str(work.dtype).replace('torch.', '')} ({p.algo} pattern)"
        for st in self._compile(p, pl, work.element_size()):
            self._step(st, work, reduce, fct, what)
        return fct

    def _compile(self, p: Pattern, pl: Plan, item: int) -> List[_Step]:
        """The plan's steps as element ranges, segments and scratch offsets,
        derived once per plan: a call then only slices and posts."""
        key = ("cpu", self.segment_bytes, item)
        steps = pl.cache.get(key)
        if steps is not None:
            return steps
        steps = []
        for sends, recvs in pl.steps:
            if not sends and not recvs:
                continue
            outs = [_Msg(m, self._ranges(p, pl, m.flows), None, self.segment_bytes, item) for m in sends]
            ins = []
            for m in recvs:
                rs = self._ranges(p, pl, m.flows)
                ins.append(_Msg(m, rs, self._kinds(p, m, len(rs)), self.segment_bytes, item))
            # A rank that receives into what it sends in the same step (an
            # exchange) must not touch it before its sends are done.
            early = not _overlap([r for o in outs for r in o.ranges], [r for i in ins for r in i.ranges])
            need = 0
            for i in ins:
                i.direct = early and len(i.ranges) == 1 and i.kinds[0] == COPY  # straight into place
                if not i.direct:
                    i.off, need = need, need + i.n
            for o in outs:
                if len(o.ranges) > 1:  # gathered into the scratch, not a fresh tensor per call
                    o.off, need = need, need + o.n
            steps.append(_Step(outs, ins, need, early))
        pl.cache[key] = steps
        return steps

    def _step(self, st: _Step, work: torch.Tensor, reduce: str, fct: Dict[int, float], what: str) -> None:
        t0 = time.perf_counter()
        pg = self.pg
        scratch = self._scratch(st.need, work) if st.need else None
        # Receives first: Gloo moves a message only once the receiver's
        # notice has reached the sender, so that notice must not wait behind
        # this rank's own sends (whose data the caller's thread may write).
        inbox: List[_Recv] = []
        for i in st.recvs:
            if i.n == 0:
                for f in i.msg.flows:
                    fct[f] = 1e-9
                continue
            if i.direct:
                a, b = i.ranges[0]
                buf = work[a:b]
            else:
                buf = scratch[i.off : i.off + i.n]
            parts = [work[a:b] for a, b in i.ranges]
            r = _Recv(i.msg, None if i.direct else buf, parts, i.kinds, i.segs, what, self.peer(i.msg.src))
            src = i.msg.src
            r.works = [pg.recv([buf if len(i.segs) == 1 else buf[a:b]], src, i.tag + k) for k, (a, b) in enumerate(i.segs)]
            inbox.append(r)
        send_works = []
        for o in st.sends:
            if o.n == 0:
                continue
            if len(o.ranges) == 1:
                a, b = o.ranges[0]
                buf = work[a:b]
            else:
                buf = torch.cat([work[a:b] for a, b in o.ranges], out=scratch[o.off : o.off + o.n])
            dst = o.msg.dst
            for k, (a, b) in enumerate(o.segs):
                send_works.append((o.msg, pg.send([buf if len(o.segs) == 1 else buf[a:b]], dst, o.tag + k)))
        early = st.early
        if len(inbox) == 1:
            inbox[0].wait_all_applying(reduce if early else None)
        elif inbox:
            # one pool thread per further message waits and stamps; this
            # thread applies segments in a fixed order (deterministic)
            waiters = [self._pool().submit(r.watched().wait_all) for r in inbox[1:]]
            inbox[0].wait_all_applying(reduce if early else None)
            for r, fut in zip(inbox[1:], waiters):
                if early:
                    for k, ev in enumerate(r.done):
                        while not ev.wait(timeout=0.5):
                            if fut.done():
                                fut.result()  # a failed wait (dead peer) raises here
                        r.apply(k, reduce)
                fut.result()
        for m, w in send_works:
            try:
                w.wait()
            except Exception as e:
                raise PeerError(what, m.step, "sending to", self.peer(m.dst), e) from e
        for r in inbox:
            if not early:
                for k in range(len(r.segs)):
                    r.apply(k, reduce)
            for f in r.msg.flows:
                fct[f] = max(r.stamp - t0, 1e-9)

    def _run_cuda(self, p: Pattern, pl: Plan, work: torch.Tensor, reduce: str) -> FCT:
        dev = work.device
        stream = torch.cuda.current_stream(dev)
        timed: List[Tuple[List[int], torch.cuda.Event, torch.cuda.Event]] = []
        for sends, recvs in pl.steps:
            if not sends and not recvs:
                continue
            start = torch.cuda.Event(enable_timing=True)
            start.record(stream)
            inbox = []
            self.pg._start_coalescing(dev)
            for m in sends:
                parts = self._parts(p, pl, m.flows, work)
                if sum(x.numel() for x in parts) == 0:
                    continue
                buf = parts[0] if len(parts) == 1 else torch.cat(parts)
                inbox.append((None, buf, None))  # alive until the batch has run
                self.pg.send([buf], m.dst, 0)
            for m in recvs:
                parts = self._parts(p, pl, m.flows, work)
                n = sum(x.numel() for x in parts)
                if n == 0:
                    continue
                buf = torch.empty(n, dtype=work.dtype, device=dev)
                self.pg.recv([buf], m.src, 0)
                inbox.append((m, buf, parts))
            self.pg._end_coalescing(dev).wait()  # orders the current stream after the batch
            end = torch.cuda.Event(enable_timing=True)
            end.record(stream)
            flows = [f for m in recvs for f in m.flows]
            timed.append((flows, start, end))
            for m, buf, parts in inbox:
                if m is None:
                    continue
                r = _Recv(m, buf, parts, self._kinds(p, m, len(parts)), [(0, buf.numel())])
                r.apply(0, reduce)

        def read() -> Tuple[Dict[int, float], float]:
            out: Dict[int, float] = {}
            for flows, start, end in timed:
                end.synchronize()
                dt = max(start.elapsed_time(end) / 1e3, 1e-9)
                for f in flows:
                    out[f] = dt
            whole = timed[0][1].elapsed_time(timed[-1][2]) / 1e3 if timed else 0.0
            return out, whole

        return read
