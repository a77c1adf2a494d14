"""Hierarchical collectives: hosts with several ranks.

A collective of a group whose hosts run several ranks each runs in three
phases, as NCCL's do across nodes: inside each host on the inner backend's
own collectives over a per-host group (NCCL over NVLink, Gloo on CPU); then
across hosts, where local rank i of every host (rail i) runs the
inter-host pattern over the hosts on its shard, all rails at once; then
inside each host again. Only the inter-host pattern is a pattern, over
hosts, and only it is timed and tuned: the group keeps one key (a shard of
the call), one control plane and one tuner for all rails, every rail runs
the key's pattern in force, and the leader sees each flow's slowest rail.
A swap moves a host with all its rails.

Phases per op (n elements, R rails, shard S = ceil(n / R)):
  allreduce      host reduce-scatter into R shards; rail allreduce of the
                 shard; host all-gather of the shards
  reduce         host reduce-scatter; rail reduce to the root's host; the
                 root's host all-gathers
  broadcast      the root's host broadcasts; rail broadcast of the shard
                 from the root's host; the other hosts all-gather
  allgather      host all-gather of the ranks' pieces into the host's block;
                 rail allgather of shard i of every host's block; host
                 all-gather of the rails' results
  reducescatter  host reduce-scatter of the input arranged by host;
                 rail reduce-scatter over hosts; host all-gather of the host's
                 block
Uneven hosts: R is the smallest host's rank count; a host's ranks past R
take part in its host phases only.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Callable, List, Optional

import torch
import torch.distributed as dist

from .executor import combine
from .ops import AVG, BAND, BOR, BXOR, MAX, MIN, PRODUCT, SUM, redop
from .hosts import Layout

# What Gloo reduces itself (measured on 2 ranks, torch 2.15): every other
# (dtype, op) runs as a byte all-gather and a local reduction in rank order.
_GLOO_REDUCE = {torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int32, torch.int64, torch.uint8}
# Gloo's _reduce_scatter_base sums whatever reduce op it is asked for on
# torch 2.8 (MIN, MAX and PRODUCT included; 2.15 honours the op; the
# versions between are not checked): there only a sum goes to it.
_GLOO_RS_ANY_OP = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 14)

_GLOO_OPS = {SUM: dist.ReduceOp.SUM, PRODUCT: dist.ReduceOp.PRODUCT, MIN: dist.ReduceOp.MIN, MAX: dist.ReduceOp.MAX,
             BAND: dist.ReduceOp.BAND, BOR: dist.ReduceOp.BOR, BXOR: dist.ReduceOp.BXOR}


def _bytes(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.uint8) if t.dtype != torch.uint8 else t


class HostGroup:
    """The inner backend's collectives among the ranks of one host."""

    def __init__(self, store, host: int, local: int, size: int, timeout: timedelta, whole=None):
        """whole: the group's own inner groups (gloo, nccl getter) when this
        host holds every rank of the group."""
        self.local, self.size = local, size
        self._store, self._host, self._timeout = store, host, timeout
        self._whole = whole
        self._gloo = None
        if size > 1:
            self._gloo = whole[0] if whole else dist.ProcessGroupGloo(dist.PrefixStore(f"react/host{host}", store), local, size, timeout)
        self._nccl = None

    def _pg(self, t: torch.Tensor):
        if t.device.type == "cuda":
            if self._whole:
                return self._whole[1](t)
            if self._nccl is None:
                self._nccl = dist.ProcessGroupNCCL(dist.PrefixStore(f"react/host{self._host}/nccl", self._store), self.local, self.size, self._timeout)
            return self._nccl
        return self._gloo

    def _native(self, t: torch.Tensor, name: str) -> bool:
        if t.device.type == "cuda":
            return name in _GLOO_OPS and t.dtype != torch.bool and not (t.is_complex() and name != SUM)
        if t.is_complex():
            return name == SUM
        return t.dtype in _GLOO_REDUCE and (name in (SUM, PRODUCT, MIN, MAX) or (name in (BAND, BOR, BXOR) and not t.dtype.is_floating_point))

    def agree(self, digest: int) -> bool:
        """Whether every rank of the host called what this one did (digest:
        Ledger.digest of its call): one small MAX allreduce of (d, -d), on
        Gloo whatever the data's device, before any host phase moves data.
        Gloo's collectives carry no tags: a mismatched host phase would
        combine garbage, or abort the process on a longer message."""
        if self.size == 1:
            return True
        v = torch.tensor([digest, -digest], dtype=torch.int64)
        o = dist.AllreduceOptions()
        o.reduceOp = dist.ReduceOp.MAX
        self._gloo.allreduce([v], o).wait()
        return int(v[0]) == digest and -int(v[1]) == digest

    def allgather(self, mine: torch.Tensor) -> torch.Tensor:
        """Every local rank's mine, in local rank order, as one tensor."""
        if self.size == 1:
            return mine.clone()
        out = torch.empty(self.size * mine.numel(), dtype=mine.dtype, device=mine.device)
        self._pg(mine)._allgather_base(_bytes(out), _bytes(mine.contiguous())).wait()
        return out

    def broadcast(self, t: torch.Tensor, src: int) -> None:
        if self.size > 1:
            o = dist.BroadcastOptions()
            o.rootRank = src
            self._pg(t).broadcast([_bytes(t)], o).wait()

    def reduce_scatter(self, inp: torch.Tensor, name: str) -> torch.Tensor:
        """Part `local` of size parts of inp, reduced over the host."""
        part = inp.numel() // self.size
        if self.size == 1:
            return inp.clone()
        if self._native(inp, name) and (name == SUM or _GLOO_RS_ANY_OP or inp.device.type == "cuda"):
            out = torch.empty(part, dtype=inp.dtype, device=inp.device)
            o = dist.ReduceScatterOptions()
            o.reduceOp = _GLOO_OPS[name]
            self._pg(inp)._reduce_scatter_base(out, inp, o).wait()
            return out
        every = self.allgather(inp).view(self.size, self.size, part)[:, self.local]
        acc = every[0].clone()
        for i in range(1, self.size):
            combine(acc, every[i], name)
        return acc


class RailGroup:
    """The inner backend's point-to-point transfers among rail i's ranks
    (local rank i of every host; rank = host), where the patterns run."""

    def __init__(self, store, i: int, host: int, hosts: int, timeout: timedelta, global_ranks: List[int]):
        self.global_ranks = global_ranks
        self._store, self._i, self._host, self._hosts, self._timeout = store, i, host, hosts, timeout
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore(f"react/rail{i}", store), host, hosts, timeout)
        self._nccl = None

    def pg(self, t: torch.Tensor):
        if t.device.type == "cuda":
            if self._nccl is None:
                self._nccl = dist.ProcessGroupNCCL(dist.PrefixStore(f"react/rail{self._i}/nccl", self._store), self._host, self._hosts, self._timeout)
            return self._nccl
        return self._gloo


@dataclasses.dataclass
class Hier:
    """One rank's part of a hierarchical group: its host group and, if its
    local rank is below the rail count, its rail."""

    layout: Layout
    rank: int
    host: HostGroup
    rail: Optional[RailGroup]  # None past the rails or on one host
    call: Callable  # backend._pattern_call: one epoch of a key's pattern over hosts
    check: Optional[Callable]
    peers: List[int]  # the group ranks of this rank's host, this one's excepted

    _salt: int = dataclasses.field(default=0, init=False)  # the current call's (run)

    @property
    def h(self) -> int:
        return self.layout.host(self.rank)

    @property
    def R(self) -> int:
        return self.layout.rails

    @property
    def H(self) -> int:
        return len(self.layout.hosts)

    def _across(self, op: str, part: torch.Tensor, numel: int, name: str = SUM, root_host: int = -1) -> None:
        """The inter-host pattern on part. Every rank of the group takes part
        in the key's epoch (the control plane counts calls on every rank);
        a rank on no rail moves nothing. The call's salt is in the rail's
        tags: hosts that called different things never exchange data."""
        if self.H > 1:
            salt = self._salt
            self.call(op, part, numel, part if self.rail is not None else None, name, root_host, rail=self.rail, check=lambda st: salt)

    def run(self, op: str, t: torch.Tensor, numel: int, work: torch.Tensor, reduce: str, root: int, ledger, salt: int) -> None:
        """Runs one collective with the flat pattern's contract on work
        (backend._run): the allreduce's work ends reduced, the allgather's
        buffer (this rank's piece in place) ends whole, the reducescatter's
        ends with this rank's block reduced, the broadcast's ends the root's,
        the reduce's ends reduced on the root. ledger (agree.Ledger) has
        begun the call: its digest is checked across the host before the
        host phases, and salt (begin's) goes into the rails' tags."""
        dtype = str(t.dtype).replace("torch.", "")
        if self.check is not None:
            self.check(op, dtype, numel, root, redop(op, reduce))
        if not self.host.agree(ledger.digest()):
            raise ledger.found(self.peers)
        self._salt = salt
        if numel == 0:
            return
        name = SUM if reduce == AVG else reduce
        getattr(self, "_" + op)(work, name, root)

    def _shards(self, n: int) -> int:
        return -(-n // self.R)

    def _reduced_shard(self, flat: torch.Tensor, name: str) -> torch.Tensor:
        """This local rank's shard of flat (R shards of S), reduced over the
        host; local ranks past R get a part they do not use."""
        n, S, L = flat.numel(), self._shards(flat.numel()), self.host.size
        buf = torch.zeros(L * S, dtype=flat.dtype, device=flat.device)
        buf[:n].copy_(flat)
        return self.host.reduce_scatter(buf, name)

    def _allreduce(self, work: torch.Tensor, name: str, root: int) -> None:
        n = work.numel()
        part = self._reduced_shard(work, name)
        self._across("allreduce", part, part.numel(), name)
        work.copy_(self.host.allgather(part)[:n])

    def _reduce(self, work: torch.Tensor, name: str, root: int) -> None:
        n = work.numel()
        rh = self.layout.host(root)
        part = self._reduced_shard(work, name)
        self._across("reduce", part, part.numel(), name, rh)
        if self.h == rh:
            whole = self.host.allgather(part)
            if self.rank == root:
                work.copy_(whole[:n])

    def _broadcast(self, work: torch.Tensor, name: str, root: int) -> None:
        n = work.numel()
        rh = self.layout.host(root)
        if self.h == rh:
            self.host.broadcast(work, self.layout.local(root))
        if self.H == 1:
            return
        S = self._shards(n)
        part = torch.zeros(S, dtype=work.dtype, device=work.device)
        i = self.host.local
        if self.h == rh and i < self.R:
            lo, hi = min(i * S, n), min((i + 1) * S, n)
            part[: hi - lo].copy_(work[lo:hi])
        self._across("broadcast", part, S, SUM, rh)
        if self.h != rh:
            work.copy_(self.host.allgather(part)[:n])

    def _block(self) -> int:
        return max(len(rs) for rs in self.layout.hosts)

    def _allgather(self, buf: torch.Tensor, name: str, root: int) -> None:
        """buf holds N pieces of m, this rank's at its rank's offset."""
        N = sum(len(rs) for rs in self.layout.hosts)
        m = buf.numel() // N
        L, R, H = self.host.size, self.R, self.H
        mine = buf[self.rank * m : (self.rank + 1) * m]
        block = self.host.allgather(mine)  # this host's pieces, local order
        B = self._block() * m
        S = self._shards(B)
        rail = torch.zeros(H * S, dtype=buf.dtype, device=buf.device)
        i = self.host.local
        if i < R:
            lo, hi = min(i * S, block.numel()), min((i + 1) * S, block.numel())
            rail[self.h * S : self.h * S + hi - lo].copy_(block[lo:hi])
        self._across("allgather", rail, H * S)
        every = self.host.allgather(rail).view(L, H, S)[:R]  # [rail, host, shard]
        for k, rs in enumerate(self.layout.hosts):
            blk = every[:, k].reshape(-1)
            for l, r in enumerate(rs):
                buf[r * m : (r + 1) * m].copy_(blk[l * m : (l + 1) * m])

    def _reducescatter(self, work: torch.Tensor, name: str, root: int) -> None:
        """work holds N blocks of m; this rank's block ends reduced."""
        N = sum(len(rs) for rs in self.layout.hosts)
        m = work.numel() // N
        L, R, H = self.host.size, self.R, self.H
        B = self._block() * m
        S = self._shards(B)
        by_host = torch.zeros(H, R * S, dtype=work.dtype, device=work.device)
        for k, rs in enumerate(self.layout.hosts):
            for l, r in enumerate(rs):
                by_host[k, l * m : (l + 1) * m].copy_(work[r * m : (r + 1) * m])
        arranged = torch.zeros(L, H, S, dtype=work.dtype, device=work.device)  # [rail, host, shard]
        arranged[:R].copy_(by_host.view(H, R, S).permute(1, 0, 2))
        part = self.host.reduce_scatter(arranged.view(-1), name)  # [host, shard] of my rail
        self._across("reducescatter", part, H * S, name)
        mine = part[self.h * S : (self.h + 1) * S] if self.host.local < R else part[:S]
        block = self.host.allgather(mine.contiguous())[: R * S]
        i = self.host.local
        work[self.rank * m : (self.rank + 1) * m].copy_(block[i * m : (i + 1) * m])
