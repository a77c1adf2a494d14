"""A rank's plan of a pattern as libreact computes it (pkg/plan, whose Go
tests hold the rules) and pattern.plan decodes it, in one process: what each
rank sends is what its peer receives, with the same tag, as many elements
and segments. Every default pattern of every op."""

import pytest

from react_torch import _lib
from react_torch.pattern import Pattern, plan

ALGOS = {
    "allreduce": ("tree", "ring", "halving_doubling"),
    "allgather": ("ring", "recursive_doubling"),
    "reducescatter": ("ring",),
    "broadcast": ("tree", "binomial"),
    "reduce": ("tree", "binomial"),
}
CASES = [(op, algo, n) for op, algos in ALGOS.items() for algo in algos for n in (2, 3, 5, 8)]


def _pattern(op, algo, n):
    root = n - 1 if op in ("broadcast", "reduce") else -1
    raw = _lib.generate_pattern(op, algo, n, root)
    return Pattern.decode(raw)


def _numel(op, n):
    return 1000 * n + (0 if op in ("allgather", "reducescatter") else 7)  # blocks need a multiple of n


@pytest.mark.parametrize("op,algo,n", CASES)
def test_every_send_is_its_peers_receive(op, algo, n):
    p = _pattern(op, algo, n)
    numel = _numel(op, n)
    plans = [plan(p, r, numel, 4, 1024) for r in range(n)]
    sent, received = {}, {}
    for r, pl in enumerate(plans):
        for m in pl.sends:
            assert m.src == r and (m.step, m.src, m.dst) not in sent
            sent[(m.step, m.src, m.dst)] = (m.tag, m.flows, m.size, m.segs)
        for m in pl.recvs:
            assert m.dst == r and (m.step, m.src, m.dst) not in received
            received[(m.step, m.src, m.dst)] = (m.tag, m.flows, m.size, m.segs)
            assert m.size == sum(hi - lo for lo, hi in m.ranges)
    assert sent == received
    flows = sorted(f for _, fs, _, _ in sent.values() for f in fs)
    assert flows == list(range(p.nflows)), "a flow missing from the messages, or in two"


def test_a_plan_is_refused_for_a_rank_out_of_range():
    p = _pattern("allreduce", "ring", 4)
    with pytest.raises(_lib.ReactError, match=r"rank 4 \(of 4\)"):
        plan(p, 4, 1000, 4, 0)


@pytest.mark.parametrize("op,algo,n", CASES)
def test_what_an_arrival_can_change_is_the_deps_inverted(op, algo, n):
    """The executor looks, when a receive's segment is applied, only at the
    peers of the sends that wait for that receive, and when it is applied in
    full at the receives after it: those lists must be exactly the plan's
    deps and afters read backwards, or a send never becomes ready."""
    p = _pattern(op, algo, n)
    for r in range(n):
        for seg in (0, 1024):
            pl = plan(p, r, _numel(op, n), 4, seg)
            streams = [set() for _ in pl.recvs]
            whole = [set() for _ in pl.recvs]
            after = [[] for _ in pl.recvs]
            for m in pl.sends:
                assert len(m.deps) == len(m.aligned)
                for j, ok in zip(m.deps, m.aligned):
                    (streams if ok else whole)[j].add(m.dst)
            for k, m in enumerate(pl.recvs):
                if m.after >= 0:
                    after[m.after].append(k)
            assert [set(x) for x in pl.rdeps_peers] == streams
            assert [set(x) for x in pl.rdeps_full_peers] == whole
            assert [sorted(x) for x in pl.next] == after
            assert all(len(x) == len(set(x)) for x in pl.rdeps_peers + pl.rdeps_full_peers)
