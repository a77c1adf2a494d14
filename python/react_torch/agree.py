"""What the ranks of a react group must agree on, checked across ranks:
the settings, once when the group is made, and every collective call,
before any of its data moves.

Calls: a rank that calls another collective (float32 here, int32 there; or
one rank skipping a call) would otherwise exchange the wrong bytes. Gloo
silently combines a shorter message with garbage and aborts the process on a
longer one. So before a call posts its first transfer, every rank sends its
call's signature (group call number, op, dtype, element count, root, reduce
op, the key's epoch and pattern version) to every other rank; a rank that
receives a different one raises, on every rank the same sentence naming
both calls and the ranks, and no data of the call has moved. It costs one
round of small messages per call (measured in tests/python/bench_check.py).
"""

from __future__ import annotations

import hashlib
import json
from typing import Dict, List, Optional, Sequence

import torch
import torch.distributed as dist

from . import config

_AGREE_BYTES = 8192  # each rank's settings report, JSON, fixed size for the gather

# The call check's tag on the data group (only the collective thread uses
# its point-to-point transfers, in call order): above every tag the
# executor uses (flow index * 64 + segment < 2^27 at ten.MaxRanks). Not the
# control group: a point-to-point receive there waits behind the control
# thread's exchanges (it deadlocked).
CHECK_TAG = 1 << 30
# Up to this many ranks the signatures go straight to every peer (one hop);
# beyond it a digest goes through one small allreduce (2(n-1) hops, but two
# messages a rank instead of n-1).
DIRECT_MAX = 32

OPS = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce", "barrier")
REDUCE = ("", "sum", "avg", "product", "min", "max", "band", "bor", "bxor")
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
    for k in config.AGREE:
        vals: Dict[str, List[int]] = {}
        for r, e in enumerate(every):
            vals.setdefault(repr(e["shared"][k]), []).append(r)
        if len(vals) > 1:
            differ.append(f"{config.variable(k)} is " + ", ".join(f"{v} on {_ranks(rs, size)}" for v, rs in vals.items()))
    if differ:
        raise ValueError("react_torch: the ranks of a react group must share these settings: " + "; ".join(differ))


# Fields of a call signature, in order.
SEQ, OP, DTYPE, NUMEL, ROOT, REDOP, EPOCH, VERSION = range(8)


def signature(seq: int, op: str, dtype: str, numel: int, root: int, reduce: str, epoch: int, version: int) -> torch.Tensor:
    return torch.tensor([seq, OPS.index(op), _dtype_code(dtype), numel, root, REDUCE.index(reduce) if reduce in REDUCE else len(REDUCE),
                         epoch, version], dtype=torch.int64)


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


def _digest(sig: torch.Tensor) -> int:
    """62 bits of BLAKE2b of a signature: equal digests mean equal calls
    (a collision has probability 2^-62)."""
    d = hashlib.blake2b(sig.numpy().tobytes(), digest_size=8).digest()
    return int.from_bytes(d, "little") >> 2


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
            h = _digest(sig)
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
        groups: Dict[tuple, List[int]] = {}
        for r, e in enumerate(every):
            groups.setdefault(tuple(int(x) for x in e), []).append(r)
        self.failed = "; ".join(f"{_ranks(rs, self.size)}: {describe(s)}" for s, rs in groups.items())
        raise MismatchError("react_torch: the ranks called different collectives, so none of this call's data was combined: " + self.failed)

    def __call__(self, op: str, dtype: str, numel: int, root: int = -1, reduce: str = "", epoch: int = -1, version: int = -1) -> None:
        """Raises MismatchError, on every rank, unless every rank calls this."""
        self._finish(self._start(op, dtype, numel, root, reduce, epoch, version))
