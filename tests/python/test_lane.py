"""The collective lane: calls run one at a time in call order; a caller
that waits for a call no thread has started runs it (and the calls before
it) on its own thread; an asynchronous call runs without its caller."""

import threading
import time

from react_torch.lane import Lane


def recorder():
    ran = []

    def job(name, hold=None):
        def fn():
            if hold is not None:
                hold.wait(5)
            ran.append((name, threading.current_thread().name))
        return fn
    return ran, job


def test_caller_runs_queued_jobs_in_order():
    lane = Lane("lane-test")
    ran, job = recorder()
    me = threading.current_thread().name
    jobs = [lane.submit(job(i), wake=False) for i in range(3)]
    lane.run_until(jobs[1])
    assert ran == [(0, me), (1, me)]
    lane.run_until(jobs[2])
    assert ran[2] == (2, me)
    lane.close()


def test_async_job_runs_on_the_lane_thread():
    lane = Lane("lane-test")
    ran, job = recorder()
    lane.submit(job("a"))
    until = time.monotonic() + 5
    while not ran and time.monotonic() < until:
        time.sleep(0.01)
    assert ran == [("a", "lane-test")]
    lane.close()


def test_waiter_waits_for_running_job_then_keeps_order():
    lane = Lane("lane-test")
    ran, job = recorder()
    hold = threading.Event()
    lane.submit(job("first", hold))  # the lane's thread takes it and blocks
    until = time.monotonic() + 5
    while not lane._busy and time.monotonic() < until:
        time.sleep(0.01)
    second = lane.submit(job("second"), wake=False)
    t = threading.Thread(target=lambda: lane.run_until(second), name="waiter")
    t.start()
    time.sleep(0.1)
    assert ran == []  # the waiter may not overtake the running job
    hold.set()
    t.join(5)
    lane.close()
    assert [name for name, _ in ran] == ["first", "second"]


def test_close_runs_what_was_queued():
    lane = Lane("lane-test")
    ran, job = recorder()
    hold = threading.Event()
    lane.submit(job(0, hold))
    for i in (1, 2):
        lane.submit(job(i))
    hold.set()
    lane.close()
    assert [name for name, _ in ran] == [0, 1, 2]
