"""The tuner glue (the paper's RTuner): per collective key an epoch counter,
the pattern in force and its version; a control thread that gathers every
epoch's FCTs to the leader over a separate Gloo group, lets libreact decide,
and broadcasts the reply.

Agreement by construction: every rank enqueues the same keys in the same
order (collectives are called in the same order), so the control thread's
gathers match; the leader's reply for epoch e carries any switch with an
effective epoch of at least e + lag; before running epoch e' every rank
waits for the replies of all epochs up to e' - lag. So at every epoch every
rank knows every switch due by then, and switches at the same epoch.

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
from typing import Any, Dict, List, Optional, Tuple

import msgpack
import numpy as np
import torch
import torch.distributed as dist

from . import _lib
from .config import Config
from .pattern import Pattern

log = logging.getLogger("react_torch")

Key = Tuple[str, str, int, int]  # (op, dtype, numel, root)


@dataclasses.dataclass
class KeyState:
    pattern: Pattern
    version: int = 0
    epoch: int = 0  # next epoch to run
    replied: int = -1  # last epoch whose reply arrived
    pending: List[Tuple[int, int, Pattern]] = dataclasses.field(default_factory=list)  # (effective, version, pattern)
    tuned: bool = False
    switches: int = 0  # patterns switched to
    refused: int = 0  # patterns refused by the check


def fct_batch(epoch: int, version: int, fct: np.ndarray, elapsed: float) -> bytes:
    """One epoch as the FCT batch msgpack (react.fcts/v1, pkg/wire/fctbatch.go)."""
    col = lambda a: {"dtype": "<f8", "shape": list(a.shape), "data": np.ascontiguousarray(a, dtype="<f8").tobytes()}
    return msgpack.packb({"format": "react.fcts/v1", "epoch0": epoch, "version": version, "epochs": 1, "nflows": int(fct.shape[-1]),
                          "fct": col(fct.reshape(1, -1)), "elapsed": col(np.array([elapsed]))})


class Control:
    def __init__(self, cfg: Config, group: dist.ProcessGroup, rank: int, size: int, layout):
        self.cfg, self.group, self.rank, self.size = cfg, group, rank, size
        self.layout = layout  # callable(pattern bytes) -> Pattern, checks and decodes
        self.keys: Dict[Key, KeyState] = {}
        self.q: "queue.Queue[Optional[Tuple]]" = queue.Queue()
        self.cv = threading.Condition()
        self.error: Optional[BaseException] = None
        self.tuners: Dict[Key, Any] = {}
        self.base: Dict[Key, int] = {}  # our version of a tuner's version 0
        self.versions_sent: Dict[Key, Tuple[int, int]] = {}  # key -> (version, tuner's switch epoch)
        self.logs: Dict[Key, Any] = {}  # FCT log per key (leader, when asked for)
        self.thread = threading.Thread(target=self._loop, name="react-control", daemon=True)
        self.thread.start()

    # training thread
    def begin(self, key: Key, st: KeyState) -> int:
        """Waits for the replies that can switch this epoch, switches, returns the epoch."""
        e = st.epoch
        need = e - self.cfg.Lag
        with self.cv:
            while st.replied < need and self.error is None:
                self.cv.wait(timeout=1.0)
            if self.error is not None:
                raise RuntimeError(f"react_torch: control plane failed: {self.error}") from self.error
            while st.pending and st.pending[0][0] <= e:
                _, st.version, st.pattern = st.pending.pop(0)
                st.switches += 1
        return e

    def end(self, key: Key, st: KeyState, fct: Dict[int, float], elapsed: float) -> None:
        e = st.epoch
        st.epoch += 1
        self.q.put((key, e, st.version, st.pattern, fct, elapsed))

    def close(self, timeout: float = 60.0) -> None:
        """Lets the control thread finish the exchanges already queued (the
        other ranks' threads expect them), then stops it. Tuners and logs
        are closed only once it has stopped: it may still use them."""
        self.q.put(None)
        self.thread.join(timeout=timeout)
        if self.thread.is_alive():
            log.warning("react_torch: rank %d: the control thread did not stop within %.0f s", self.rank, timeout)
            return
        for t in self.tuners.values():
            t.close()
        for f in self.logs.values():
            f.close()

    # control thread
    def _loop(self) -> None:
        try:
            while True:
                item = self.q.get()
                if item is None:
                    return
                key, e, ver, pat, fct, elapsed = item
                if callable(fct):  # CUDA: events read here, off the training thread
                    fct, elapsed = fct()
                st = self.keys[key]
                cols = self._gather(pat.nflows, fct, elapsed)
                reply = self._decide(key, e, ver, pat, cols) if cols is not None else None
                reply = self._broadcast(reply)
                new = self._accept(key, reply) if reply is not None else None
                with self.cv:
                    if new is not None:
                        st.pending.append(new)
                    st.replied = e
                    self.cv.notify_all()
        except BaseException as exc:  # surfaced on the training thread
            with self.cv:
                self.error = exc
                self.cv.notify_all()

    # The control group is a bare Gloo group (never registered with
    # torch.distributed), so it is driven through its own methods with
    # fixed-size tensors: FCTs as one float64 row per rank, NaN where the
    # rank received no such flow, the reply as a header then its bytes.
    def _gather(self, nflows: int, fct: Dict[int, float], elapsed: float) -> Optional[np.ndarray]:
        row = torch.full((nflows + 1,), float("nan"), dtype=torch.float64)
        if fct:
            row[torch.tensor(list(fct.keys()), dtype=torch.int64)] = torch.tensor(list(fct.values()), dtype=torch.float64)
        row[nflows] = elapsed
        leader = self.rank == self.cfg.leader
        outs = [[torch.empty_like(row) for _ in range(self.size)]] if leader else []
        opts = dist.GatherOptions()
        opts.rootRank = self.cfg.leader
        self.group.gather(outs, [row], opts).wait()
        return torch.stack(outs[0]).numpy() if leader else None

    def _broadcast(self, reply: Optional[Tuple[int, int, bytes]]) -> Optional[Tuple[int, int, bytes]]:
        head = torch.zeros(4, dtype=torch.int64)
        if reply is not None:
            head[:] = torch.tensor([1, reply[0], reply[1], len(reply[2])])
        opts = dist.BroadcastOptions()
        opts.rootRank = self.cfg.leader
        self.group.broadcast([head], opts).wait()
        if int(head[0]) == 0:
            return None
        body = torch.frombuffer(bytearray(reply[2]), dtype=torch.uint8) if reply is not None else torch.empty(int(head[3]), dtype=torch.uint8)
        self.group.broadcast([body], opts).wait()
        return int(head[1]), int(head[2]), bytes(body.numpy().tobytes())

    def _accept(self, key: Key, reply: Tuple[int, int, bytes]) -> Optional[Tuple[int, int, Pattern]]:
        """Every rank checks the pattern it was sent; it is used only when
        every rank accepted it, else all keep the old one (and the leader's
        tuner restarts from the pattern in force)."""
        eff, ver, raw = reply
        pat, why = None, ""
        try:
            pat = self.layout(raw)
        except Exception as exc:  # a refused pattern is not an error of the job
            why = str(exc)
        ok = torch.tensor([1 if pat is not None else 0], dtype=torch.int64)
        opts = dist.AllreduceOptions()
        opts.reduceOp = dist.ReduceOp.MIN
        self.group.allreduce([ok], opts).wait()
        if int(ok[0]) == 1:
            return eff, ver, pat
        st = self.keys[key]
        st.refused += 1
        log.warning("react_torch: rank %d: pattern version %d for %s refused (%s); keeping version %d", self.rank, ver, key, why or "refused by another rank", st.version)
        t = self.tuners.pop(key, None)
        if t is not None:
            t.close()
        self.versions_sent.pop(key, None)
        return None

    def _log(self, key: Key):
        """The FCT log of a key: one file per key, since react replay reads
        one collective's epochs in order."""
        if not self.cfg.fct_log or self.rank != self.cfg.leader:
            return None
        f = self.logs.get(key)
        if f is None:
            f = self.logs[key] = open(log_path(self.cfg.fct_log, key), "w")
        return f

    def _decide(self, key: Key, e: int, ver: int, p: Pattern, cols: np.ndarray) -> Optional[Tuple[int, int, bytes]]:
        st = self.keys[key]
        # every flow has one receiver: its row holds the FCT, the others NaN
        fct = np.nan_to_num(np.fmax.reduce(cols[:, :-1], axis=0), nan=0.0)
        elapsed = float(np.fmax.reduce(cols[:, -1]))
        if self.cfg.test_slow_rank >= 0:
            slow = p.dst == self.cfg.test_slow_rank
            fct[slow] *= 4
            elapsed = 0.0  # let the tuner take the critical path of the inflated FCTs
        # The tuner sees (and the log records) an epoch once the key is
        # tuned and every flow was timed; an epoch that still ran the old
        # version after the tuner's switch epoch is skipped (only when we
        # switched later than the tuner asked).
        sent = self.versions_sent.get(key)
        if e + 1 < self.cfg.min_calls or not st.tuned or not (fct > 0).all():
            return None
        if sent is not None and ver < sent[0] and e >= sent[1]:
            return None
        self._write_log(key, e, ver, p, fct, elapsed)
        if not self.cfg.tune:
            return None
        t = self.tuners.get(key)
        if t is None:
            # a tuner numbers its patterns from 0; ours continue from the version in force
            t = self.tuners[key] = _lib.Tuner(p.raw, key[2] * _itemsize(key[1]), json.dumps(self.cfg.tuner_json()))
            self.base[key] = ver
        t.submit(fct_batch(e, ver - self.base[key], fct, elapsed))
        d = t.decision()
        if d is None:
            return None
        tver, eff, raw = d
        self.versions_sent[key] = (tver + self.base[key], eff)
        return max(eff, e + self.cfg.Lag), tver + self.base[key], raw

    def _write_log(self, key: Key, e: int, ver: int, p: Pattern, fct: np.ndarray, elapsed: float) -> None:
        out = self._log(key)
        if out is None:
            return
        nbytes = key[2] * _itemsize(key[1])
        for f in range(p.nflows):
            out.write(json.dumps({"epoch": e, "version": ver, "flow": f, "chunk": int(p.chunk[f]), "step": int(p.step[f]), "src": int(p.src[f]),
                                  "dst": int(p.dst[f]), "bytes": float(p.fraction[f]) * nbytes, "fct": float(fct[f])}) + "\n")
        if elapsed > 0:  # 0 under the test hook: the tuner then uses the critical path
            out.write(json.dumps({"epoch": e, "version": ver, "elapsed": elapsed}) + "\n")
        out.flush()


def log_path(base: str, key: Key) -> str:
    """Where REACT_FCT_LOG=base puts a key's log: base.OP.DTYPE.NUMEL[.rootR].jsonl."""
    op, dtype, numel, root = key
    return f"{base}.{op}.{dtype}.{numel}" + (f".root{root}" if root >= 0 else "") + ".jsonl"


def _itemsize(dtype: str) -> int:
    import torch

    return torch.empty(0, dtype=getattr(torch, dtype.replace("torch.", ""))).element_size()
