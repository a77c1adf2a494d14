import pytest

from conftest import launch


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_collectives_equal_gloo(n):
    for rc, out, err in launch(n, "collectives", env={"REACT_TUNE": "0"}):
        assert rc == 0 and "OK collectives" in out, err[-3000:]


@pytest.mark.parametrize("algo", ["tree", "ring", "halving_doubling"])
def test_allreduce_algorithms(algo):
    for rc, out, err in launch(3, "collectives", env={"REACT_TUNE": "0", "REACT_ALGO_ALLREDUCE": algo, "REACT_ALGO_ALLGATHER": "recursive_doubling"}):
        assert rc == 0 and "OK collectives" in out, err[-3000:]


def test_pattern_switch_keeps_results_exact():
    res = launch(4, "switch", env={"REACT_TEST_SLOW_RANK": "3", "REACT_LAG": "2"})
    for rc, out, err in res:
        assert rc == 0 and "OK switch" in out, err[-3000:]


def test_killed_rank_times_out():
    res = launch(3, "killed", env={"REACT_TUNE": "0"}, timeout=120)
    assert res[1][0] == 3
    for r in (0, 2):
        rc, out, err = res[r]
        assert rc == 0 and "OK killed" in out, (out, err[-2000:])


def test_ddp_losses_equal_gloo():
    def losses(backend):
        res = launch(4, "ddp", backend, env={"REACT_TUNE": "0"} if backend == "react" else {})
        for rc, out, err in res:
            assert rc == 0, err[-3000:]
        return [line for line in res[0][1].splitlines() if line.startswith("LOSSES")][0].split()[1:]

    react, gloo = losses("react"), losses("gloo")
    assert len(react) == 20
    for a, b in zip(react, gloo):
        assert abs(float(a) - float(b)) <= 1e-4 * max(1.0, abs(float(b))), (react, gloo)
