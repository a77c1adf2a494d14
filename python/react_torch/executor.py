"""The pattern executor (the paper's RCollective): runs one collective as its
pattern's point-to-point flows on an inner process group, and times every
flow this rank receives.

Per step a rank posts all its sends and receives at once (one message per
(step, src, dst): the flows of a message travel as one buffer, in flow order
on both sides), then applies what it received. A message larger than one
segment travels as several, so that reducing a segment that has arrived
overlaps with receiving the next (Gloo's own ring does the same).

CPU (Gloo): a flow's completion time is stamped when its message's last
segment arrives, measured from the moment the rank posted the step; it
includes waiting for a late sender, as the paper's event pairs do. Gloo's
point-to-point works complete only in wait(), so one pool thread per
received message waits and stamps (wait releases the GIL) while the
training thread applies segments in a fixed order (deterministic results).

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

from .pattern import COPY, REDUCE, TAG_STEPS, Message, Pattern, Plan

SUM, AVG, PRODUCT, MIN, MAX = "sum", "avg", "product", "min", "max"
BAND, BOR, BXOR = "band", "bor", "bxor"

SEGMENT_BYTES = 1 << 20  # a message is cut into segments of about this size
MAX_SEGMENTS = 64  # and at most this many


def tag(salt: int, m: Message, segment: int) -> int:
    """A segment's Gloo tag: the call's salt (agree.Ledger: a hash of the
    call's signature, so a message of another call never matches), the
    message's step modulo TAG_STEPS, the segment. Below 2^30, where the
    call check's and the kill's tags are."""
    return (salt * TAG_STEPS + m.tag) * MAX_SEGMENTS + segment

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


def combine(acc: torch.Tensor, x: torch.Tensor, name: str) -> None:
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


def _overlap(a: List[torch.Tensor], b: List[torch.Tensor]) -> bool:
    """Whether any view in a shares elements with any view in b (all are
    contiguous views of one flat buffer)."""
    if not a or not b:
        return False
    ra = sorted((x.storage_offset(), x.storage_offset() + x.numel()) for x in a if x.numel())
    rb = sorted((x.storage_offset(), x.storage_offset() + x.numel()) for x in b if x.numel())
    i = j = 0
    while i < len(ra) and j < len(rb):
        if ra[i][0] < rb[j][1] and rb[j][0] < ra[i][1]:
            return True
        if ra[i][1] <= rb[j][1]:
            i += 1
        else:
            j += 1
    return False


class _Recv:
    """One message being received: its buffer, its segments' works, and
    where each segment's elements go."""

    __slots__ = ("msg", "buf", "parts", "kinds", "segs", "works", "done", "stamp", "what", "peer")

    def __init__(self, msg: Message, buf: torch.Tensor, parts: List[torch.Tensor], kinds: List[int], segs: List[Tuple[int, int]],
                 what: str = "collective", peer: str = ""):
        self.msg, self.buf, self.parts, self.kinds, self.segs = msg, buf, parts, kinds, segs
        self.works: list = []
        self.done = [threading.Event() for _ in segs]
        self.stamp = 0.0
        self.what, self.peer = what, peer or str(msg.src)

    def _wait(self, w) -> None:
        try:
            w.wait()
        except Exception as e:
            raise PeerError(self.what, self.msg.step, "receiving from", self.peer, e) from e

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
                    combine(dst, src, reduce)
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

    def _parts(self, p: Pattern, pl: Plan, flows: List[int], work: torch.Tensor) -> List[torch.Tensor]:
        if p.op == "allgather":
            out = []
            m = pl.block
            for f in flows:
                for b in p.blocks[p.blocks_start[f] : p.blocks_start[f + 1]]:
                    out.append(work[int(b) * m : (int(b) + 1) * m])
            return out
        return [work[int(pl.chunk_lo[p.chunk[f]]) : int(pl.chunk_hi[p.chunk[f]])] for f in flows]

    def peer(self, r: int) -> str:
        """A peer as errors name it: its group rank, and its global rank
        when that differs."""
        g = self.global_ranks[r] if self.global_ranks and r < len(self.global_ranks) else r
        return str(r) if g == r else f"{r} (global rank {g})"

    def _kinds(self, p: Pattern, m: Message, nparts: int) -> List[int]:
        if p.op == "allgather":
            return [COPY] * nparts
        return [int(x) for x in p.kind[m.flows]]

    def run(self, p: Pattern, pl: Plan, work: torch.Tensor, reduce: str = SUM, salt: int = 0) -> FCT:
        """Runs the pattern in place on the flat buffer work; returns the FCT
        (seconds) of every flow this rank receives, or on CUDA a callable
        that returns them and the collective's GPU time once the GPU is done.
        salt goes into every tag (CPU; NCCL has no tags)."""
        if work.device.type == "cuda":
            return self._run_cuda(p, pl, work, reduce)
        fct: Dict[int, float] = {}
        for sends, recvs in pl.steps:
            if sends or recvs:
                self._step(p, pl, work, reduce, sends, recvs, fct, salt)
        return fct

    def _step(self, p: Pattern, pl: Plan, work: torch.Tensor, reduce: str, sends: List[Message], recvs: List[Message], fct: Dict[int, float],
              salt: int) -> None:
        item = work.element_size()
        what = f"{p.op} of {work.numel()} {str(work.dtype).replace('torch.', '')} ({p.algo} pattern)"
        t0 = time.perf_counter()
        out = [self._parts(p, pl, m.flows, work) for m in sends]
        into = [self._parts(p, pl, m.flows, work) for m in recvs]
        # A rank that receives into what it sends in the same step (an
        # exchange) must not touch it before its sends are done.
        early = not _overlap([x for ps in out for x in ps], [x for ps in into for x in ps])
        send_works = []
        for m, parts in zip(sends, out):
            n = sum(x.numel() for x in parts)
            if n == 0:
                continue
            buf = parts[0] if len(parts) == 1 else torch.cat(parts)
            for i, (a, b) in enumerate(_segments(n, item, self.segment_bytes)):
                send_works.append((m, self.pg.send([buf[a:b]], m.dst, tag(salt, m, i))))
        specs = []
        need = 0
        for m, parts in zip(recvs, into):
            kinds = self._kinds(p, m, len(parts))
            n = sum(x.numel() for x in parts)
            direct = early and len(parts) == 1 and kinds[0] == COPY  # straight into place
            specs.append((m, parts, kinds, n, direct, need))
            need += 0 if direct else n
        scratch = self._scratch(need, work) if need else None
        inbox: List[_Recv] = []
        for m, parts, kinds, n, direct, off in specs:
            if n == 0:
                for f in m.flows:
                    fct[f] = 1e-9
                continue
            buf = parts[0] if direct else scratch[off : off + n]
            r = _Recv(m, None if direct else buf, parts, kinds, _segments(n, item, self.segment_bytes), what, self.peer(m.src))
            for i, (a, b) in enumerate(r.segs):
                r.works.append(self.pg.recv([buf[a:b]], m.src, tag(salt, m, i)))
            inbox.append(r)
        waiters = [self._pool().submit(r.wait_all) for r in inbox[1:]]
        if inbox:
            inbox[0].wait_all_applying(reduce if early else None)
        for r, fut in zip(inbox[1:], waiters):
            if early:
                for i, ev in enumerate(r.done):
                    while not ev.wait(timeout=0.5):
                        if fut.done():
                            fut.result()  # a failed wait (dead peer) raises here
                    r.apply(i, reduce)
            fut.result()
        for m, w in send_works:
            try:
                w.wait()
            except Exception as e:
                raise PeerError(what, m.step, "sending to", self.peer(m.dst), e) from e
        for r in inbox:
            if not early:
                for i in range(len(r.segs)):
                    r.apply(i, reduce)
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
