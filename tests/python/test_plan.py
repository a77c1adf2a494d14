"""A rank's plan of a pattern (pattern.plan) and the element ranges its
messages carry (executor._ranges), in one process: what each rank sends is
what its peer receives, with the same tag and as many elements; a send
waits for exactly the receives that carry its inputs; chunks tile the
buffer. Every default pattern of every op, from libreact."""

import itertools

import pytest

from react_torch import _lib
from react_torch.executor import _ranges
from react_torch.pattern import Pattern, chunk_bounds, plan

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
    return Pattern.decode(raw, _lib.pattern_layout(raw))


def _numel(op, n):
    return 1000 * n + (0 if op in ("allgather", "reducescatter") else 7)  # blocks need a multiple of n


@pytest.mark.parametrize("op,algo,n", CASES)
def test_every_send_is_its_peers_receive(op, algo, n):
    p = _pattern(op, algo, n)
    numel = _numel(op, n)
    plans = [plan(p, r, numel) for r in range(n)]
    sent, received = {}, {}
    for r, pl in enumerate(plans):
        for m in pl.sends:
            assert m.src == r and (m.step, m.src, m.dst) not in sent
            sent[(m.step, m.src, m.dst)] = (m.tag, m.flows, sum(hi - lo for lo, hi in _ranges(p, pl, m.flows)))
        for m in pl.recvs:
            assert m.dst == r and (m.step, m.src, m.dst) not in received
            received[(m.step, m.src, m.dst)] = (m.tag, m.flows, sum(hi - lo for lo, hi in _ranges(p, pl, m.flows)))
    assert sent == received
    flows = sorted(f for _, fs, _ in sent.values() for f in fs)
    assert flows == list(range(p.nflows)), "a flow missing from the messages, or in two"


@pytest.mark.parametrize("op,algo,n", CASES)
def test_a_send_waits_for_the_receives_that_carry_its_inputs(op, algo, n):
    p = _pattern(op, algo, n)
    for r in range(n):
        pl = plan(p, r, _numel(op, n))
        into = {f: j for j, m in enumerate(pl.recvs) for f in m.flows}
        for m, deps in zip(pl.sends, pl.deps):
            want = {into[int(g)] for f in m.flows for g in p.preds[p.pred_start[f] : p.pred_start[f + 1]]}
            assert set(deps) == want
            assert all(pl.recvs[j].step < m.step for j in deps), "a send waits for a receive of its own step or later"


@pytest.mark.parametrize("op,algo,n", [c for c in CASES if c[0] != "allgather"])
@pytest.mark.parametrize("extra", [0, 1, 13])
def test_chunks_tile_the_buffer(op, algo, n, extra):
    p = _pattern(op, algo, n)
    numel = _numel(op, n) + (0 if op == "reducescatter" else extra)
    lo, hi = chunk_bounds(p, numel)
    assert all(a <= b for a, b in zip(lo, hi))
    if op == "reducescatter":  # each owner's chunks tile its own block, in chunk order
        block = numel // n
        for r in range(n):
            mine = [c for c in range(p.nchunks) if p.owner[c] == r]
            edges = list(itertools.chain.from_iterable((lo[c], hi[c]) for c in mine))
            assert edges[0] == r * block and edges[-1] == (r + 1) * block and edges == sorted(edges)
            assert all(hi[a] == lo[b] for a, b in zip(mine, mine[1:]))
    else:
        assert lo[0] == 0 and hi[-1] == numel and all(hi[c] == lo[c + 1] for c in range(p.nchunks - 1))
