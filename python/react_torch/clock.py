"""The group clock: every rank's time.perf_counter() read on the leader's.

A flow's arrival is timed on its receiver's clock, from the moment that rank
entered the call; its start depends on when its sender got its inputs and
when both ends entered (critpath.DAG.Durations). Ranks enter a call at
different times, so the tuner needs each rank's entry on one clock. Each
rank estimates its offset to the leader's clock by round trips over the
control group (NTP's rule: of several rounds, the one with the shortest
round trip bounds the error by half of it) and adds it to its own readings.
On one machine the offset is near 0 (one monotonic clock); between hosts it
is whatever their clocks disagree by, which NTP alone leaves at
milliseconds. The estimate is renewed from time to time (Control), as two
hosts' clocks drift apart.
"""

from __future__ import annotations

import time
from typing import Callable, Tuple

import torch
import torch.distributed as dist

ROUNDS = 8  # round trips per rank and estimate
_TAG = 0x7E_C10C  # control-group tag of the round trips


def estimate(t0: float, t1: float, t2: float, t3: float) -> Tuple[float, float]:
    """One round trip: the rank sent at t0 (its clock), the leader received
    at t1 and replied at t2 (the leader's), the rank got the reply at t3.
    Returns (offset to add to the rank's clock, round trip)."""
    return ((t1 - t0) + (t2 - t3)) / 2, (t3 - t0) - (t2 - t1)


def sync(group: dist.ProcessGroup, rank: int, size: int, leader: int, rounds: int = ROUNDS,
         clock: Callable[[], float] = time.perf_counter) -> Tuple[float, float]:
    """Every rank of the group calls it at once. Returns this rank's offset
    to the leader's clock and the round trip of the estimate (0, 0 on the
    leader). The leader answers the ranks one after another. group is a
    bare Gloo group (driven through its own methods)."""
    buf = torch.zeros(2, dtype=torch.float64)
    if rank == leader:
        for r in range(size):
            if r == leader:
                continue
            for _ in range(rounds):
                group.recv([buf], r, _TAG).wait()
                t1 = clock()
                buf[0] = t1
                buf[1] = clock()
                group.send([buf], r, _TAG).wait()
        return 0.0, 0.0
    best = (0.0, float("inf"))
    for _ in range(rounds):
        t0 = clock()
        buf[0] = t0
        group.send([buf], leader, _TAG).wait()
        group.recv([buf], leader, _TAG).wait()
        t3 = clock()
        off, rtt = estimate(t0, float(buf[0]), float(buf[1]), t3)
        if rtt < best[1]:
            best = (off, rtt)
    return best
