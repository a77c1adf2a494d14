"""Worker processes for test_conform.py: react behaving like a
torch.distributed backend (issue 15). Started like workers.py; each
scenario prints "OK <scenario>" on success."""

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import react_torch
from react_torch.route import BACKEND_ROUTE

sys.path.insert(0, os.path.dirname(__file__))
from workers import data, init, same  # noqa: E402


def backends():
    """Everything that goes through a group's backends: group names,
    destroying a subgroup, batch_isend_irecv, monitored_barrier."""
    rank, n, gloo = init()
    world = dist.group.WORLD
    assert world.group_name, "the default group has no name"
    assert dist.get_backend() == "react"
    assert type(react_torch.backend_of(world)).__name__ == "ReactBackend"
    sub = dist.new_group(list(range(n - 1)))
    if rank < n - 1:
        assert sub.group_name and sub.group_name != world.group_name, (sub.group_name, world.group_name)
        x = data(rank, 3000, torch.int64)
        ref = x.clone()
        dist.all_reduce(x, group=sub)
        subref = dist.new_group(list(range(n - 1)), backend="gloo")
        dist.all_reduce(ref, group=subref)
        same(x, ref, "subgroup allreduce")
    else:
        dist.new_group(list(range(n - 1)), backend="gloo")
    dist.destroy_process_group(sub)
    assert sub not in dist.distributed_c10d._world.pg_map, "destroyed subgroup still registered"
    # a ring exchange through batch_isend_irecv
    send = torch.arange(5) + 10 * rank
    got = torch.zeros(5, dtype=torch.int64)
    ops = [dist.P2POp(dist.isend, send, (rank + 1) % n), dist.P2POp(dist.irecv, got, (rank - 1) % n)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    same(got, torch.arange(5) + 10 * ((rank - 1) % n), "batch_isend_irecv")
    if not BACKEND_ROUTE:
        # before torch 2.14 torch itself runs monitored_barrier on Gloo groups only, and says so
        try:
            dist.monitored_barrier(timeout=timedelta(seconds=20), wait_all_ranks=True)
            raise AssertionError("monitored_barrier ran on a ProcessGroup-route react group")
        except ValueError as e:
            assert "only implemented for GLOO" in str(e), str(e)
        print("OK backends", flush=True)
        os._exit(0)
    dist.monitored_barrier(timeout=timedelta(seconds=20), wait_all_ranks=True)
    x = data(rank, 1000, torch.float64)
    ref = x.clone()
    dist.all_reduce(x)
    dist.all_reduce(ref, group=gloo)
    same(x, ref, "allreduce after monitored_barrier")
    # a rank that does not arrive is named, within the barrier's timeout
    if rank == 1:
        time.sleep(6)
        print("OK backends", flush=True)
        os._exit(0)
    t0 = time.time()
    try:
        dist.monitored_barrier(timeout=timedelta(seconds=2), wait_all_ranks=True)
        raise AssertionError("monitored_barrier passed without rank 1")
    except RuntimeError as e:
        took = time.time() - t0
        if rank == 0:
            assert "1" in str(e) and took < 2 + 3, (took, str(e))
    print("OK backends", flush=True)
    os._exit(0)


def settings():
    """Group creation with a bad setting fails on every rank, at once, with
    a sentence naming the variable."""
    t0 = time.time()
    try:
        dist.init_process_group("react", timeout=timedelta(seconds=60))
    except ValueError as e:
        print(f"OK settings {time.time() - t0:.1f}s: {e}", flush=True)
        os._exit(0)
    print("NO-ERROR", flush=True)
    os._exit(1)


def unknown_env():
    """An unknown REACT_* variable (another program's) is ignored with one
    warning; the job runs."""
    rank, n, gloo = init()
    x = data(rank, 100, torch.float32)
    ref = x.clone()
    dist.all_reduce(x)
    dist.all_reduce(ref, group=gloo)
    same(x, ref, "allreduce")
    dist.new_group(backend="react")  # a second group: no second warning
    dist.destroy_process_group()
    print("OK unknown_env", flush=True)


def error_texts():
    """Errors name the react op, a reduce op by name, and the peer."""
    rank, n, gloo = init(timeout=8)
    try:
        dist.all_reduce(torch.ones(4), op=dist._make_nccl_premul_sum(2.0))
        raise AssertionError("PREMUL_SUM accepted")
    except ValueError as e:
        assert "allreduce" in str(e) and "PREMUL_SUM" in str(e) and "object at" not in str(e), str(e)
    try:
        dist.all_reduce(torch.ones(4), op=dist.ReduceOp.BAND)
        raise AssertionError("BAND on float32 accepted")
    except TypeError as e:
        assert "allreduce" in str(e) and "BAND" in str(e) and "float32" in str(e), str(e)
    for op in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR):
        x = data(rank, 1000, torch.int64) * 37
        ref = x.clone()
        dist.all_reduce(x, op=op)
        dist.all_reduce(ref, op=op, group=gloo)
        same(x, ref, f"allreduce {op}")
    if rank == 2:
        os._exit(0)
    t0 = time.time()
    try:
        for _ in range(50):
            dist.all_reduce(torch.ones(1000))
        raise AssertionError("no error with a dead peer")
    except RuntimeError as e:
        took = time.time() - t0
        assert took < 8 + 5, f"error after {took:.1f}s"
        # the executor's words (op, count, step, peer) or the call check's (op, count, peer)
        assert "of 1000 float32" in str(e) and "allreduce" in str(e) and "rank " in str(e) and "failed: " in str(e), str(e)
        print(f"OK error_texts after {took:.1f}s: {e}", flush=True)
    os._exit(0)


def wait_timeout():
    """Work.wait(timeout) on a frozen peer raises after the timeout (the
    group's is 60 s); the collective stays queued and completes when the
    peer comes back."""
    rank, n, gloo = init(timeout=60)
    x = data(rank, 5000, torch.int64)
    ref = x.clone()
    dist.all_reduce(ref, group=gloo)
    if rank == n - 1:
        time.sleep(8)  # frozen
    w = dist.all_reduce(x, async_op=True)
    if rank != n - 1:
        t0 = time.time()
        try:
            w.wait(timeout=timedelta(seconds=2))
            raise AssertionError("wait(2 s) returned with a frozen peer")
        except RuntimeError as e:
            took = time.time() - t0
            assert 1.9 < took < 2 + 2, f"wait(2 s) raised after {took:.1f} s"
            assert "allreduce" in str(e) and "2 s" in str(e), str(e)
    w.wait()
    same(x, ref, "allreduce after the timed-out wait")
    dist.destroy_process_group()
    print("OK wait_timeout", flush=True)


def fork_child():
    """A forked child calling a collective of its parent's group gets the
    fork error at once; the parent's group goes on."""
    from react_torch import _lib

    rank, n, gloo = init(timeout=30)
    x = torch.ones(100)
    dist.all_reduce(x)
    if rank == 0:
        pid = os.fork()
        if pid == 0:
            t0 = time.time()
            try:
                dist.all_reduce(torch.ones(100))
                os._exit(10)
            except _lib.ReactError as e:
                ok = e.code == _lib.E_FORK and "fork" in str(e) and time.time() - t0 < 2
                os._exit(0 if ok else 11)
            except BaseException:
                os._exit(12)
        deadline = time.time() + 20
        while time.time() < deadline:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, 9)
            raise AssertionError("the forked child hung in a collective")
        assert os.waitstatus_to_exitcode(st) == 0, f"child exit {os.waitstatus_to_exitcode(st)}"
    y = data(rank, 1000, torch.int64)
    ref = y.clone()
    dist.all_reduce(y)
    dist.all_reduce(ref, group=gloo)
    same(y, ref, "parent allreduce after the fork")
    dist.destroy_process_group()
    print("OK fork_child", flush=True)


def bad_device():
    """A tensor on a device the backend cannot run never reaches Gloo:
    through torch's API a meta tensor is torch's own no-op (as with Gloo);
    handed to the backend directly it is refused before anything is sent.
    The peers are unharmed: the group goes on."""
    rank, n, gloo = init(timeout=6)
    be = react_torch.backend_of()
    meta = torch.empty(1000, device="meta")
    dist.all_reduce(meta)
    dist.broadcast(meta, src=0)
    dist.all_gather_into_tensor(torch.empty(1000 * n, device="meta"), meta)
    # Before torch 2.14 the group is react's own: torch's API reaches it
    # directly, so a call of meta tensors alone is react's no-op too.
    calls = [("allreduce", lambda: be.allreduce([meta], dist.AllreduceOptions())),
             ("broadcast", lambda: be.broadcast([meta], dist.BroadcastOptions())),
             ("allgather", lambda: be._allgather_base(torch.empty(1000 * n, device="meta"), meta)),
             ("reduce_scatter", lambda: be._reduce_scatter_base(torch.empty(1000 // n, device="meta"), meta)),
             ("allreduce", lambda: be.allreduce([torch.ones(3), meta], dist.AllreduceOptions())),
             ("send", lambda: be.send([meta], (rank + 1) % n, 0))]
    if not BACKEND_ROUTE:
        calls = calls[4:5]
    for what, call in calls:
        try:
            call()
            raise AssertionError(f"{what} of a meta tensor accepted")
        except ValueError as e:
            assert what in str(e) and "meta" in str(e) and "nothing was sent" in str(e), str(e)
    x = data(rank, 1000, torch.float64)
    ref = x.clone()
    dist.all_reduce(x)
    dist.all_reduce(ref, group=gloo)
    same(x, ref, "allreduce after meta tensors")
    dist.destroy_process_group()
    print("OK bad_device", flush=True)


def coalesced_and_sparse():
    """all_gather_coalesced (the list-of-lists API) and sparse all_reduce,
    against Gloo; the sparse one is delegated and says so once."""
    import logging

    logging.basicConfig(level=logging.INFO)
    rank, n, gloo = init()
    for dtype in (torch.float32, torch.int64):
        ins = [data(rank, k, dtype, k) for k in (3, 1000, 7)] + [data(rank, 6, dtype, 9).view(2, 3)]
        outs = [[torch.empty_like(i) for i in ins] for _ in range(n)]
        refs = [[torch.empty_like(i) for i in ins] for _ in range(n)]
        dist.all_gather_coalesced(outs, ins)
        dist.all_gather_coalesced(refs, ins, group=gloo)
        for r in range(n):
            for o, ref in zip(outs[r], refs[r]):
                same(o, ref, f"all_gather_coalesced {dtype} from rank {r}")
    for it in range(3):
        idx = torch.tensor([[rank, 5, 7 + it], [0, 1, 2]])
        val = torch.tensor([1.0 + rank, 2.0, 3.0 * it])
        a = torch.sparse_coo_tensor(idx, val, (10, 3))
        b = torch.sparse_coo_tensor(idx, val, (10, 3))
        dist.all_reduce(a)
        dist.all_reduce(b, group=gloo)
        same(a.to_dense(), b.to_dense(), "sparse all_reduce")
    x = data(rank, 100, torch.float32)  # dense still runs as a pattern
    ref = x.clone()
    dist.all_reduce(x)
    dist.all_reduce(ref, group=gloo)
    same(x, ref, "dense after sparse")
    dist.destroy_process_group()
    print("OK coalesced_and_sparse", flush=True)


def _fresh_group(rank):
    """A react group whose key has run a few epochs (tuned keys too:
    epochs and versions are in the signature)."""
    g = dist.new_group(backend="react")
    for it in range(4):
        dist.all_reduce(data(rank, 1000, torch.float32, it), group=g)
    return g


def _default_group_goes_on(rank, gloo):
    """After a mismatch on one group, the other groups go on."""
    ok = data(rank, 700, torch.int64, 5)
    ref = ok.clone()
    dist.all_reduce(ok)
    dist.all_reduce(ref, group=gloo)
    same(ok, ref, "allreduce on the default group")


def _raises_mismatch(rank, g, call, words, within):
    """call(g) must raise a MismatchError within `within` seconds naming
    words, and the group refuse every call after it. Returns the text."""
    from react_torch.agree import MismatchError

    t0 = time.time()
    try:
        call(g)
        raise AssertionError(f"rank {rank}: mismatch not detected ({words})")
    except MismatchError as e:
        assert time.time() - t0 < within, f"error after {time.time() - t0:.1f} s"
        for w in words:
            assert w in str(e), (w, str(e))
        text = str(e)
    try:
        dist.all_reduce(torch.ones(3), group=g)
        raise AssertionError("a call on a group after its mismatch ran")
    except MismatchError as e:
        assert "unusable after an earlier mismatch" in str(e), str(e)
    return text


def mismatch():
    """Ranks that call different collectives fail on every rank, at once,
    naming both calls and the ranks, with nothing combined (Gloo: silent
    garbage, or an abort on a longer message). Each case on a fresh group:
    a group is unusable after a mismatch, as after any collective error.
    The digest path (more than agree.DIRECT_MAX ranks) too."""
    from react_torch import agree

    rank, n, gloo = init(timeout=30)

    def expect(g, call, tensor, words):
        before = tensor.clone()
        _raises_mismatch(rank, g, call, words, within=5)
        assert torch.equal(tensor, before), f"rank {rank}: data combined despite the mismatch"

    def fresh():
        return _fresh_group(rank)

    last = n - 1
    for direct in (True, False):
        agree.DIRECT_MAX = 32 if direct else 1
        # float32 on two ranks, int32 on one
        x = data(rank, 1000, torch.int32 if rank == last else torch.float32)
        expect(fresh(), lambda g, x=x: dist.all_reduce(x, group=g), x,
               ["ranks 0, 1: allreduce (sum) of 1000 float32", f"rank {last}: allreduce (sum) of 1000 int32", "none of this call's data"])
    # one rank skips a call: it is a call ahead of the others
    a, b = data(rank, 1000, torch.float32, 1), data(rank, 500, torch.float32, 2)
    if rank == 0:
        expect(fresh(), lambda g: dist.all_reduce(b, group=g), b, ["rank 0: allreduce (sum) of 500 float32", "allreduce (sum) of 1000 float32"])
    else:
        expect(fresh(), lambda g: dist.all_reduce(a, group=g), a, ["rank 0: allreduce (sum) of 500 float32", "ranks 1, 2: allreduce (sum) of 1000 float32, call"])
    # another op, another count (async), another reduce op, a barrier
    y = data(rank, 1000, torch.float32, 3)
    expect(fresh(), lambda g: dist.broadcast(y, src=0, group=g) if rank == 1 else dist.all_reduce(y, group=g), y,
           ["rank 1: broadcast of 1000 float32 from root 0", "ranks 0, 2: allreduce (sum) of 1000 float32"])
    z = data(rank, 999 if rank == 2 else 1000, torch.float32, 4)
    expect(fresh(), lambda g: dist.all_reduce(z, group=g, async_op=True).wait(), z, ["rank 2: allreduce (sum) of 999 float32"])
    w = data(rank, 1000, torch.float32, 6)
    expect(fresh(), lambda g: dist.all_reduce(w, group=g, op=dist.ReduceOp.MAX if rank == 0 else dist.ReduceOp.SUM), w,
           ["rank 0: allreduce (max) of 1000 float32", "ranks 1, 2: allreduce (sum)"])
    expect(fresh(), lambda g: dist.barrier(group=g) if rank == 0 else dist.all_reduce(w, group=g), w, ["rank 0: barrier", "ranks 1, 2: allreduce"])
    _default_group_goes_on(rank, gloo)
    print("OK mismatch", flush=True)


def mismatch_tags():
    """The default check (agree.Ledger, no REACT_CHECK_CALLS): a call's
    signature is in its transfers' tags, so a rank that called something
    else never receives its data. Every rank fails within seconds with one
    sentence naming the calls and the ranks; the ranks that agree may have
    combined each other's data, never the others'."""
    from react_torch.agree import MismatchError

    rank, n, gloo = init(timeout=30)
    assert n == 3

    def expect(g, call, tensor, words, agree_with=()):
        """agree_with: the ranks whose call is this rank's (their data,
        and only theirs, may be in tensor after the error)."""
        before = tensor.clone()
        others = [data(r, tensor.numel(), tensor.dtype, salt) for r in agree_with]
        texts.append(_raises_mismatch(rank, g, call, words, within=8))
        allowed = [before] + [before + o for o in others]
        ok = torch.zeros(tensor.numel(), dtype=torch.bool)
        for a in allowed:
            ok |= torch.isclose(tensor.double(), a.double(), rtol=1e-5, atol=1e-5)
        assert bool(ok.all()), f"rank {rank}: data of a rank with another call combined ({words})"

    def fresh():
        return _fresh_group(rank)

    texts = []
    last = n - 1
    agreeing = [r for r in range(n - 1) if r != rank] if rank != last else []
    salt = 0
    x = data(rank, 1000, torch.int32 if rank == last else torch.float32, salt)
    expect(fresh(), lambda g: dist.all_reduce(x, group=g), x,
           ["ranks 0, 1: allreduce (sum) of 1000 float32", f"rank {last}: allreduce (sum) of 1000 int32", "no data from a rank with another call"],
           agreeing)
    # one rank skips a call: it is a call ahead of the others
    salt = 1
    a, b = data(rank, 1000, torch.float32, 1), data(rank, 500, torch.float32, 2)
    if rank == 0:
        expect(fresh(), lambda g: dist.all_reduce(b, group=g), b, ["rank 0: allreduce (sum) of 500 float32", "allreduce (sum) of 1000 float32"])
    else:
        expect(fresh(), lambda g: dist.all_reduce(a, group=g), a, ["rank 0: allreduce (sum) of 500 float32", "ranks 1, 2: allreduce (sum) of 1000 float32, call"],
               [r for r in (1, 2) if r != rank])
    salt = 3
    y = data(rank, 1000, torch.float32, 3)
    expect(fresh(), lambda g: dist.broadcast(y, src=0, group=g) if rank == 1 else dist.all_reduce(y, group=g), y,
           ["rank 1: broadcast of 1000 float32 from root 0", "ranks 0, 2: allreduce (sum) of 1000 float32"], [r for r in (0, 2) if r != rank and rank != 1])
    salt = 4
    z = data(rank, 999 if rank == 2 else 1000, torch.float32, 4)
    expect(fresh(), lambda g: dist.all_reduce(z, group=g, async_op=True).wait(), z, ["rank 2: allreduce (sum) of 999 float32"],
           [r for r in (0, 1) if r != rank and rank != 2])
    salt = 6
    w = data(rank, 1000, torch.float32, 6)
    expect(fresh(), lambda g: dist.barrier(group=g) if rank == 0 else dist.all_reduce(w, group=g), w, ["rank 0: barrier", "ranks 1, 2: allreduce"],
           [r for r in (1, 2) if r != rank and rank != 0])
    # a mismatched call still queued when its group is destroyed
    v = data(rank, 1000, torch.int32 if rank == last else torch.float32, 7)
    g = fresh()
    w = dist.all_reduce(v, group=g, async_op=True)
    t0 = time.time()
    dist.destroy_process_group(g)
    assert time.time() - t0 < 8, f"destroy took {time.time() - t0:.1f} s"
    try:
        w.wait()
        raise AssertionError("a mismatched call queued at destroy completed")
    except MismatchError:
        pass
    # the main thread blocked in a store wait (on the client the group's
    # store shares) while a mismatched call waits: found within seconds
    import threading

    store = dist.distributed_c10d._get_default_store()
    v = data(rank, 1000, torch.int32 if rank == last else torch.float32, 8)
    g = fresh()
    w = dist.all_reduce(v, group=g, async_op=True)

    mine = store.clone()  # the main thread's wait holds the shared client

    def waiter():
        try:
            w.wait()
        except MismatchError:
            mine.set(f"mismatch_tags/raised/{rank}", "1")

    threading.Thread(target=waiter, daemon=True).start()
    t0 = time.time()
    store.wait([f"mismatch_tags/raised/{r}" for r in range(n)])
    assert time.time() - t0 < 10, f"found after {time.time() - t0:.1f} s with the store client busy"
    # every rank raised the same sentence
    every = [None] * n
    dist.all_gather_object(every, texts, group=gloo)
    assert all(e == texts for e in every), every
    _default_group_goes_on(rank, gloo)
    print("OK mismatch_tags", flush=True)
    # the mismatched groups' pairs can abort the interpreter's teardown of
    # torch's own Gloo group (1 run here, after the OK line), as in
    # mismatch_kill_order
    os._exit(0)


def mismatch_kill_order():
    """4 ranks, rank 3 mismatched, rank 2's watchdog late (LATE_WATCHDOG,
    read here): rank 3 closes its groups first, so rank 2's first kill
    receive (from rank 3) fails at once without closing its other pairs.
    It must go on to a peer whose pair is open, or ranks 0 and 2, waiting
    on each other, wait for the group timeout."""
    from react_torch import agree

    if os.environ.get("LATE_WATCHDOG"):
        agree.STUCK_S = 4.0
    rank, n, gloo = init(timeout=30)
    g = _fresh_group(rank)
    x = data(rank, 1000, torch.int32 if rank == n - 1 else torch.float32)
    _raises_mismatch(rank, g, lambda g: dist.all_reduce(x, group=g), [f"rank {n - 1}: allreduce (sum) of 1000 int32"], within=10)
    dist.barrier(group=gloo)
    print("OK mismatch_kill_order", flush=True)
    os._exit(0)  # as mismatch_hosts: the failed groups' teardown is not this test's subject


def mismatch_hosts():
    """2 hosts x 2 ranks (hierarchical, the default check): a call that
    differs inside a host is found by the host's digest check before its
    host phases move data; one that differs between hosts by the rails'
    tags. Either way every rank raises one sentence naming the calls."""
    rank, n, gloo = init(timeout=30)
    assert n == 4

    def fresh():
        g = _fresh_group(rank)
        assert react_torch.backend_of(g)._hier is not None, "not hierarchical"
        return g

    x = data(rank, 1000, torch.int32 if rank == 3 else torch.float32)
    _raises_mismatch(rank, fresh(), lambda g: dist.all_reduce(x, group=g), ["rank 3: allreduce (sum) of 1000 int32"], within=10)
    y = data(rank, 999 if rank == 1 else 1000, torch.float32)
    _raises_mismatch(rank, fresh(), lambda g: dist.all_reduce(y, group=g), ["rank 1: allreduce (sum) of 999 float32"], within=10)
    z = data(rank, 1000, torch.float32)
    _raises_mismatch(rank, fresh(), lambda g: dist.broadcast(z, src=1, group=g) if rank == 0 else dist.all_reduce(z, group=g),
                     ["rank 0: broadcast of 1000 float32 from root 1", "allreduce (sum) of 1000 float32"], within=10)
    # between hosts: each host agrees with itself
    w = data(rank, 1000, torch.int32 if rank >= 2 else torch.float32)
    _raises_mismatch(rank, fresh(), lambda g: dist.all_reduce(w, group=g), ["ranks 0, 1: allreduce (sum) of 1000 float32",
                                                                             "ranks 2, 3: allreduce (sum) of 1000 int32"], within=10)
    dist.barrier(group=gloo)
    print("OK mismatch_hosts", flush=True)
    # the groups the mismatches failed, torch's gloo group beside them: a Gloo
    # group that ran collectives may abort the interpreter's teardown
    # (docs/hosts.md; 1 run in 12 here), which is not what this test is about
    os._exit(0)


def debug_detail():
    """TORCH_DISTRIBUTED_DEBUG=DETAIL wraps react in torch's checking
    wrapper, as it wraps Gloo: collectives run, and its own mismatch check
    (before react's) names the dtypes."""
    rank, n, gloo = init(timeout=30)
    if BACKEND_ROUTE:
        assert type(dist.group.WORLD._get_backend(torch.device("cpu"))).__name__ == "_ProcessGroupWrapper"
    x = data(rank, 1000, torch.int64)
    ref = x.clone()
    dist.all_reduce(x)
    dist.all_reduce(ref, group=gloo)
    same(x, ref, "allreduce under DETAIL")
    y = torch.ones(10, dtype=torch.int32 if rank == 1 else torch.float32)
    try:
        dist.all_reduce(y)
        raise AssertionError("a dtype mismatch passed under DETAIL")
    except RuntimeError as e:
        # torch's wrapper's message; before torch 2.14 there is no wrapper
        # (torch wraps only Backends) and react's own call check answers
        if BACKEND_ROUTE:
            assert "mismatch" in str(e) and ("Int" in str(e) or "Float" in str(e)), str(e)
        else:
            assert "int32" in str(e) and "float32" in str(e), str(e)
    print("OK debug_detail", flush=True)
    os._exit(0)


def no_destroy():
    """A healthy job that ends without destroy_process_group (many do):
    tuned calls on two groups, async work left to finish, then exit."""
    rank, n, gloo = init(timeout=30)
    other = dist.new_group(backend="react")
    for it in range(40):
        dist.all_reduce(data(rank, 4096, torch.float32, it))
        dist.all_reduce(data(rank, 2048, torch.float32, it), group=other)
    dist.all_reduce(data(rank, 4096, torch.float32), async_op=True)
    print("OK no_destroy", flush=True)


if __name__ == "__main__":
    globals()[sys.argv[1]]()
