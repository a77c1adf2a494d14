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
"""

from __future__ import annotations

import collections
import hashlib
import json
import logging
import struct
import threading
import time
from typing import Callable, Deque, Dict, List, Optional, Sequence, Tuple

import torch
import torch.distributed as dist

from . import config, ops

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

# a signature numbers its op and reduce op by their place here
OPS = ops.OPS + ("barrier",)
REDUCE = ("",) + ops.REDUCE_OPS
_DTYPES: Dict[str, int] = {}
_NAMES: List[str] = []


def _dtype_code(name: str) -> int:
    """A dtype as a number that means the same on every rank: its index in
    torch's sorted dtype names."""
    if not _NAMES:
        _NAMES.extend(sorted({str(v).replace("torch.", "") for v in vars(torch).values() if isinstance(v, torch.dtype)}))
        _DTYPES.update((n, i) for i, n in enumerate(_NAMES))
    return _DTYPES.get(name, len(_NAMES))


class MismatchError(RuntimeError):
    """The ranks of a group called different collectives; nothing of the
    call was sent or combined."""


def _ranks(rs: Sequence[int], size: int) -> str:
    """"every rank", "rank 2" or "ranks 0, 3"."""
    if len(rs) == size and size > 1:
        return "every rank"
    return ("rank " if len(rs) == 1 else "ranks ") + ", ".join(map(str, rs))


def settings(cfg: config.Config, size: int, ctrl: Optional[dist.ProcessGroup]) -> None:
    """Checks the settings on every rank before a group is used: each
    rank's problems (a bad REACT_LAG, a leader out of range, ...) and the
    settings all ranks must share reach every rank over the control group,
    so that every rank fails at creation with the same sentence, instead of
    the leader failing at its first tuned call and the others seeing
    "Connection closed"."""
    mine = {"problems": config.validate(cfg, size), "shared": config.shared(cfg)}
    if size == 1:
        every = [mine]
    else:
        raw = json.dumps(mine).encode()[: _AGREE_BYTES - 4]
        buf = torch.zeros(_AGREE_BYTES, dtype=torch.uint8)
        buf[:4] = torch.tensor(list(len(raw).to_bytes(4, "little")), dtype=torch.uint8)
        buf[4 : 4 + len(raw)] = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
        outs = [torch.empty_like(buf) for _ in range(size)]
        ctrl.allgather([outs], [buf]).wait()
        every = []
        for o in outs:
            b = o.numpy().tobytes()
            every.append(json.loads(b[4 : 4 + int.from_bytes(b[:4], "little")]))
    why: Dict[str, List[int]] = {}
    for r, e in enumerate(every):
        for p in e["problems"]:
            why.setdefault(p, []).append(r)
    if why:
        raise ValueError("react_torch: invalid settings for a react group of %d ranks: %s" % (
            size, "; ".join(f"{_ranks(rs, size)}: {p}" for p, rs in why.items())))
    differ = []
    for k in mine["shared"]:
        vals: Dict[str, List[int]] = {}
        for r, e in enumerate(every):
            vals.setdefault(repr(e["shared"][k]), []).append(r)
        if len(vals) > 1:
            differ.append(f"{config.variable(k)} is " + ", ".join(f"{v} on {_ranks(rs, size)}" for v, rs in vals.items()))
    if differ:
        raise ValueError("react_torch: the ranks of a react group must share these settings: " + "; ".join(differ))


# Fields of a call signature, in order.
SEQ, OP, DTYPE, NUMEL, ROOT, REDOP, EPOCH, VERSION = range(8)


def fields(seq: int, op: str, dtype: str, numel: int, root: int, reduce: str, epoch: int, version: int) -> Tuple[int, ...]:
    """A call's signature as numbers that mean the same on every rank."""
    return (seq, OPS.index(op), _dtype_code(dtype), numel, root, REDUCE.index(reduce) if reduce in REDUCE else len(REDUCE), epoch, version)


def signature(seq: int, op: str, dtype: str, numel: int, root: int, reduce: str, epoch: int, version: int) -> torch.Tensor:
    return torch.tensor(fields(seq, op, dtype, numel, root, reduce, epoch, version), dtype=torch.int64)


def sentence(calls: Dict[int, Sequence[int]], size: int) -> str:
    """Ranks grouped by the call they made: "ranks 0, 1: allreduce ...;
    rank 2: ..." (calls: rank -> signature)."""
    groups: Dict[tuple, List[int]] = {}
    for r in sorted(calls):
        groups.setdefault(tuple(int(x) for x in calls[r]), []).append(r)
    return "; ".join(f"{_ranks(rs, size)}: {describe(s)}" for s, rs in groups.items())


def describe(s: Sequence[int]) -> str:
    """A signature as a sentence: "allreduce (sum) of 1000 float32, call 5
    on the group, epoch 4 of its key, pattern version 0"."""
    op = OPS[s[OP]] if 0 <= s[OP] < len(OPS) else f"op {s[OP]}"
    dtype = _NAMES[s[DTYPE]] if 0 <= s[DTYPE] < len(_NAMES) else f"dtype {s[DTYPE]}"
    red = f" ({REDUCE[s[REDOP]]})" if 0 < s[REDOP] < len(REDUCE) else ""
    root = f" from root {s[ROOT]}" if s[ROOT] >= 0 else ""
    what = "barrier" if op == "barrier" else f"{op}{red} of {s[NUMEL]} {dtype}{root}"
    key = f", epoch {s[EPOCH]} of its key, pattern version {s[VERSION]}" if s[EPOCH] >= 0 else ""
    return f"{what}, call {s[SEQ]} on the group{key}"


class CallCheck:
    """Compares every rank's call signature before the call moves data.
    After a mismatch the group is unusable: its ranks' call sequences have
    diverged, and nothing says where they meet again."""

    def __init__(self, pg: dist.ProcessGroup, rank: int, size: int):
        self.pg, self.rank, self.size = pg, rank, size
        self.seq = 0  # calls checked on this group, the same on every rank when they agree
        self.failed: Optional[str] = None
        self.peers = [r for r in range(size) if r != rank]
        self.every = [torch.empty(8, dtype=torch.int64) for _ in range(size)]  # reused: a check costs no allocation

    def _start(self, op: str, dtype: str, numel: int, root: int = -1, reduce: str = "", epoch: int = -1, version: int = -1):
        if self.failed is not None:
            raise MismatchError(f"react_torch: this react group is unusable after an earlier mismatch or failed call check: {self.failed}")
        sig = signature(self.seq, op, dtype, numel, root, reduce, epoch, version)
        self.seq += 1
        if self.size > DIRECT_MAX:
            # one small allreduce: MAX of (h, -h) is (h, -h) on every rank
            # exactly when every rank's digest is h (min = max)
            h = digest(sig.tolist())
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
                    self.failed = f"{describe(sig)}: its call check failed"
                    who = f"{how} rank {r}" if r is not None else "exchanging with the other ranks"
                    raise RuntimeError(f"react_torch: {describe(sig)}: comparing calls: {who} failed: {e}") from e
        if digest is not None:
            both, h = digest
            if int(both[0]) == h and int(both[1]) == -h:
                return
            every = [torch.empty_like(sig) for _ in range(self.size)]  # only now: to name them
            self.pg.allgather([every], [sig]).wait()
        elif all(torch.equal(e, sig) for e in every):
            return
        self.failed = sentence(dict(enumerate(every)), self.size)
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
SALT_BITS = 20  # of a signature's hash, in every tag (executor.tag: below CHECK_TAG)
LINGER_S = 5.0  # how long a failed rank waits for every rank to have read the verdict (Ledger.linger)
_GATHER_S = 2.0  # how long a rank that found a mismatch waits for every rank's signatures, to name them all


def salt(sig: Sequence[int]) -> int:
    """SALT_BITS of BLAKE2b of a signature: calls that differ give the same
    tags with probability 2^-20, and only then does their data meet."""
    d = hashlib.blake2b(struct.pack("<8q", *sig), digest_size=4).digest()
    return int.from_bytes(d, "little") & ((1 << SALT_BITS) - 1)


def digest(sig: Sequence[int]) -> int:
    """62 bits of BLAKE2b of a signature: equal digests mean equal calls (a
    collision has probability 2^-62). What a large group's ranks compare
    (CallCheck) and a host's ranks before their host phases (hier.py),
    where no tag carries the call."""
    d = hashlib.blake2b(struct.pack("<8q", *sig), digest_size=8).digest()
    return int.from_bytes(d, "little") >> 2


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
        self.calls: Deque[Tuple[int, ...]] = collections.deque(maxlen=HISTORY)
        self.peers: Sequence[int] = ()  # whom the current call exchanges with (set by the backend)
        self.current: Optional[Tuple[int, float]] = None  # (seq, start) while a call runs
        self.failed: Optional[str] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    @property
    def store(self):
        """The group's store through a connection of the ledger's own, made
        when first needed: a store wait on torch's client holds its lock as
        long as it waits (group creation, a user's store.wait), and finding
        a mismatch must not wait for it."""
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
        sig = fields(self.seq, op, dtype, numel, root, reduce, epoch, version)
        self.calls.append(sig)
        self.current = (self.seq, time.monotonic())
        self.seq += 1
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="react-calls", daemon=True)
            self._thread.start()
        return salt(sig)

    def digest(self) -> int:
        """The current call's digest (begin's)."""
        return digest(self.calls[-1])

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
                    text = f"rank {self.rank}'s call {self.calls[-1][SEQ]} differs from its host's other ranks' (they did not publish theirs)"
                if text is not None:
                    self._fail(self.store.compare_set(_VERDICT, "", text).decode())
                    break
                time.sleep(POLL_S / 5)
        except Exception as e:  # the store went away: this rank's finding is all there is
            self._fail(f"rank {self.rank}'s call {self.calls[-1][SEQ]} differs from its host's other ranks' ({e})")
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
        error for the store's timeout again."""
        if self.failed is None and cause is not None and any(w in str(cause) for w in _CLOSED):
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
        return {int(c[SEQ]): tuple(int(x) for x in c) for c in json.loads(self.store.get(k))}

    def _watch(self) -> None:
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
        mine = {c[SEQ]: c for c in tuple(self.calls)}
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
        return sentence(calls, self.size)


# What Gloo says when a peer closed its connections (ReactBackend._kill).
_CLOSED = ("Connection closed", "pair closure", "Connection reset", "reset by peer", "Broken pipe")
_ENTRY = "react/calls/%d"
_VERDICT = "react/calls/mismatch"
_READ = "react/calls/read"  # ranks that have read the verdict
