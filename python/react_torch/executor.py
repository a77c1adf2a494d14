"""The pattern executor (the paper's RCollective): runs one collective as its
pattern's point-to-point flows on an inner process group, and records when
every flow this rank receives arrived.

The flows of one (step, src, dst) travel as one message (one buffer, in flow
order on both sides); a message larger than one segment travels as several.

CPU (Gloo): a dataflow (_Dataflow). A message is sent, segment by segment, as
soon as the segments it carries have arrived and been applied at this rank
(the layout's preds: Go's dependency rule, the one the simulator and the
link model's replay follow), so a tree or a ring streams as Gloo's own do
and no flow waits for a step's slowest flow. A flow's record is its arrival:
when its message's last segment arrived, in seconds from the moment this
rank entered the call; the leader's tuner turns arrivals into durations by
the same rule (critpath.DAG.Durations). Gloo's point-to-point works complete
only in wait(), so where one peer sends to a rank the calling thread waits
for its messages, else a pool thread for each peer's; the thread that sees
a segment arrive applies it and sends what it unblocks, under the call's
lock, in a fixed order (deterministic results) and with no hand-off
between threads.

CUDA (NCCL): each step's sends and receives form one coalesced batch
(lazily created pair communicators deadlock on cyclic first steps); CUDA
events around the batches give each step's end from the first step's start,
the arrival of every flow a rank receives in that step. The events are read
off the training thread (the control thread calls the returned timer). Not
run here: no GPU.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, List, Optional, Tuple, Union

import torch
import torch.distributed as dist

from .ops import AVG, BAND, BOR, BXOR, MAX, MIN, PRODUCT, SUM
from .pattern import COPY, REDUCE, TAG_STEPS, Message, Pattern, Plan


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


class _Recv:
    """One message being received: its buffer, its segments' works, and
    where each segment's elements go."""

    __slots__ = ("msg", "buf", "parts", "kinds", "segs", "works", "stamp", "what", "peer")

    def __init__(self, msg: Message, buf: torch.Tensor, parts: List[torch.Tensor], kinds: List[int], segs: List[Tuple[int, int]],
                 what: str = "collective", peer: str = ""):
        self.msg, self.buf, self.parts, self.kinds, self.segs = msg, buf, parts, kinds, segs
        self.works: list = []
        self.stamp = 0.0
        self.what, self.peer = what, peer or str(msg.src)

    def _wait(self, w) -> None:
        try:
            w.wait()
        except Exception as e:
            raise PeerError(self.what, self.msg.step, "receiving from", self.peer, e) from e

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


def _ranges(p: Pattern, pl: Plan, flows: List[int]) -> List[Tuple[int, int]]:
    """The element ranges of the working buffer that flows carry, in order."""
    if p.op == "allgather":
        m = pl.block
        return [(int(b) * m, (int(b) + 1) * m) for f in flows for b in p.blocks[p.blocks_start[f] : p.blocks_start[f + 1]]]
    return [(int(pl.chunk_lo[p.chunk[f]]), int(pl.chunk_hi[p.chunk[f]])) for f in flows]


def _kinds(p: Pattern, m: Message, nparts: int) -> List[int]:
    """Per part of a message: REDUCE or COPY."""
    if p.op == "allgather":
        return [COPY] * nparts
    return [int(x) for x in p.kind[m.flows]]


def _meet(a: List[Tuple[int, int]], b: List[Tuple[int, int]]) -> bool:
    return any(x0 < y1 and y0 < x1 for x0, x1 in a for y0, y1 in b)


class _Layout:
    """What every call of one plan does, whatever its buffer: the element
    ranges of its messages, the order constraints among them, where each
    receive lands and its segments. Made once per (plan, element size,
    segment size); a call then only slices its buffer."""

    def __init__(self, p: Pattern, pl: Plan, item: int, seg_bytes: int):
        self.sr = [_ranges(p, pl, m.flows) for m in pl.sends]
        self.rr = [_ranges(p, pl, m.flows) for m in pl.recvs]
        sspan = [[r for r in x if r[1] > r[0]] for x in self.sr]
        rspan = [[r for r in x if r[1] > r[0]] for x in self.rr]
        ns, nr = len(pl.sends), len(pl.recvs)
        # per receive: the receive before it on the same elements, and the
        # sends of its step or earlier that read them
        self.after = [-1] * nr
        self.war: List[List[int]] = [[] for _ in range(nr)]
        for j in range(nr):
            for k in range(j - 1, -1, -1):
                if _meet(rspan[j], rspan[k]):
                    self.after[j] = k
                    break
            self.war[j] = [i for i, m in enumerate(pl.sends) if m.step <= pl.recvs[j].step and _meet(sspan[i], rspan[j])]
        self.kinds: List[List[int]] = []
        self.size: List[int] = []
        self.direct: List[bool] = []
        self.offset: List[int] = []  # into the scratch buffer
        self.rsegs: List[List[Tuple[int, int]]] = []
        self.need = 0
        for j, m in enumerate(pl.recvs):
            kinds = _kinds(p, m, len(self.rr[j]))
            n = sum(hi - lo for lo, hi in self.rr[j])
            # into place where what else touches its elements is over before
            # it can arrive (its data was built from it), and nothing after
            direct = (len(self.rr[j]) == 1 and kinds[0] == COPY and all(i in pl.before_s[j] for i in self.war[j])
                      and all(k in pl.before_r[j] for k in range(j) if _meet(rspan[j], rspan[k]))
                      and not any(_meet(rspan[j], rspan[k]) for k in range(j + 1, nr)))
            self.kinds.append(kinds)
            self.size.append(n)
            self.direct.append(direct)
            self.offset.append(self.need)
            self.rsegs.append(_segments(n, item, seg_bytes) if n else [])
            self.need += 0 if direct or n == 0 else n
        self.ssegs = [_segments(n, item, seg_bytes) if n else [] for n in (sum(hi - lo for lo, hi in r) for r in self.sr)]
        # per send and receive it waits for: whether it carries exactly that
        # receive's elements in the same segments (then it streams)
        self.aligned = [[self.size[j] > 0 and rspan[j] == sspan[i] and self.rsegs[j] == self.ssegs[i] for j in pl.deps[i]] for i in range(ns)]
        self.per_peer: Dict[int, List[int]] = {}  # sends by peer, in step order
        for i, m in enumerate(pl.sends):
            self.per_peer.setdefault(m.dst, []).append(i)
        self.by_peer: Dict[int, List[int]] = {}  # receives of elements by peer, in step order
        for j, m in enumerate(pl.recvs):
            if self.size[j]:
                self.by_peer.setdefault(m.src, []).append(j)


class _Dataflow:
    """One CPU call run as a dataflow. Every receive is posted at the start
    (into place where nothing else reads or writes its elements first, else
    into scratch); the calling thread waits for the segments where one peer
    sends to this rank, else a pool thread for each peer's, and whichever
    thread sees a segment arrive applies it (a reduce or a copy) under the
    call's lock and sends each outgoing segment as soon as the segments it
    carries have been applied (segment by segment where the send covers
    exactly the elements of the receive it waits for: a tree or a ring
    streams).

    Order, for exact and deterministic results: the receives that touch
    the same elements are applied in step order; a receive is applied only
    after every send of its step or earlier that reads its elements has
    completed; sends to one peer go in step order (tags repeat every
    TAG_STEPS steps and Gloo matches a tag in order)."""

    def __init__(self, ex: "Executor", p: Pattern, pl: Plan, work: torch.Tensor, reduce: str, salt: int):
        self.ex, self.p, self.pl, self.work, self.reduce, self.salt = ex, p, pl, work, reduce, salt
        self.what = f"{p.op} of {work.numel()} {str(work.dtype).replace('torch.', '')} ({p.algo} pattern)"

    def run(self, t0: float) -> Dict[int, float]:
        ex, p, pl, work = self.ex, self.p, self.pl, self.work
        L = ex._layout(p, pl, work.element_size())
        after, war, deps = L.after, L.war, pl.deps
        ns, nr = len(pl.sends), len(pl.recvs)
        fct: Dict[int, float] = {}
        recvs: List[Optional[_Recv]] = []
        scratch = ex._scratch(L.need, work) if L.need else None
        # post every receive, in step order
        for j, m in enumerate(pl.recvs):
            n = L.size[j]
            if n == 0:
                for f in m.flows:
                    fct[f] = 1e-9
                recvs.append(None)
                continue
            into = [work[lo:hi] for lo, hi in L.rr[j]]
            buf = into[0] if L.direct[j] else scratch[L.offset[j] : L.offset[j] + n]
            r = _Recv(m, None if L.direct[j] else buf, into, L.kinds[j], L.rsegs[j], self.what, ex.peer(m.src))
            for i, (a, b) in enumerate(r.segs):
                r.works.append(ex.pg.recv([buf[a:b]], m.src, tag(self.salt, m, i)))
            recvs.append(r)
        # Each segment is applied, and what it unblocks sent, by the thread
        # that saw it arrive, under the call's lock: no hand-off to another
        # thread. Where one peer sends to this rank the calling thread waits
        # for its messages, else a pool thread for each peer's (a Gloo
        # receive completes only in wait(), and a peer's messages arrive in
        # the order it sends them).
        by_peer = [[(j, recvs[j]) for j in js] for js in L.by_peer.values()]
        lock = threading.Lock()
        finished = threading.Event()
        errors: List[BaseException] = []
        left = [sum(r is not None for r in recvs)]  # receives not yet applied in full
        # what has been applied: segments per receive (a receive of no
        # elements counts as done)
        done = [len(r.segs) if r is not None else 0 for r in recvs]
        applied = [0] * nr
        arrived = [0] * nr
        full = [r is None for r in recvs]
        # sends: their buffers, segments, what each segment waits for
        sbuf: List[Optional[torch.Tensor]] = [None] * ns
        ssegs, aligned, per_peer = L.ssegs, L.aligned, L.per_peer
        sent = [0] * ns  # segments issued
        works: List[List] = [[] for _ in range(ns)]
        peer_next: Dict[int, int] = {}  # per peer: the next send (index) it may take, in step order

        def ready(i: int, seg: int) -> bool:
            for ok, j in zip(aligned[i], deps[i]):
                if not (applied[j] > seg if ok else full[j]):
                    return False
            return True

        def issue() -> None:
            for peer, order in per_peer.items():
                k = peer_next.get(peer, 0)
                while k < len(order):
                    i = order[k]
                    m = pl.sends[i]
                    while sent[i] < len(ssegs[i]) and ready(i, sent[i]):
                        if sbuf[i] is None:
                            rs = L.sr[i]
                            sbuf[i] = work[rs[0][0] : rs[0][1]] if len(rs) == 1 else torch.cat([work[lo:hi] for lo, hi in rs])
                        a, b = ssegs[i][sent[i]]
                        works[i].append(ex.pg.send([sbuf[i][a:b]], m.dst, tag(self.salt, m, sent[i])))
                        sent[i] += 1
                    if sent[i] < len(ssegs[i]):
                        break
                    k += 1
                peer_next[peer] = k

        def wait_sends(idx: List[int]) -> None:
            for i in idx:
                if sent[i] < len(ssegs[i]):
                    raise RuntimeError(f"react_torch: {self.what}: send {i} of step {pl.sends[i].step} not issued before a later receive "
                                       f"overwrites its elements (please report)")
                for w in works[i]:
                    try:
                        w.wait()
                    except Exception as e:
                        raise PeerError(self.what, pl.sends[i].step, "sending to", ex.peer(pl.sends[i].dst), e) from e
                works[i] = []

        def apply_what_can() -> None:
            progress = True
            while progress:
                progress = False
                for j, r in enumerate(recvs):
                    if r is None or full[j] or applied[j] >= arrived[j]:
                        continue
                    if after[j] >= 0 and not full[after[j]]:
                        continue
                    if applied[j] == 0 and war[j]:
                        wait_sends(war[j])
                    r.apply(applied[j], self.reduce)
                    applied[j] += 1
                    if applied[j] == done[j]:
                        full[j] = True
                        left[0] -= 1
                        for f in r.msg.flows:
                            fct[f] = max(r.stamp - t0, 1e-9)
                    progress = True
                    issue()

        def arrive(j: int, i: int) -> None:
            arrived[j] = i + 1
            apply_what_can()
            if left[0] == 0:
                finished.set()

        def follow(rs: List[Tuple[int, _Recv]]) -> None:
            try:
                for j, i in _segment_events(rs, ex.hold_s):
                    with lock:
                        if errors:
                            return
                        arrive(j, i)
            except BaseException as e:
                errors.append(e)
                finished.set()

        with lock:
            issue()
        if len(by_peer) == 1:
            follow(by_peer[0])
        elif by_peer:
            # the calling thread waits on none of them: a peer's failure
            # ends the call at once, not after another peer's timeout
            pool = ex._pool(len(by_peer))
            for rs in by_peer:
                pool.submit(follow, rs)
            while not finished.wait(0.5):
                pass
        if errors:
            raise errors[0]
        issue()
        for i in range(ns):
            if sent[i] < len(ssegs[i]):
                raise RuntimeError(f"react_torch: {self.what}: send of step {pl.sends[i].step} never became ready (please report)")
        wait_sends(list(range(ns)))
        return fct


def _segment_events(rs: List[Tuple[int, "_Recv"]], hold_s: float = 0.0):
    """Waits for receives' segments in order, yielding each (j, i) and
    stamping a receive when its last has arrived (held hold_s first: the
    test hook's slow downlink)."""
    for j, r in rs:
        for i, w in enumerate(r.works):
            r._wait(w)
            if i == len(r.works) - 1:
                if hold_s:
                    time.sleep(hold_s)
                r.stamp = time.perf_counter()
            yield j, i


class Executor:
    """Runs plans on one inner group. Not safe for concurrent calls."""

    def __init__(self, pg: dist.ProcessGroup, rank: int, size: int, segment_bytes: int = SEGMENT_BYTES,
                 global_ranks: Optional[List[int]] = None, hold_s: float = 0.0):
        self.pg, self.rank, self.size = pg, rank, size
        self.hold_s = hold_s  # test hook (REACT_TEST_SLOW_RANK): every message into this rank arrives this much later
        self.segment_bytes = segment_bytes
        self.global_ranks = global_ranks
        self._threads: Optional[ThreadPoolExecutor] = None
        self._width = 0
        self._arena: Dict[tuple, torch.Tensor] = {}
        self._layouts: Dict[Tuple[int, int], Tuple[Plan, _Layout]] = {}

    def _pool(self, waiters: int = 8) -> ThreadPoolExecutor:
        """Threads enough for every peer's receives of a call to be waited
        at once (a Gloo receive completes only in wait(); one that queued
        behind another peer's late message would be stamped late)."""
        n = min(max(waiters, 8), 256)
        if self._threads is None or self._width < n:
            if self._threads is not None:
                self._threads.shutdown(wait=False)
            self._threads, self._width = ThreadPoolExecutor(max_workers=n, thread_name_prefix="react-recv"), n
        return self._threads

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=False)
            self._threads = None
        self._arena.clear()

    def _scratch(self, n: int, like: torch.Tensor, slot: str = "recv") -> torch.Tensor:
        """A reused tensor of at least n elements like like's, one per slot
        (a call's receive buffers; the copy a kept input runs on): a fresh
        allocation per call costs page faults on every call."""
        key = (like.dtype, like.device, slot)
        a = self._arena.get(key)
        if a is None or a.numel() < n:
            a = torch.empty(max(n, 1), dtype=like.dtype, device=like.device)
            self._arena[key] = a
        return a

    def _layout(self, p: Pattern, pl: Plan, item: int) -> _Layout:
        k = (id(pl), item)
        got = self._layouts.get(k)
        if got is None or got[0] is not pl:
            got = self._layouts[k] = (pl, _Layout(p, pl, item, self.segment_bytes))
        return got[1]

    def _copy(self, work: torch.Tensor) -> torch.Tensor:
        """work's elements in a reused buffer (on CUDA a fresh one: the
        caching allocator reuses memory itself)."""
        if work.device.type == "cuda":
            return work.clone()
        out = self._scratch(work.numel(), work, "copy")[: work.numel()]
        out.copy_(work)
        return out

    def _parts(self, p: Pattern, pl: Plan, flows: List[int], work: torch.Tensor) -> List[torch.Tensor]:
        return [work[lo:hi] for lo, hi in _ranges(p, pl, flows)]

    def peer(self, r: int) -> str:
        """A peer as errors name it: its group rank, and its global rank
        when that differs."""
        g = self.global_ranks[r] if self.global_ranks and r < len(self.global_ranks) else r
        return str(r) if g == r else f"{r} (global rank {g})"

    def run(self, p: Pattern, pl: Plan, work: torch.Tensor, reduce: str = SUM, salt: int = 0, t0: Optional[float] = None,
            keep: bool = False) -> FCT:
        """Runs the pattern in place on the flat buffer work; returns the
        arrival (seconds from t0, the perf_counter() the call was entered
        at, default now) of every flow this rank receives, or on CUDA a
        callable that returns them (from the first step's start) and the
        collective's GPU time once the GPU is done. salt goes into every
        tag (CPU; NCCL has no tags). keep: work's elements end as they
        began (a rank that receives runs on a copy)."""
        if keep and pl.recvs:
            work = self._copy(work)
        if work.device.type == "cuda":
            return self._run_cuda(p, pl, work, reduce)
        return _Dataflow(self, p, pl, work, reduce, salt).run(time.perf_counter() if t0 is None else t0)

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
                r = _Recv(m, buf, parts, _kinds(p, m, len(parts)), [(0, buf.numel())])
                r.apply(0, reduce)

        def read() -> Tuple[Dict[int, float], float]:
            out: Dict[int, float] = {}
            first = timed[0][1] if timed else None
            for flows, _, end in timed:
                end.synchronize()
                at = max(first.elapsed_time(end) / 1e3, 1e-9)  # the step's end from the call's first event
                for f in flows:
                    out[f] = at
            whole = timed[0][1].elapsed_time(timed[-1][2]) / 1e3 if timed else 0.0
            return out, whole

        return read
