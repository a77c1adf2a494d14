"""The control plane's runtime (the paper's RTuner): every rule of it lives
in libreact (internal/control, one state machine a rank: epochs, versions,
records, when an exchange is due, the period, when a switch takes effect;
on the leader the tuners, on a goroutine of their own). This moves its
bytes over a separate Gloo group and does the waiting.

The collective thread tells it when a key's epoch begins and ends. When an
exchange is due (every rank finds it due at the same call: every rank calls
the same keys in the same order), this rank waits for the answers the
exchange needs (only when the control plane is DEPTH exchanges behind) and
hands it to the control thread, which brings every rank's row to the
leader (a MAX reduction: pkg/wire/exchange.go), broadcasts the leader's
answer (wire.Answer) and, when it carries patterns, takes the ranks' vote
on them (every rank checks each one, exactly-once; a MIN allreduce): a
pattern is used only when every rank accepted it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import queue
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.distributed as dist

from . import _lib, clock
from .config import Config
from .pattern import Pattern

log = logging.getLogger("react_torch")

Key = Tuple[str, str, int, int]  # (op, dtype, numel, root)

# An answer up to this size travels in the broadcast of its size: one
# operation on the control group an exchange when no pattern rides on it.
_INLINE = 248


@dataclasses.dataclass
class KeyState:
    id: int  # libreact's
    pattern: Pattern  # the one in force
    tuned: bool
    version: int = 0
    epoch: int = 0  # the epoch begun last
    next: int = 0  # the next epoch, as the last end said
    ready: int = -1  # the control plane's sends when end said the next epoch keeps the version in force


class Control:
    """One group's control plane on this rank. tuned False: epochs are
    counted, nothing is exchanged and no thread runs."""

    def __init__(self, cfg: Config, group: Optional[dist.ProcessGroup], rank: int, size: int,
                 decode: Callable[[bytes], Pattern], tuned: bool, one_host: bool = False,
                 hosts: Optional[List[List[int]]] = None):
        """one_host: every rank of the group's patterns is on one host;
        hosts: a hierarchical group's ranks per host (its patterns run over
        hosts, and the reports name them)."""
        self.cfg, self.group, self.rank, self.size, self.decode = cfg, group, rank, size, decode
        self.one_host = one_host
        self.tuned, self.leader = tuned, tuned and rank == cfg.leader
        self.go = _lib.Control(json.dumps({"batch": cfg.B, "min_calls": cfg.min_calls, "tuned": tuned,
                                           "leader": self.leader, "hosts": hosts}))
        self.keys: Dict[Key, KeyState] = {}
        self.error: Optional[BaseException] = None
        self.cv = threading.Condition()
        self.replied = 0  # exchanges accepted
        self.sends = 0  # exchanges sent
        self.messages = 0  # operations on the control group
        self.waits, self.wait_s = 0, 0.0  # epochs that waited for an answer
        self.timers: List[Callable] = []  # CUDA: the recorded epochs' event readers, not yet sent
        self.final: Optional[Tuple[dict, dict]] = None  # stats at close
        self.offset = self.rtt = 0.0
        self.syncs = 0
        self.thread: Optional[threading.Thread] = None
        if tuned:
            self._sync()  # this rank's perf_counter() plus offset is the leader's (clock.py)
            self.q: "queue.Queue[Optional[Tuple]]" = queue.Queue()
            self.thread = threading.Thread(target=self._loop, name="react-control", daemon=True)
            self.thread.start()

    def _sync(self) -> None:
        self.offset, self.rtt = clock.sync(self.group, self.rank, self.size, self.cfg.leader)
        self.go.offset(self.offset)
        self.syncs += 1

    # collective thread
    def key(self, key: Key, raw: bytes, itemsize: int, stepped: bool) -> KeyState:
        """Adds a key (its first call; every rank in the same order).
        stepped: its records are CUDA step ends."""
        op, dtype, numel, root = key
        label = f"{op} {dtype} x{numel}" + (f" root {root}" if root >= 0 else "")
        conf = {**self.cfg.tuner_json(), "Stepped": stepped, "OneHost": self.one_host, "label": label, "key": list(key)}
        i = self.go.key(raw, numel, itemsize, json.dumps(conf), self.cfg.fct_log if self.leader else "")
        st = KeyState(id=i, pattern=self.decode(raw), tuned=self.go.stats()["keys"][i]["tuned"])
        self.keys[key] = st
        return st

    def begin(self, st: KeyState) -> None:
        """Starts the key's next epoch, on the pattern due then."""
        if self.error is not None:
            raise RuntimeError(f"react_torch: control plane failed: {self.error}") from self.error
        if st.ready == self.sends:  # no switch can be due: libreact need not be asked
            st.epoch = st.next
            return
        st.epoch, v = self.go.begin(st.id)
        if v != st.version:
            st.pattern, st.version = self.decode(self.go.pattern(st.id, v)), v

    def end(self, st: KeyState, fct, elapsed: float, entry: Optional[Tuple[int, float]] = None) -> None:
        """Records the epoch begun; entry is (this rank's rank in the
        pattern, the perf_counter() it entered the call at), None where it
        ran no part. fct: the plan the executor ran (its arrivals), None
        where this rank ran none, or CUDA's reader of the arrivals."""
        if not st.tuned:
            rec, x, need, st.next, ask = self.go.end(st.id, None, elapsed)
        elif callable(fct):
            rec, x, need, st.next, ask = self.go.end(st.id, None, 0.0, deferred=True)
            if rec:
                self.timers.append(fct)
        else:
            er, at = entry if entry is not None else (-1, 0.0)
            rec, x, need, st.next, ask = self.go.end(st.id, fct, elapsed, er, at)
        st.ready = -1 if ask else self.sends
        if x:
            self._send(need)

    def _send(self, need: int) -> None:
        if self.replied < need:
            t0 = time.perf_counter()
            with self.cv:
                while self.replied < need and self.error is None:
                    self.cv.wait(timeout=1.0)
            self.waits += 1
            self.wait_s += time.perf_counter() - t0
            if self.error is not None:
                raise RuntimeError(f"react_torch: control plane failed: {self.error}") from self.error
        at = time.perf_counter()
        x, n = self.go.send(at)
        self.sends += 1
        timers, self.timers = self.timers[:n], self.timers[n:]
        self.q.put((x, timers))

    def report(self) -> Optional[Dict[str, Any]]:
        """The leader's last report sent to this rank (None before one),
        and a request for a newer one with this rank's next exchange: it
        never waits."""
        if self.final is not None:
            return None
        raw = self.go.report(ask=True)
        return json.loads(raw) if raw else None

    def close(self, timeout: float = 60.0) -> None:
        """Lets the control thread finish the exchanges already sent (the
        other ranks' threads expect them), then stops it; the epochs of an
        unfinished batch are dropped (a last exchange here would tie the
        groups' shutdowns together: at exit they close in no agreed order).
        The tuners and logs close once the thread has stopped."""
        if self.final is not None:
            return
        if self.thread is not None:
            self.q.put(None)
            self.thread.join(timeout=timeout)
            if self.thread.is_alive():
                log.warning("react_torch: rank %d: the control thread did not stop within %.0f s", self.rank, timeout)
                return
        self.final = (self.stats(), self.go.stats())
        self.go.close()
        self.group = None

    def key_stats(self, st: KeyState) -> dict:
        """{"epoch" (run), "version", "switches", "refused", "tuned"}"""
        keys = self.final[1]["keys"] if self.final is not None else self.go.stats()["keys"]
        return keys[st.id]

    def stats(self) -> Dict[str, Any]:
        if self.final is not None:
            return dict(self.final[0])
        g = self.go.stats()
        return {"exchanges": g["exchanges"], "control_messages": self.messages, "waits": self.waits, "wait_s": self.wait_s,
                "switches": sum(k["switches"] for k in g["keys"]), "clock_syncs": self.syncs, "clock_offset_s": self.offset,
                "clock_rtt_s": self.rtt}

    # control thread
    def _loop(self) -> None:
        try:
            while True:
                item = self.q.get()
                if item is None:
                    return
                x, timers = item
                for i, read in enumerate(timers):  # CUDA: events read here, off the collective thread
                    self.go.fill(x, i, *read())
                got = self._reduce(self.go.row(x))
                body = b""
                if got is not None:  # the leader
                    self.go.take(x, got)
                    body = self.go.answer(x, time.perf_counter())
                body = self._broadcast(body)
                ok = self.go.check(x, body)
                refused, resync = self.go.accept(x, self._vote(ok) if ok else [])
                for r in refused:
                    log.warning("react_torch: rank %d: pattern version %d of key %d refused (%s); keeping the one in force",
                                self.rank, r["version"], r["key"], r["why"])
                if resync:  # every rank at the same exchange
                    self._sync()
                with self.cv:
                    self.replied = x
                    self.cv.notify_all()
        except BaseException as exc:  # surfaced on the collective thread
            with self.cv:
                self.error = exc
                self.cv.notify_all()

    # The control group is a bare Gloo group (never registered with
    # torch.distributed), so it is driven through its own methods.
    def _reduce(self, row: np.ndarray) -> Optional[np.ndarray]:
        """The rows at the leader: every flow has one receiver and every
        entry slot one rank, so the element-wise MAX over the ranks is the
        whole record. A reduction, not a gather: the leader receives
        O(flows), not O(ranks x flows)."""
        t = torch.from_numpy(row)
        opts = dist.ReduceOptions()
        opts.rootRank = self.cfg.leader
        opts.reduceOp = dist.ReduceOp.MAX
        self.group.reduce([t], opts).wait()
        self.messages += 1
        return row if self.rank == self.cfg.leader else None

    def _broadcast(self, body: bytes) -> bytes:
        """The leader's answer: its size and, when it is small, the answer
        itself in one broadcast; a larger one (patterns, a report) in a second."""
        opts = dist.BroadcastOptions()
        opts.rootRank = self.cfg.leader
        head = torch.zeros(8 + _INLINE, dtype=torch.uint8)
        if self.rank == self.cfg.leader:
            head[:8] = torch.tensor([len(body)], dtype=torch.int64).view(torch.uint8)
            if len(body) <= _INLINE:
                head[8 : 8 + len(body)] = torch.frombuffer(bytearray(body), dtype=torch.uint8)
        self.group.broadcast([head], opts).wait()
        self.messages += 1
        n = int(head[:8].view(torch.int64)[0])
        if n <= _INLINE:
            return bytes(head[8 : 8 + n].numpy().tobytes())
        buf = torch.frombuffer(bytearray(body), dtype=torch.uint8) if self.rank == self.cfg.leader else torch.empty(n, dtype=torch.uint8)
        self.group.broadcast([buf], opts).wait()
        self.messages += 1
        return bytes(buf.numpy().tobytes())

    def _vote(self, ok: List[int]) -> List[int]:
        """Every rank's verdicts on an answer's patterns, MIN over the ranks."""
        t = torch.tensor(ok, dtype=torch.int64)
        opts = dist.AllreduceOptions()
        opts.reduceOp = dist.ReduceOp.MIN
        self.group.allreduce([t], opts).wait()
        self.messages += 1
        return t.tolist()

