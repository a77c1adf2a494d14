"""The tuner glue (the paper's RTuner): per collective key an epoch counter,
the pattern in force and its version; per group a control thread that, once
per batch, brings the FCTs of every key's epochs to the leader over a
separate Gloo group (a MAX reduction: pkg/wire/exchange.go), lets the leader's tuners decide, and broadcasts the
decisions.

The collective thread only records an epoch (its FCTs stay Python objects
until the control thread lays them out). When one key (the clock) has
B epochs recorded, every key's records go out as one exchange: one reduction,
one broadcast of a fixed header, and only when the leader decided
something, a broadcast of the patterns and a vote on them.

Agreement by construction: every rank runs the same keys in the same order
(collectives are called in the same order), so every rank sends the same
exchanges, with the same layout, at the same calls. The switches carried
by exchange x's answer are scheduled when exchange x + DEPTH is sent, at
each key's next epoch (or the tuner's switch epoch, if later): every rank
is at that call then, so every rank switches at the same epoch. A rank
waits for an answer only there, when the control plane is DEPTH batches
behind; the leader's tuners run on their own thread, and a decision that
takes long rides on a later answer.

Every rank checks a pattern it is sent (libreact's exactly-once check) and
the ranks vote (a MIN allreduce on the control group): a pattern is used only
when all accepted it; otherwise all keep the one in force, and the leader's
tuner restarts from it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import queue
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import msgpack
import numpy as np
import torch
import torch.distributed as dist

from . import _lib, clock
from .config import Config
from .pattern import Pattern

log = logging.getLogger("react_torch")

# Exchanges in flight: the switches that exchange x's answer carries are
# scheduled when exchange x + DEPTH is sent, so the control plane has DEPTH
# batches of the clock key to answer before any rank waits for it.
DEPTH = 2
# The time between exchanges that fast calls are batched up to (see _ready).
EXCHANGE_S = 1.0
# The group clock's offset is estimated again every this many exchanges
# (hosts' clocks drift apart by microseconds a minute).
RESYNC = 64

Key = Tuple[str, str, int, int]  # (op, dtype, numel, root)


@dataclasses.dataclass
class KeyState:
    pattern: Pattern
    version: int = 0
    epoch: int = 0  # next epoch to run
    pending: List[Tuple[int, int, Pattern]] = dataclasses.field(default_factory=list)  # (effective, version, pattern)
    tuned: bool = False
    switches: int = 0  # patterns switched to
    refused: int = 0  # patterns refused by the check
    waits: int = 0  # epochs that waited for the control plane
    wait_s: float = 0.0
    # epochs run but not yet exchanged: (epoch, version, pattern, fct,
    # elapsed, entry: (this rank's rank in the pattern, its entry on the
    # group clock) or None)
    records: List[Tuple] = dataclasses.field(default_factory=list)


def _width(p: Pattern) -> int:
    """Values of one epoch in an exchange (pkg/wire/exchange.go owns the row)."""
    if not p.exchange_row:
        raise ValueError("react_torch: a pattern without its layout has no place in an exchange")
    return p.exchange_row


class Control:
    """One group's control plane. The collective thread (begin, end) only
    records epochs and, every B epochs of one key, hands every key's
    records to the control thread as one exchange; the control thread
    reduces them to the leader in one operation, the leader's tuners decide
    for every key, and one broadcast carries the decisions back."""

    def __init__(self, cfg: Config, group: dist.ProcessGroup, rank: int, size: int, layout):
        self.cfg, self.group, self.rank, self.size = cfg, group, rank, size
        self.layout = layout  # callable(pattern bytes) -> Pattern, checks and decodes
        self.keys: Dict[Key, KeyState] = {}
        self.q: "queue.Queue[Optional[Tuple]]" = queue.Queue()
        self.cv = threading.Condition()
        self.error: Optional[BaseException] = None
        # leader: every key's tuner in libreact, keys numbered in the order it first saw them
        self.leader = _lib.Leader() if rank == cfg.leader else None
        self.ids: Dict[Key, int] = {}
        self.clock: Optional[Key] = None  # the key whose batches time the exchanges
        self.sent = 0  # exchanges handed to the control thread
        self.replied = 0  # exchanges answered
        # answers not yet due: (exchange, accepted switches, epochs per exchange)
        self.answers: List[Tuple[int, List[Tuple[Key, int, int, Pattern]], int]] = []
        self.every = cfg.B  # epochs of the clock key per exchange
        self.messages = 0  # operations on the control group
        # this rank's perf_counter() plus offset is the leader's (clock.py)
        self.offset, self.rtt = clock.sync(group, rank, size, cfg.leader)
        self.syncs = 1
        self.thread = threading.Thread(target=self._loop, name="react-control", daemon=True)
        self.thread.start()
        # leader: its tuners' thread, the decisions it made and not yet sent
        self.tq: "queue.Queue[Optional[Tuple]]" = queue.Queue()
        self.tcv = threading.Condition()
        self.ready: List[Tuple[Key, int, int, bytes]] = []
        self.tuned = 0  # last exchange the tuners took
        # report(): a rank asks with its next exchange; the leader's tuner
        # thread writes the reports (JSON) for the answer of an exchange
        # that asked, and every rank keeps the last one it was sent
        self.want_report = False
        self.report_out: Optional[bytes] = None
        self.report_in: Optional[Dict[str, Any]] = None
        self.tune_error: Optional[BaseException] = None
        self._last_at: Optional[float] = None
        self._interval: Optional[float] = None
        self.tuner_thread = None
        if rank == cfg.leader:
            self.tuner_thread = threading.Thread(target=self._tune_loop, name="react-tuner", daemon=True)
            self.tuner_thread.start()

    # collective thread
    def begin(self, key: Key, st: KeyState) -> int:
        """Switches to the patterns due at this epoch."""
        if self.error is not None:
            raise RuntimeError(f"react_torch: control plane failed: {self.error}") from self.error
        e = st.epoch
        while st.pending and st.pending[0][0] <= e:
            _, st.version, st.pattern = st.pending.pop(0)
            st.switches += 1
        return e

    def end(self, key: Key, st: KeyState, fct, elapsed: float, entry: Optional[Tuple[int, float]] = None) -> None:
        """Records the epoch just run; entry is (this rank's rank in the
        pattern, the perf_counter() it entered the call at), None where it
        ran no part. Every rank calls it for the same keys in the same
        order, so every rank sends the same exchanges, at the same calls."""
        e = st.epoch
        st.epoch += 1
        if not st.tuned or e + 1 < self.cfg.min_calls:
            return
        if entry is not None:
            entry = (entry[0], entry[1] + self.offset)
        st.records.append((e, st.version, st.pattern, fct, elapsed, entry))
        n, b = len(st.records), self.every
        if n >= b and (self.clock is None or self.clock == key or n >= 2 * b):
            self.clock = key
            self._due(self.sent + 1 - DEPTH, st)
            self._exchange()

    def _due(self, x: int, st: KeyState) -> None:
        """Schedules the switches that the answers up to exchange x carry, at
        every key's next epoch (or the tuner's switch epoch, if later), and
        takes the exchange period they set: the same epoch and period on
        every rank, since every rank is at this call. Waits
        for those answers: only when the control plane is DEPTH exchanges
        behind."""
        if x < 1:
            return
        if self.replied < x:
            t0 = time.perf_counter()
            with self.cv:
                while self.replied < x and self.error is None:
                    self.cv.wait(timeout=1.0)
            st.waits += 1
            st.wait_s += time.perf_counter() - t0
            if self.error is not None:
                raise RuntimeError(f"react_torch: control plane failed: {self.error}") from self.error
        with self.cv:
            while self.answers and self.answers[0][0] <= x:
                _, switches, self.every = self.answers.pop(0)
                for key, eff, ver, pat in switches:
                    k = self.keys[key]
                    k.pending.append((max(eff, k.epoch), ver, pat))

    def _exchange(self) -> None:
        self.sent += 1
        x, items = self.sent, []
        for key, st in self.keys.items():  # first-call order, the same on every rank
            if st.records:
                items.append((key, st.records))
                st.records = []
        want, self.want_report = self.want_report, False
        self.q.put((x, items, time.perf_counter(), want))

    def report(self) -> Optional[Dict[str, Any]]:
        """The leader's last report sent to this rank (None before one),
        and a request for a newer one with this rank's next exchange: it
        never waits."""
        self.want_report = True
        return self.report_in

    def close(self, timeout: float = 60.0) -> None:
        """Lets the control thread finish the exchanges already sent (the
        other ranks' threads expect them), then stops it; the epochs of an
        unfinished batch are dropped (a last exchange here would tie the
        groups' shutdowns together: at exit they close in no agreed order).
        Tuners and logs are closed only once the threads have stopped."""
        self.q.put(None)
        self.thread.join(timeout=timeout)
        if self.thread.is_alive():
            log.warning("react_torch: rank %d: the control thread did not stop within %.0f s", self.rank, timeout)
            return
        if self.tuner_thread is not None:
            self.tq.put(None)
            self.tuner_thread.join(timeout=timeout)
            if self.tuner_thread.is_alive():
                log.warning("react_torch: rank %d: the tuner thread did not stop within %.0f s", self.rank, timeout)
                return
        if self.leader is not None:
            self.leader.close()

    def stats(self) -> Dict[str, Any]:
        keys = list(self.keys.values())
        return {"exchanges": self.replied, "control_messages": self.messages, "waits": sum(s.waits for s in keys),
                "wait_s": sum(s.wait_s for s in keys), "switches": sum(s.switches for s in keys),
                "clock_syncs": self.syncs, "clock_offset_s": self.offset, "clock_rtt_s": self.rtt}

    # control thread
    def _loop(self) -> None:
        try:
            while True:
                item = self.q.get()
                if item is None:
                    return
                x, items, at, want = item
                got = self._reduce(self._rows(items, want))
                replies, every, rep = [], 0, b""
                if got is not None:  # the leader
                    self.tq.put(("batch", x, items, got[:-1], got[-1] > 0))
                    replies, every, rep = self._ready(x, items, at)
                replies, every, rep = self._broadcast(replies, every, rep)
                if rep:
                    self.report_in = json.loads(rep)
                accepted = self._accept(items, replies) if replies else []
                if x % RESYNC == 0:  # every rank at the same exchange
                    self.offset, self.rtt = clock.sync(self.group, self.rank, self.size, self.cfg.leader)
                    self.syncs += 1
                with self.cv:
                    self.answers.append((x, [(items[i][0], *new) for i, new in accepted], every))
                    self.replied = x
                    self.cv.notify_all()
        except BaseException as exc:  # surfaced on the collective thread
            with self.cv:
                self.error = exc
                self.cv.notify_all()

    # The leader's tuners run on a thread of their own: a decision that
    # takes long (a search) rides on a later exchange's answer instead of
    # holding this one past the epoch its switch could take effect at.
    def _tune_loop(self) -> None:
        try:
            while True:
                item = self.tq.get()
                if item is None:
                    return
                if item[0] == "reset":  # its pattern was refused: restart from the one in force
                    if item[1] in self.ids:
                        self.leader.reset(self.ids[item[1]])
                    continue
                _, x, items, got, want = item
                made = self._decide_all(items, got)
                rep = None
                if want:
                    try:
                        rep = self.leader.report(x)
                    except _lib.ReactError as exc:  # the report's failure, not the tuners'
                        log.warning("react_torch: no report for exchange %d: %s", x, exc)
                with self.tcv:
                    self.ready += made
                    if rep is not None:
                        self.report_out = rep
                    self.tuned = x
                    self.tcv.notify_all()
        except BaseException as exc:  # surfaced through the control thread
            with self.tcv:
                self.tune_error = exc
                self.tcv.notify_all()

    def _ready(self, x: int, items, at: float) -> Tuple[List[Tuple[int, int, int, bytes]], int, bytes]:
        """The decisions to send with exchange x: those made so far for keys
        it carries, as (item, the tuner's switch epoch, version, pattern).
        It waits for the tuners to take x itself for up to half the time
        between exchanges, measured since x was sent. Also the exchange
        period to use from x + DEPTH on: B epochs of the clock key, or a
        multiple of B that spaces exchanges EXCHANGE_S apart (up to H / 2),
        so that a loop of fast calls does not pay for one every few ms."""
        now = time.perf_counter()
        if self._last_at is not None:
            self._interval = at - self._last_at if self._interval is None else 0.8 * self._interval + 0.2 * (at - self._last_at)
        self._last_at = at
        slack = 0.5 * self._interval if self._interval is not None else 0.1
        with self.tcv:
            while self.tuned < x and self.tune_error is None and now < at + slack:
                self.tcv.wait(at + slack - now)
                now = time.perf_counter()
            if self.tune_error is not None:
                raise RuntimeError(f"the leader's tuner failed: {self.tune_error}") from self.tune_error
            index = {key: i for i, (key, _) in enumerate(items)}
            out = [(index[key], eff, ver, raw) for key, ver, eff, raw in self.ready if key in index]
            self.ready = [d for d in self.ready if d[0] not in index]
            rep, self.report_out = self.report_out or b"", None
        every = self.every
        if self._interval is not None:
            per_batch = self._interval * self.cfg.B / self.every
            every = self.cfg.B * max(1, min(self.cfg.H // (2 * self.cfg.B), round(EXCHANGE_S / max(per_batch, 1e-9))))
        return out, every, rep

    @staticmethod
    def _rows(items, want: bool = False) -> np.ndarray:
        """This rank's part of an exchange, one float64 vector: per key, per
        epoch, a row of its pattern's flows (-inf where this rank received no
        such flow), the epoch's elapsed time and a slot per rank of the
        pattern for its entry on the group clock (-inf but this rank's).
        Every rank lays it out alike: the same keys, epochs and versions.
        A last slot asks the leader for its report (1, else -inf)."""
        n = sum(_width(r[2]) for _, recs in items for r in recs)
        out = np.full(n + 1, -np.inf)
        if want:
            out[n] = 1.0
        off = 0
        for _, recs in items:
            for _, _, p, fct, elapsed, entry in recs:
                if callable(fct):  # CUDA: events read here, off the collective thread
                    fct, elapsed = fct()
                if fct:
                    out[off + np.fromiter(fct.keys(), dtype=np.int64, count=len(fct))] = np.fromiter(fct.values(), dtype=np.float64, count=len(fct))
                out[off + p.nflows] = elapsed
                if entry is not None:
                    out[off + p.nflows + 1 + entry[0]] = entry[1]
                off += _width(p)
        return out

    # The control group is a bare Gloo group (never registered with
    # torch.distributed), so it is driven through its own methods.
    def _reduce(self, rows: np.ndarray) -> Optional[np.ndarray]:
        """The exchange at the leader: every flow has one receiver and every
        entry slot one rank, so the element-wise MAX over the ranks is the
        whole record (and the slowest rank's elapsed time). A reduction, not
        a gather: the leader receives O(flows), not O(ranks x flows)."""
        row = torch.from_numpy(rows)
        opts = dist.ReduceOptions()
        opts.rootRank = self.cfg.leader
        opts.reduceOp = dist.ReduceOp.MAX
        self.group.reduce([row], opts).wait()
        self.messages += 1
        if self.rank != self.cfg.leader:
            return None
        return np.where(np.isneginf(rows), np.nan, rows)

    def _broadcast(self, replies: List[Tuple[int, int, int, bytes]], every: int, rep: bytes) -> Tuple[List[Tuple[int, int, int, bytes]], int, bytes]:
        """One broadcast of a fixed header (decisions, their size, the
        exchange period, the report's size); a second with the patterns
        and the report only when there are some."""
        body = msgpack.packb([list(r) for r in replies]) if replies else b""
        head = torch.tensor([len(replies), len(body), every, len(rep)], dtype=torch.int64)
        opts = dist.BroadcastOptions()
        opts.rootRank = self.cfg.leader
        self.group.broadcast([head], opts).wait()
        self.messages += 1
        nrep, nbody, every, nrept = (int(v) for v in head)
        if nbody + nrept == 0:
            return [], every, b""
        buf = torch.frombuffer(bytearray(body + rep), dtype=torch.uint8) if self.rank == self.cfg.leader else torch.empty(nbody + nrept, dtype=torch.uint8)
        self.group.broadcast([buf], opts).wait()
        self.messages += 1
        data = bytes(buf.numpy().tobytes())
        replies = [tuple(r) for r in msgpack.unpackb(data[:nbody])] if nrep else []
        return replies, every, data[nbody:]

    def _accept(self, items, replies) -> List[Tuple[int, Tuple[int, int, Pattern]]]:
        """Every rank checks the patterns it was sent; one is used only when
        every rank accepted it, else all keep the one in force (and the
        leader's tuner for that key restarts from it)."""
        pats, whys = [], []
        for _, _, _, raw in replies:
            try:
                pats.append(self.layout(raw))
                whys.append("")
            except Exception as exc:  # a refused pattern is not an error of the job
                pats.append(None)
                whys.append(str(exc))
        ok = torch.tensor([1 if p is not None else 0 for p in pats], dtype=torch.int64)
        opts = dist.AllreduceOptions()
        opts.reduceOp = dist.ReduceOp.MIN
        self.group.allreduce([ok], opts).wait()
        self.messages += 1
        out = []
        for (i, eff, ver, _), pat, good, why in zip(replies, pats, ok.tolist(), whys):
            key = items[i][0]
            if good:
                out.append((i, (eff, ver, pat)))
                continue
            st = self.keys[key]
            st.refused += 1
            log.warning("react_torch: rank %d: pattern version %d for %s refused (%s); keeping version %d", self.rank, ver, key, why or "refused by another rank", st.version)
            if self.rank == self.cfg.leader:
                self.tq.put(("reset", key))
        return out

    def _decide_all(self, items, got: np.ndarray) -> List[Tuple[Key, int, int, bytes]]:
        """The leader's tuners take every key's epochs of an exchange
        (libreact cuts them into runs; internal/leader); what they decided
        is (key, version, the tuner's switch epoch, pattern)."""
        layout = [len(items)]
        for key, recs in items:
            i = self.ids.get(key)
            if i is None:
                i = self.ids[key] = len(self.ids)
                _, ver, p, fct, _, _ = recs[0]
                label = f"{key[0]} {key[1]} x{key[2]}" + (f" root {key[3]}" if key[3] >= 0 else "")
                # CUDA records are step ends, read from the receiver's previous step
                conf = {**self.cfg.tuner_json(), "Stepped": callable(fct), "label": label, "key": list(key)}
                self.leader.key(i, p.raw, ver, key[2] * _itemsize(key[1]), json.dumps(conf), log_path(self.cfg.fct_log, key) if self.cfg.fct_log else "")
            layout += [i, len(recs)]
            layout += [v for r in recs for v in (r[0], r[1])]
        self.leader.exchange(np.array(layout, dtype=np.int64), np.ascontiguousarray(got, dtype=np.float64))
        keys = list(self.ids)
        return [(keys[i], ver, eff, raw) for i, ver, eff, raw in self.leader.decisions()]


def log_path(base: str, key: Key) -> str:
    """Where REACT_FCT_LOG=base puts a key's log: base.OP.DTYPE.NUMEL[.rootR].jsonl."""
    op, dtype, numel, root = key
    return f"{base}.{op}.{dtype}.{numel}" + (f".root{root}" if root >= 0 else "") + ".jsonl"


def _itemsize(dtype: str) -> int:
    import torch

    return torch.empty(0, dtype=getattr(torch, dtype.replace("torch.", ""))).element_size()
