"""react behaves like a torch.distributed backend (issue 15): torch's own
group machinery, faults and bad input, each on real multi-process groups."""

import os
import subprocess
import sys

import pytest

from conftest import CONFORM, ROOT, launch


def test_group_machinery_goes_through_the_backend():
    """group_name, destroy_process_group(subgroup), batch_isend_irecv and
    monitored_barrier: torch reaches them through the group's Backend."""
    for rc, out, err in launch(3, "backends", env={"REACT_TUNE": "0"}, script=CONFORM, timeout=120):
        assert rc == 0 and "OK backends" in out, err[-3000:]


@pytest.mark.parametrize("env,words", [
    ({"REACT_LAG": "0"}, ["REACT_LAG=0", "Lag = 0, want >= 1", "every rank"]),
    ({"REACT_B": "0"}, ["REACT_B=0", "want >= 1"]),
    ({"REACT_LEADER": "99"}, ["REACT_LEADER=99", "0 to 2"]),
    ({"REACT_SEGMENT_BYTES": "-1"}, ["REACT_SEGMENT_BYTES=-1", "want >= 0"]),
])
def test_bad_settings_fail_every_rank_at_creation(env, words):
    """Before: REACT_LAG=0 deadlocked the first tuned call; REACT_B=0 and
    REACT_LEADER=99 failed later on the leader only; REACT_SEGMENT_BYTES=-1
    was silently 0."""
    for rc, out, err in launch(3, "settings", env=env, script=CONFORM, timeout=90):
        assert rc == 0 and "OK settings" in out, (out, err[-3000:])
        took = float(out.split("OK settings ")[1].split("s:")[0])
        assert took < 20, out
        for w in words:
            assert w in out, (w, out)


def test_settings_that_ranks_must_share_are_compared():
    res = launch(3, "settings", env={"REACT_LAG": "3"}, script=CONFORM, timeout=90, per_rank={2: {"REACT_LAG": "4"}})
    for rc, out, err in res:
        assert rc == 0 and "OK settings" in out, (out, err[-3000:])
        assert "REACT_LAG is 3 on ranks 0, 1, 4 on rank 2" in out, out


def test_unknown_react_variable_is_ignored_with_one_warning():
    """Before: any unknown REACT_* variable made group creation fail."""
    for rc, out, err in launch(3, "unknown_env", env={"REACT_TUNE": "0", "REACT_APP_API_URL": "http://x"}, script=CONFORM):
        assert rc == 0 and "OK unknown_env" in out, err[-3000:]
        assert err.count("REACT_APP_API_URL") == 1, err[-3000:]


def test_error_texts_name_op_reduce_op_and_peer():
    """Before: <ReduceOp object at 0x...>, and Gloo's raw text on a fault."""
    res = launch(3, "error_texts", env={"REACT_TUNE": "0"}, script=CONFORM, timeout=120)
    for r in (0, 1):
        rc, out, err = res[r]
        assert rc == 0 and "OK error_texts" in out, (out, err[-3000:])


def test_work_wait_honours_its_timeout():
    """Before: a 2 s wait on a frozen peer blocked for the group timeout."""
    for rc, out, err in launch(3, "wait_timeout", env={"REACT_TUNE": "0"}, script=CONFORM, timeout=120):
        assert rc == 0 and "OK wait_timeout" in out, (out, err[-3000:])


def test_forked_child_gets_fork_error_at_once():
    """Before: the call was queued on a thread that does not exist in the
    child, which hung past the group timeout."""
    for rc, out, err in launch(2, "fork_child", env={"REACT_TUNE": "0"}, script=CONFORM, timeout=120):
        assert rc == 0 and "OK fork_child" in out, (out, err[-3000:])


def test_tensor_on_unsupported_device_refused_peers_unharmed():
    """Before: a meta tensor reached Gloo and the peers died of SIGABRT."""
    for rc, out, err in launch(3, "bad_device", env={"REACT_TUNE": "0"}, script=CONFORM, timeout=120):
        assert rc == 0 and "OK bad_device" in out, (rc, out, err[-3000:])


@pytest.mark.parametrize("hosts", ["flat", "flat", "auto", "hier"])
def test_exit_without_destroy_is_clean_under_torchrun(hosts):
    """Before: 5 of 5 runs died of SIGABRT ("terminate called without an
    active exception", torchrun's ChildFailedError): the control thread was
    still inside an exchange when the interpreter tore its group down.
    flat: tuned patterns between the ranks; auto: found on one host, which
    runs flat too; hier: the forced one-host hierarchy, whose host phases
    are Gloo collectives (a Gloo group that ran collectives aborts when the
    interpreter's teardown destroys it: 3 of 40 runs under load before
    react released its groups at exit, 0 of 50 after)."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), OMP_NUM_THREADS="1",
               REACT_LAG="2", REACT_TEST_SLOW_RANK="2", REACT_HOSTS=hosts)
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "3", CONFORM, "no_destroy"],
                       env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, (r.returncode, r.stdout[-2000:], r.stderr[-3000:])
    assert r.stdout.count("OK no_destroy") == 3, r.stdout[-2000:]
    assert "terminate called" not in r.stderr, r.stderr[-3000:]


def test_all_gather_coalesced_and_sparse_all_reduce():
    """Before: all_gather_coalesced was missing; sparse all_reduce failed at
    wait() with "unsupported memory format option Contiguous"."""
    for rc, out, err in launch(3, "coalesced_and_sparse", env={"REACT_TUNE": "0"}, script=CONFORM):
        assert rc == 0 and "OK coalesced_and_sparse" in out, (out, err[-3000:])
        assert err.count("allreduce of sparse tensors is delegated") == 1, err[-3000:]


def test_mismatched_calls_fail_on_every_rank_before_data_moves():
    """Before: silent garbage (or Gloo's abort on a longer message)."""
    for rc, out, err in launch(3, "mismatch", env={"REACT_LAG": "2", "REACT_CHECK_CALLS": "1"}, script=CONFORM, timeout=120):
        assert rc == 0 and "OK mismatch" in out, (out, err[-3000:])


def test_mismatched_calls_fail_on_every_rank_by_default():
    """Before: the check was off by default (its round of messages cost
    20-40% of a 1 MB AllReduce), and a mismatch was silent garbage. Now the
    calls' tags keep them apart and the ranks compare their calls once one
    is stuck."""
    for rc, out, err in launch(3, "mismatch_tags", env={"REACT_LAG": "2"}, script=CONFORM, timeout=120):
        assert rc == 0 and "OK mismatch_tags" in out, (out, err[-3000:])


def test_mismatched_calls_fail_on_every_rank_of_a_hierarchical_group():
    """Before: a hierarchical group had no check by default (its host phases
    are Gloo collectives, which carry no tags): float32 on one rank and
    int32 on the others returned garbage on all four ranks."""
    for rc, out, err in launch(4, "mismatch_hosts", env={"REACT_LAG": "2"}, hosts=[0, 0, 1, 1], script=CONFORM, timeout=180):
        assert rc == 0 and "OK mismatch_hosts" in out, (out, err[-3000:])


def test_mismatch_closes_every_pair_whoever_finds_it_first():
    """Before: a rank whose first peer had closed its pairs already did not
    close its own, and a rank waiting on it waited for the group timeout."""
    for rc, out, err in launch(4, "mismatch_kill_order", env={"REACT_TUNE": "0"}, per_rank={2: {"LATE_WATCHDOG": "1"}}, script=CONFORM,
                               timeout=120):
        assert rc == 0 and "OK mismatch_kill_order" in out, (out, err[-3000:])


def test_torch_debug_detail_wraps_react():
    """Before: the wrapper kept only the C++ half of the backend, whose
    Python half was collected: "getBackendName is not implemented"."""
    for rc, out, err in launch(2, "debug_detail", env={"REACT_TUNE": "0", "TORCH_DISTRIBUTED_DEBUG": "DETAIL"}, script=CONFORM):
        assert rc == 0 and "OK debug_detail" in out, (out, err[-3000:])
