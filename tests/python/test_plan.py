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
