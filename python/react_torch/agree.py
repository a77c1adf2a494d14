"""What the ranks of a react group must agree on, checked across ranks:
the settings, once when the group is made, and every collective call.

Calls: a rank that calls another collective (float32 here, int32 there; or
one rank skipping a call) would otherwise exchange the wrong bytes. Gloo
silently combines a shorter message with garbage and aborts the process on a
longer one. Two checks, both raising on every rank one sentence that names
the calls and the ranks:

- Ledger (always on, CPU patterns): every call's signature (group call
  number, op, dtype, element count, root, reduce op, the key's epoch and
  pattern version) is hashed into the tags of its point-to-point messages
  (in a hierarchical group, the rails'; a host's ranks first compare a
  digest of their call, since its host phases are Gloo collectives).
  Gloo matches a receive only with a send of the same tag, so a message of
  another call is never received, let alone combined; the ranks of such a
  call wait for each other, and only then (a call stuck for STUCK_S) does
  each publish its recent signatures in the group's store and compare them
  with its peers'. A call that matches costs nothing but the hash.
- CallCheck (REACT_CHECK_CALLS=1, or TORCH_DISTRIBUTED_DEBUG=DETAIL): before
  a call posts its first transfer every rank sends its signature to every
  other; nothing of a mismatched call moves, not even between the ranks
  that agree. It costs one round of small messages per call (measured in
  tests/python/bench_check.py), and covers what the tags cannot: NCCL's
  transfers.

A signature's numbers, its hash and the sentences that name calls are
libreact's (internal/agree), the same on every rank whatever torch it runs.
"""

from __future__ import annotations

import collections
import json
import logging
import threading
import time
from typing import Callable, Deque, Dict, Optional, Sequence, Tuple

import torch
import torch.distributed as dist

from . import _lib, config

log = logging.getLogger("react_torch")

_AGREE_BYTES = 8192  # each rank's settings report, JSON, fixed size for the gather

# The call check's tag on the data group (only the collective thread uses
# its point-to-point transfers, in call order; a check's transfers have all
# completed before the call's data moves, so a data segment's tag of the
# same value cannot take one). Not the control group: a point-to-point
# receive there waits behind the control thread's exchanges (it deadlocked).
CHECK_TAG = 1 << 30
# Up to this many ranks the signatures go straight to every peer (one hop);
# beyond it a digest goes through one small allreduce (2(n-1) hops, but two
# messages a rank instead of n-1).
DIRECT_MAX = 32


class MismatchError(RuntimeError):
    """The ranks of a group called different collectives; nothing of the
    call was sent or combined."""


def settings(cfg: config.Config, size: int, ctrl: Optional[dist.ProcessGroup]) -> None:
    """Checks the settings on every rank before a group is used: every
    rank's settings reach every rank over the control group, and libreact
    says what is wrong with them (a bad REACT_LAG, a leader out of range,
    ranks that differ in a setting they must share), so that every rank
    fails at creation with the same sentence, instead of the leader failing
    at its first tuned call and the others seeing "Connection closed"."""
    mine = json.dumps(cfg.values).encode()
    if size == 1:
        every = [mine]
    else:
        cap = _AGREE_BYTES - 4
        n = len(mine) if len(mine) <= cap else cap + 1  # too long: every rank says so
        buf = torch.zeros(_AGREE_BYTES, dtype=torch.uint8)
        buf[:4] = torch.tensor(list(n.to_bytes(4, "little")), dtype=torch.uint8)
        if n <= cap:
            buf[4 : 4 + n] = torch.frombuffer(bytearray(mine), dtype=torch.uint8)
        outs = [torch.empty_like(buf) for _ in range(size)]
        ctrl.allgather([outs], [buf]).wait()
        every = []
        for r, o in enumerate(outs):
            b = o.numpy().tobytes()
            n = int.from_bytes(b[:4], "little")
            if n > cap:
                raise ValueError(f"react_torch: rank {r}'s settings take more than {cap} bytes of JSON")
            every.append(b[4 : 4 + n])
    why = _lib.settings_agree(b"[" + b",".join(every) + b"]", size)
    if why:
        raise ValueError("react_torch: " + why)


class CallCheck:
    """Compares every rank's call signature before the call moves data.
    After a mismatch the group is unusable: its ranks' call sequences have
    diverged, and nothing says where they meet again."""

    def __init__(self, pg: dist.ProcessGroup, rank: int, size: int):
        self.pg, self.rank, self.size = pg, rank, size
        self.seq = 0  # calls checked on this group, the same on every rank when they agree
        self.failed: Optional[str] = None
        self.peers = [r for r in range(size) if r != rank]
        self.every = [torch.empty(_lib.CALL_FIELDS, dtype=torch.int64) for _ in range(size)]  # reused: a check costs no allocation
        self.sign = _lib.Signer()

    def _start(self, op: str, dtype: str, numel: int, root: int = -1, reduce: str = "", epoch: int = -1, version: int = -1):
        if self.failed is not None:
            raise MismatchError(f"react_torch: this react group is unusable after an earlier mismatch or failed call check: {self.failed}")
        fields, _, h = self.sign(self.seq, op, dtype, numel, root, reduce, epoch, version)
        sig = torch.tensor(fields, dtype=torch.int64)
        self.seq += 1
        if self.size > DIRECT_MAX:
            # one small allreduce: MAX of (h, -h) is (h, -h) on every rank
            # exactly when every rank's digest is h (min = max)
            both = torch.tensor([h, -h], dtype=torch.int64)
            opts = dist.AllreduceOptions()
            opts.reduceOp = dist.ReduceOp.MAX
            return sig, None, [self.pg.allreduce([both], opts)], [], (both, h)
        every = self.every
        every[self.rank] = sig
        sends = [self.pg.send([sig], r, CHECK_TAG) for r in self.peers]
        recvs = [self.pg.recv([every[r]], r, CHECK_TAG) for r in self.peers]
        return sig, every, recvs, sends, None

    def _finish(self, pending) -> None:
        sig, every, recvs, sends, digest = pending
        peers = self.peers if digest is None else [None]
        for works, how in ((recvs, "receiving from"), (sends, "sending to")):
            for r, w in zip(peers, works):
                try:
                    w.wait()
                except Exception as e:  # a dead or hung peer: say which call and which peer
                    what = _lib.call_sentence({self.rank: sig.tolist()}, self.size)
                    self.failed = f"{what}: its call check failed"
                    who = f"{how} rank {r}" if r is not None else "exchanging with the other ranks"
                    raise RuntimeError(f"react_torch: {what}: comparing calls: {who} failed: {e}") from e
        if digest is not None:
            both, h = digest
            if int(both[0]) == h and int(both[1]) == -h:
                return
            every = [torch.empty_like(sig) for _ in range(self.size)]  # only now: to name them
            self.pg.allgather([every], [sig]).wait()
        elif all(torch.equal(e, sig) for e in every):
            return
        self.failed = _lib.call_sentence({r: e.tolist() for r, e in enumerate(every)}, self.size)
        raise MismatchError("react_torch: the ranks called different collectives, so none of this call's data was combined: " + self.failed)

    def __call__(self, op: str, dtype: str, numel: int, root: int = -1, reduce: str = "", epoch: int = -1, version: int = -1) -> None:
        """Raises MismatchError, on every rank, unless every rank calls this."""
        self._finish(self._start(op, dtype, numel, root, reduce, epoch, version))


# A call that runs this long has its rank publish its recent signatures and
# compare them with its peers' (a matching call that is merely slow costs a
# few store operations a second while it lasts).
STUCK_S = 1.0
POLL_S = 0.25  # how often a stuck call looks again, at first ...
POLL_MAX_S = 2.0  # ... and at most, once it has waited long
FOUND_S = 5.0  # how long a rank that saw its host's calls differ waits for its peers' signatures (Ledger.found)
HISTORY = 16  # signatures a rank publishes: its current call and those before
LINGER_S = 5.0  # how long a failed rank waits for every rank to have read the verdict (Ledger.linger)
_GATHER_S = 2.0  # how long a rank that found a mismatch waits for every rank's signatures, to name them all


class Ledger:
    """A rank's recent calls on a group, and the watchdog that compares them
    with its peers' when a call is stuck. The collective thread calls begin
    and end around every call; the watchdog thread, started at the first
    call, does nothing while calls finish within STUCK_S.

    On a mismatch the first rank to find it writes one sentence to the
    store (compare-and-set: every rank raises the same one) and closes its
    data and control groups (kill): its own waits end at once, its peers'
    waits on it end with "connection closed", and each of them then reads
    the sentence from the store and closes its groups in turn."""

    def __init__(self, store, rank: int, size: int, kill: Callable[[], None]):
        self._shared, self._own = store, None
        self.rank, self.size = rank, size
        self.kill = kill  # closes this rank's data and control groups
        self.seq = 0
        self._digest = 0
        self.sign = _lib.Signer()  # on the collective thread
        self.calls: Deque[Tuple[int, ...]] = collections.deque(maxlen=HISTORY)
        self.peers: Sequence[int] = ()  # whom the current call exchanges with (set by the backend)
        self.current: Optional[Tuple[int, float]] = None  # (seq, start) while a call runs
        self.failed: Optional[str] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._cloning = threading.Lock()

    @property
    def store(self):
        """The group's store through a connection of the ledger's own: a
        store wait on torch's client holds its lock as long as it waits
        (group creation, a user's store.wait), and finding a mismatch must
        not wait for it. Made by the watchdog when it starts (the first
        call), while the store's host is surely up: a connection made after
        that host died would retry for the store's whole timeout."""
        with self._cloning:
            if self._own is None:
                try:
                    self._own = self._shared.clone()
                except Exception:  # a store that cannot be cloned: share it
                    self._own = self._shared
            return self._own

    def begin(self, op: str, dtype: str, numel: int, root: int = -1, reduce: str = "", epoch: int = -1, version: int = -1) -> int:
        """Records a call and returns the salt of its tags; raises on a group
        that has seen a mismatch."""
        if self.failed is not None:
            raise MismatchError(f"react_torch: this react group is unusable after an earlier mismatch: {self.failed}")
        sig, salt, self._digest = self.sign(self.seq, op, dtype, numel, root, reduce, epoch, version)
        self.calls.append(sig)
        self.current = (self.seq, time.monotonic())
        self.seq += 1
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="react-calls", daemon=True)
            self._thread.start()
        return salt

    def digest(self) -> int:
        """The current call's digest (begin's)."""
        return self._digest

    def end(self) -> None:
        self.current = None

    def found(self, peers: Sequence[int]) -> "MismatchError":
        """A mismatch that a check outside the tags saw (a host's ranks
        comparing digests before their host phases): publishes this rank's
        calls, names them against its peers' as they publish theirs (FOUND_S
        at most), fails the group as the watchdog does and waits for every
        rank to read the verdict. Returns the error to raise."""
        self.peers = peers
        until = time.monotonic() + FOUND_S
        try:
            self.store.set(_ENTRY % self.rank, self._entry())
            while self.failed is None:
                if self.store.check([_VERDICT]):
                    self._fail(self.store.get(_VERDICT).decode())
                    break
                text = self._compare()
                if text is None and time.monotonic() > until:
                    text = f"rank {self.rank}'s call {self.calls[-1][0]} differs from its host's other ranks' (they did not publish theirs)"
                if text is not None:
                    self._fail(self.store.compare_set(_VERDICT, "", text).decode())
                    break
                time.sleep(POLL_S / 5)
        except Exception as e:  # the store went away: this rank's finding is all there is
            self._fail(f"rank {self.rank}'s call {self.calls[-1][0]} differs from its host's other ranks' ({e})")
        self.linger()
        return self.error()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        """Around a call (`with ledger:`): ends it, and turns a failed
        transfer into the mismatch a peer found (it closed its connections)."""
        self.end()
        if isinstance(exc, Exception) and not isinstance(exc, MismatchError) and self.verdict(exc) is not None:
            self.linger()
            raise self.error() from exc

    def close(self) -> None:
        self._stop.set()

    def verdict(self, cause: Optional[BaseException] = None) -> Optional[str]:
        """The mismatch this group failed of, if any: this rank's, or, when
        cause (a failed transfer) says a peer closed its connections, one
        that peer wrote to the store (then this rank closes its groups too).
        A timeout is never looked up: a frozen store host would hold the
        error for the store's timeout again; nor through a connection made
        now (the peer that closed may be the store's host, dead)."""
        if self.failed is None and cause is not None and self._own is not None and any(w in str(cause) for w in _CLOSED):
            try:
                if self.store.check([_VERDICT]):
                    self._fail(self.store.get(_VERDICT).decode())
            except Exception:  # the store is gone too: no verdict to read
                pass
        return self.failed

    def error(self) -> "MismatchError":
        return MismatchError("react_torch: the ranks called different collectives; no data from a rank with another call "
                             "was combined: " + str(self.failed))

    def _fail(self, text: str) -> None:
        if self.failed is None:
            self.failed = text
            log.error("react_torch: rank %d: %s", self.rank, text)
            self.kill()
            try:
                self.store.add(_READ, 1)
            except Exception:  # the store is gone: nobody left to tell
                pass

    def linger(self) -> None:
        """Before this rank raises the mismatch (and its program perhaps
        exits, taking the store with it when it hosts it), waits until every
        rank has read the verdict, LINGER_S at most: ranks that wait on each
        other, not on this one, learn of it only from the store."""
        until = time.monotonic() + LINGER_S
        try:
            while self.store.add(_READ, 0) < self.size and time.monotonic() < until:
                time.sleep(0.05)
        except Exception:
            pass

    def _entry(self) -> bytes:
        return json.dumps([list(c) for c in tuple(self.calls)]).encode()  # tuple(): one step under the GIL

    def _read(self, r: int) -> Dict[int, Tuple[int, ...]]:
        """Rank r's published signatures by call number ({} if none)."""
        k = _ENTRY % r
        if not self.store.check([k]):
            return {}
        return {int(c[0]): tuple(int(x) for x in c) for c in json.loads(self.store.get(k))}

    def _watch(self) -> None:
        try:
            _ = self.store  # the connection, made while the store's host is surely up
        except Exception as e:  # no store to compare calls through
            log.warning("react_torch: rank %d: no connection to the store to compare stuck calls through: %s", self.rank, e)
            return
        published = -1
        while True:
            cur = self.current
            waited = time.monotonic() - cur[1] if cur is not None else 0.0
            if self._stop.wait(min(POLL_MAX_S, max(POLL_S, waited / 10))):
                return
            cur = self.current
            if cur is None or time.monotonic() - cur[1] < STUCK_S or self.failed is not None:
                continue
            try:
                if published != cur[0]:
                    self.store.set(_ENTRY % self.rank, self._entry())
                    published = cur[0]
                if self.store.check([_VERDICT]):
                    self._fail(self.store.get(_VERDICT).decode())
                else:
                    found = self._compare()
                    if found is not None:
                        self._fail(self.store.compare_set(_VERDICT, "", found).decode())
            except Exception as e:  # the store went away (its host exited): nothing to compare with
                log.warning("react_torch: rank %d: cannot compare a stuck call with the other ranks' any more: %s", self.rank, e)
                return

    def _compare(self) -> Optional[str]:
        """The sentence for the first call this rank and one of its peers
        made differently, naming every rank that published its call, or
        None."""
        mine = {c[0]: c for c in tuple(self.calls)}
        first = None
        for r in self.peers:
            for s, c in self._read(r).items():
                if s in mine and mine[s] != c and (first is None or s < first):
                    first = s
        if first is None:
            return None
        calls: Dict[int, Sequence[int]] = {self.rank: mine[first]}
        until = time.monotonic() + _GATHER_S
        while True:
            for r in range(self.size):
                if r not in calls:
                    c = self._read(r).get(first)
                    if c is not None:
                        calls[r] = c
            if len(calls) == self.size or time.monotonic() > until:
                break
            time.sleep(POLL_S)
        return _lib.call_sentence(calls, self.size)


# What Gloo says when a peer closed its connections (ReactBackend._kill).
_CLOSED = ("Connection closed", "pair closure", "Connection reset", "reset by peer", "Broken pipe")
_ENTRY = "react/calls/%d"
_VERDICT = "react/calls/mismatch"
_READ = "react/calls/read"  # ranks that have read the verdict
