"""The `react` torch.distributed backend: a `dist.Backend` (c10d's Backend,
subclassed in Python) over inner Gloo (cpu) and NCCL (cuda) groups built
from the store it is handed. torch wraps it in its own ProcessGroup and
registers it for cpu and cuda, so everything that goes through a group's
backends (group names, destroying subgroups, batch_isend_irecv,
monitored_barrier, TORCH_DISTRIBUTED_DEBUG's wrapper) works as with Gloo.
Before torch 2.14 the same class is a ProcessGroup of its own (route.py).

AllReduce, AllGather, ReduceScatter, Broadcast, Reduce and Barrier run as
patterns (executor.py); everything else is delegated to the inner group and
logged once.
"""

from __future__ import annotations

import atexit
import gc
import logging
import os
import weakref
import time
from datetime import timedelta
from typing import Dict, List, Optional

import torch
import torch.distributed as dist

from . import _lib, agree, hier, hosts, route
from .collectives import Collectives
from .config import TEST_HOLD_S, Config, from_env, test_slow_rank
from .control import Control, KeyState
from .executor import Executor, close_pairs
from .ops import redop
from .pattern import Pattern, plan
from .reporting import Report
from .delegated import Delegated
from .lane import Lane
from .work import Work

log = logging.getLogger("react_torch")

_C10dBackend = torch._C._distributed_c10d.Backend


@route.adapt
class ReactBackend(Collectives, Delegated, route.BASE):
    """One react group's backend (before torch 2.14, its ProcessGroup).
    torch calls its methods with c10d's argument lists (and the old method
    names as well as the new)."""

    def __init__(self, store, rank: int, size: int, timeout: timedelta, cfg: Optional[Config] = None,
                 group_name: str = "", global_ranks: Optional[List[int]] = None):
        super().__init__(rank, size)
        self._rank, self._size = rank, size
        self._name, self._desc = group_name, ""
        self.global_ranks = list(global_ranks) if global_ranks else list(range(size))
        self.cfg = cfg or from_env()
        self._timeout = timeout
        self._store = store
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore("react/data", store), rank, size, timeout)
        self._nccl = None
        self._ctrl_pg = dist.ProcessGroupGloo(dist.PrefixStore("react/ctrl", store), rank, size, timeout) if size > 1 else None
        self._keys: Dict[tuple, KeyState] = {}
        self._plans: Dict[tuple, object] = {}
        self._patterns: Dict[bytes, Pattern] = {}
        self._delegated_logged = set()
        self._executors: Dict[int, Executor] = {}
        self._lane = Lane()  # runs the collectives in call order
        self._pid = os.getpid()  # a forked child must not use the group
        agree.settings(self.cfg, size, self._ctrl_pg)
        self._slow = test_slow_rank(size)  # the tests' congestion hook
        self._check = agree.CallCheck(self._gloo, rank, size) if size > 1 and self.cfg.check_calls else None
        self.layout = hosts.discover(store, rank, size, self.cfg.hosts) if size > 1 and self.cfg.hosts != "flat" else None
        self._hier = self._hierarchical(store) if self.layout is not None and self.layout.hier else None
        self._ledger = agree.Ledger(store, rank, size, self._kill) if size > 1 else None
        self._others = [r for r in range(size) if r != rank]
        # one host: nothing crosses a network, nothing to tune
        tuned = size > 1 and self.cfg.tune and not (self._hier is not None and len(self.layout.hosts) == 1)
        # a flat group on one host: its flows cross no fabric
        one_host = self._hier is None and self.layout is not None and len(self.layout.hosts) == 1
        self._control = Control(self.cfg, self._ctrl_pg, rank, size, self._decode, tuned, one_host,
                                [list(rs) for rs in self.layout.hosts] if self._hier is not None else None)
        _live.add(self)
        _held.add(self)

    def _hierarchical(self, store) -> hier.Hier:
        """This rank's host group and rail (hier.py). The group keeps one
        control plane and one tuner a key: its patterns span hosts, every
        rail runs the key's pattern in force, and the leader sees each
        flow's slowest rail (the control plane's MAX reduction keeps the largest time)."""
        lay, rank = self.layout, self._rank
        h, i = lay.host(rank), lay.local(rank)
        whole = (self._gloo, self._inner) if len(lay.hosts) == 1 else None
        host = hier.HostGroup(store, h, i, len(lay.hosts[h]), self._timeout, whole)
        rail = None
        if i < lay.rails and len(lay.hosts) > 1:
            rail = hier.RailGroup(store, i, h, len(lay.hosts), self._timeout, [self.global_ranks[r] for r in lay.rail(i)])
        log.info("react_torch: group %s rank %d: hierarchical over %s; host %d, local rank %d%s", self._name, rank,
                 lay.text, h, i, f", rail {i}" if rail is not None else "")
        return hier.Hier(lay, rank, host, rail, self._pattern_call, self._check, [r for r in lay.hosts[h] if r != rank])

    # ---- identity
    def getBackendName(self) -> str:
        return "react"

    def name(self) -> str:  # the ProcessGroup route's getBackendName
        return "react"

    # c10d's Python trampoline answers these C++ queries by looking up the
    # Python attribute of the same name, which without an override is the
    # binding itself: infinite recursion (batch_isend_irecv asks for
    # supports_coalescing). react splits, shrinks and coalesces nothing.
    supports_coalescing = property(lambda self: False)
    supports_splitting = property(lambda self: False)
    supports_shrinking = property(lambda self: False)
    supports_reconfigure = property(lambda self: False)
    supports_window = property(lambda self: False)
    _supports_time_estimate = property(lambda self: False)

    @property
    def options(self):
        if not route.BACKEND_ROUTE:
            raise AttributeError("options: a ProcessGroup-route react group has no c10d Backend options")
        return _C10dBackend.Options("react", self._timeout)

    def shutdown(self) -> None:
        """Runs what was called, then stops the control thread once it has
        done its share of every epoch's exchange (each rank's thread takes
        part in the same exchanges, so they finish together; a dead peer
        ends them within the group timeout). torch calls it from
        destroy_process_group, and _at_exit for a job that never did."""
        if os.getpid() != self._pid:
            return  # a forked child owns none of it
        _held.discard(self)
        self._lane.close()  # the ledger's watchdog still running: a mismatched call queued here must end
        if self._ledger is not None:
            self._ledger.close()
        self._control.close(self._timeout.total_seconds() + 10)
        for ex in self._executors.values():
            ex.close()
        self._executors.clear()

    def _release(self) -> None:
        """Drops this backend's own Gloo (and NCCL) groups, at exit after
        shutdown, so that they are destroyed while the interpreter still
        runs. Left to the interpreter's teardown, a Gloo group that has run
        collectives aborts the process ("terminate called without an active
        exception"): plain torch Gloo, 3 ranks under torchrun without
        destroy_process_group and two busy CPU loops beside, did in 8 of 20
        runs; react's one-host hierarchy, whose host phases are Gloo
        collectives, in 2 of 20."""
        self._gloo = self._ctrl_pg = self._nccl = self._check = None
        self._hier = None
        self._executors.clear()  # they hold the groups they send on

    def stats(self) -> List[dict]:
        """Per collective key: calls so far, the pattern version in force, the
        patterns switched to and refused. A hierarchical group's keys are
        its rails' calls (a shard of each call, a pattern over hosts)."""
        out = []
        for (op, dtype, numel, root), st in self._keys.items():
            k = self._control.key_stats(st)
            out.append({"op": op, "dtype": dtype, "numel": numel, "root": root, "algo": st.pattern.algo, "epochs": k["epoch"],
                        "version": k["version"], "switches": k["switches"], "refused": k["refused"], "tuned": k["tuned"]})
        return out

    def report(self):
        """The leader's last report sent to this rank (reporting.Report), None
        before one or without a tuner; asks for a newer one. Never waits."""
        d = self._control.report()
        if d is None:
            return None
        return Report(d)

    def control_stats(self) -> dict:
        """The control plane's counters: exchanges answered, operations on
        the control group for them, epochs that waited for it and the
        seconds they waited, pattern switches; the group clock's estimates
        (clock.py: how many, this rank's offset to the leader and the round
        trip that bounds its error)."""
        return self._control.stats()

    # ---- plumbing
    def _inner(self, t: torch.Tensor) -> dist.ProcessGroup:
        if t.device.type == "cuda":
            if self._nccl is None:
                self._nccl = dist.ProcessGroupNCCL(dist.PrefixStore("react/nccl", self._store), self._rank, self._size, self._timeout)
            return self._nccl
        return self._gloo

    def _kill(self) -> None:
        """Closes the data and control groups' connections, after a mismatch
        (agree.Ledger): its own waits end at once, and its peers'
        (executor.close_pairs)."""
        groups = [(self._gloo, self._rank, self._size), (self._ctrl_pg, self._rank, self._size)]
        if self._hier is not None:  # its host phases and rails move the data
            hg, rail = self._hier.host, self._hier.rail
            if hg._gloo is not None and hg._gloo is not self._gloo:
                groups.append((hg._gloo, hg.local, hg.size))
            if rail is not None:
                groups.append((rail.pg(torch.empty(0)), self.layout.host(self._rank), len(self.layout.hosts)))
        for pg, me, n in groups:
            if pg is not None:
                close_pairs(pg, me, n)

    def _decode(self, raw: bytes) -> Pattern:
        """Checks and decodes a pattern: libreact refuses a malformed or not
        exactly-once pattern (making its layout, which is not kept), so
        every rank checks what it runs, once per distinct pattern."""
        p = self._patterns.get(raw)
        if p is None:
            _lib.pattern_layout(raw)  # the check: ReactError if it fails
            p = Pattern.decode(raw)
            self._patterns[raw] = p
        return p

    def _state(self, op: str, t: torch.Tensor, numel: int, root: int, size: int) -> KeyState:
        key = (op, str(t.dtype).replace("torch.", ""), numel, root)
        st = self._keys.get(key)
        if st is None:
            raw = _lib.generate_pattern(op, self.cfg.algo(op), size, root)
            st = self._keys[key] = self._control.key(key, raw, t.element_size(), t.device.type == "cuda")
        return key, st

    def _run(self, op: str, t: torch.Tensor, numel: int, work: torch.Tensor, reduce: str = "sum", root: int = -1, keep: bool = False) -> None:
        """Runs one collective call's pattern on work. The call's signature
        goes into its transfers' tags (agree.Ledger), so a rank that called
        something else never receives this call's data; with CallCheck on,
        every rank first compares its call with the others'. keep: work's
        elements must end as they began (a non-root rank's reduce)."""
        dtype = str(t.dtype).replace("torch.", "")
        red = redop(op, reduce)
        led = self._ledger
        if self._hier is not None:  # writes only the root's work
            with led:
                salt = led.begin(op, dtype, numel, root, red)
                led.peers = self._others
                return self._hier.run(op, t, numel, work, reduce, root, led, salt)
        if numel == 0:  # nothing to move, but a rank with data must not wait for this one
            led.begin(op, dtype, 0, root, red)
            led.end()
            if self._check is not None:
                self._check(op, dtype, 0, root, red)
            return

        def check(st) -> int:
            salt = led.begin(op, dtype, numel, root, red, st.epoch, st.version)
            if self._check is not None:
                self._check(op, dtype, numel, root, red, st.epoch, st.version)
            return salt

        with led:
            self._pattern_call(op, t, numel, work, reduce, root, check=check, keep=keep)

    def _pattern_call(self, op: str, t: torch.Tensor, numel: int, work: Optional[torch.Tensor], reduce: str, root: int,
                      rail: Optional["hier.RailGroup"] = None, check=None, keep: bool = False) -> None:
        """One epoch of a key: its pattern over the group's ranks, or with a
        rail over the rail's (one rank a host; rank = host). work None: this
        rank is on no rail (a host's ranks past the rail count) and only
        counts the epoch, as every rank of the group must."""
        rank, size, peers = self._rank, self._size, self.global_ranks
        if self._hier is not None:
            rank, size, peers = self.layout.host(self._rank), len(self.layout.hosts), rail.global_ranks if rail is not None else []
        key, st = self._state(op, t, numel, root, size)
        self._control.begin(st)
        salt = check(st) if check is not None else 0
        t0 = time.perf_counter()
        fct, entry = None, None
        if work is not None:
            pk = (id(st.pattern), rank, numel, work.element_size())
            pl = self._plans.get(pk)
            if pl is None:
                pl = plan(st.pattern, rank, numel, work.element_size(), self.cfg.segment_bytes)
                self._plans[pk] = pl
            if rail is None and self._ledger is not None:
                self._ledger.peers = pl.peers
            inner = rail.pg(t) if rail is not None else self._inner(t)
            ex = self._executors.get(id(inner))
            if ex is None:
                ex = self._executors[id(inner)] = Executor(inner, rank, size, peers, self._hold_s())
            entered = time.perf_counter()
            if work.device.type != "cuda":  # CUDA's step records need no entries
                entry = (rank, entered)
            if torch.autograd.profiler._is_profiler_enabled:  # a named range in the trace, with the version that ran
                with torch.autograd.profiler.record_function(f"react:{op} {key[1]} x{numel} v{st.version}"):
                    fct = ex.run(st.pattern, pl, work, reduce, salt, entered, keep)
            else:
                fct = ex.run(st.pattern, pl, work, reduce, salt, entered, keep)
        elapsed = time.perf_counter() - t0
        self._control.end(st, fct, elapsed, entry)

    def _hold_s(self) -> float:
        """The test hook's hold on every message into this rank: when it is
        REACT_TEST_SLOW_RANK (on hosts, on that rank's host: every rail)."""
        slow = self._slow
        if slow < 0 or not self._control.tuned:
            return 0.0
        if self._hier is not None:
            return TEST_HOLD_S if self.layout.host(slow) == self.layout.host(self._rank) else 0.0
        return TEST_HOLD_S if slow == self._rank else 0.0

    def _admit(self, what: str, *tensors, layouts: bool = False) -> torch.device:
        """Refuses, before anything is queued or sent, a call this process
        cannot run: one from a forked child (the group's threads and Go do
        not survive fork: the call would hang) and tensors on a device the
        backend cannot run (meta, ...: Gloo would abort the PEERS) or of a
        layout it does not move. Returns the device the call runs on."""
        if os.getpid() != self._pid:
            raise _lib.ReactError(_lib.E_FORK, f"react_torch: {what}: this process (pid {os.getpid()}) is a fork of the one that made "
                                  f"the react group (pid {self._pid}); a forked child cannot call it (Go and the group's threads do not survive fork)")
        flat = [t for ts in tensors for t in (ts if isinstance(ts, (list, tuple)) else [ts])]
        flat = [t for t in flat for t in (t if isinstance(t, (list, tuple)) else [t])]
        dev = None
        for t in flat:
            if t.device.type not in ("cpu", "cuda"):
                raise ValueError(f"react_torch: {what}: a tensor on device {t.device} cannot run on the react backend "
                                 f"(cpu and cuda can); nothing was sent")
            if t.layout != torch.strided and not layouts:
                raise ValueError(f"react_torch: {what}: a {t.layout} tensor cannot run on the react backend (strided ones can); nothing was sent")
            if dev is None:
                dev = t.device
            elif t.device.type != dev.type:
                raise ValueError(f"react_torch: {what}: tensors on {dev} and {t.device} in one call; nothing was sent")
        return dev if dev is not None else torch.device("cpu")

    def _submit(self, fn, result, device: torch.device, what: str = "collective", opts=None):
        """Runs fn on the group's collective thread, in call order, and returns
        a Work that completes (or fails) with it: the caller goes on at once
        (async_op=True overlaps, DDP's buckets overlap backward) and every
        rank runs its collectives in the order it called them. A call torch
        will wait for at once (opts.asyncOp False, torch 2.8 on) runs on the
        caller's thread, after the calls queued before it: the lane's thread
        is not woken for it. On CUDA fn runs on the caller's current stream."""
        fut = torch.futures.Future(devices=[device]) if device.type == "cuda" else torch.futures.Future()
        stream = torch.cuda.current_stream(device) if device.type == "cuda" else None

        def job():
            try:
                if stream is not None:
                    with torch.cuda.stream(stream):
                        fn()
                else:
                    fn()
            except BaseException as exc:  # the Work's wait() raises it
                fut.set_exception(exc)
            else:
                fut.set_result(result)

        self._seqnum += 1
        sync = opts is not None and getattr(opts, "asyncOp", True) is False
        queued = self._lane.submit(job, wake=not sync)
        if sync:
            self._lane.run_until(queued)
        # torch's PyBackend wraps the Work in a holder that keeps its Python
        # half alive as long as anyone holds the Work, and no longer
        return Work(fut, what, lambda: self._lane.run_until(queued))

    def _drain(self) -> None:
        """Waits until every collective called so far has run, so that a
        delegated operation cannot overtake them."""
        self._lane.run_until(self._lane.submit(lambda: None))


# Live backends, for _at_exit: a job may end without destroy_process_group.
_live: "weakref.WeakSet[ReactBackend]" = weakref.WeakSet()
# ... and held until shut down: torch may keep only the C++ half (the
# TORCH_DISTRIBUTED_DEBUG=DETAIL wrapper does), and a Python backend whose
# Python half is gone loses its methods ("getBackendName is not implemented").
_held: "set[ReactBackend]" = set()


def _at_exit() -> None:
    """Shuts every live react backend down before the interpreter tears
    down: a control thread still inside an exchange on the control group
    when its Gloo group is destroyed makes C++ call std::terminate (SIGABRT,
    "terminate called without an active exception"). atexit runs after
    Python has joined its non-daemon threads (the collective threads: every
    call has run) and before modules and torch's groups are torn down."""
    for b in list(_live):
        try:
            b.shutdown()
            # not a group a mismatch failed: its pairs are closed with a
            # receive still posted, and destroying it aborted the process
            # (1 run in a CI's worth of mismatch tests)
            if b._ledger is None or b._ledger.failed is None:
                b._release()
        except Exception as e:  # exiting anyway: say why, do not mask the exit status
            log.warning("react_torch: shutting a react group down at exit: %s", e)
    gc.collect()


atexit.register(_at_exit)



def create(opts, backend_options=None, cfg: Optional[Config] = None) -> ReactBackend:
    """The backend creator torch calls for backend="react" (extended API:
    c10d's _DistributedBackendOptions)."""
    return ReactBackend(opts.store, opts.group_rank, opts.group_size, opts.timeout, cfg,
                        group_name=str(opts.group_id), global_ranks=list(opts.global_ranks_in_group))
