"""The call ledger (agree.Ledger) and the tags it salts, in one process:
tags fit Gloo's and keep calls apart; ledgers on a real store find the
first call two ranks made differently and name every rank. The whole
mismatch path, on real groups, is in test_conform.py."""

import itertools
import os
import random
import re

import pytest
import torch.distributed as dist

from react_torch import _lib, agree, executor
from react_torch.pattern import Message, Pattern, plan


def test_tags_fit_gloo_and_are_distinct():
    """Gloo takes tags in [0, 2^31); data tags stay below the call check's
    and the kill's; (salt, step, segment) -> tag is one to one."""
    hdr = open(os.path.join(os.path.dirname(__file__), "..", "..", "capi", "react.h")).read()
    top = (1 << int(re.search(r"#define REACT_CALL_SALT_BITS (\d+)", hdr).group(1))) - 1
    seen = set()
    rng = random.Random(1)
    salts = [0, 1, top, top - 1] + [rng.randrange(top) for _ in range(50)]
    raw = _lib.generate_pattern("allreduce", "ring", 2, -1)
    pl = plan(Pattern.decode(raw), 0, 8, 4, 0)  # the tag constants come from libreact's plan
    for s, step, seg in itertools.product(salts, range(pl.tag_steps), range(pl.max_segments)):
        t = executor.tag(pl, s, Message(step=step, src=0, dst=1, tag=step % pl.tag_steps, flows=[]), seg)
        assert 0 <= t < agree.CHECK_TAG
        seen.add(t)
    assert len(seen) == len(salts) * pl.tag_steps * pl.max_segments


def ledgers(n):
    store = dist.HashStore()
    killed = []
    return [agree.Ledger(store, r, n, lambda r=r: killed.append(r)) for r in range(n)], store, killed


def publish(led):
    """What the watchdog does once a call is stuck."""
    led.store.set(agree._ENTRY % led.rank, led._entry())


def test_ledgers_name_the_first_call_that_differs():
    leds, store, killed = ledgers(3)
    try:
        for led in leds:
            led.begin("allreduce", "float32", 1000, -1, "sum", 0, 0)
            led.end()
        # rank 2 skips a call: its next call is the others' call after next
        for led in leds[:2]:
            led.begin("broadcast", "int64", 10, 0, "", 0, 0)
            led.end()
        for led in leds:
            led.begin("allreduce", "float32", 500, -1, "sum", 0, 0)
            publish(led)
        leds[0].peers = [1]
        assert leds[0]._compare() is None  # ranks 0 and 1 agree
        leds[0].peers = [1, 2]
        text = leds[0]._compare()
        assert text == ("ranks 0, 1: broadcast of 10 int64 from root 0, call 1 on the group, epoch 0 of its key, pattern version 0; "
                        "rank 2: allreduce (sum) of 500 float32, call 1 on the group, epoch 0 of its key, pattern version 0"), text
    finally:
        for led in leds:
            led.close()


def test_a_mismatch_fails_the_group_for_good():
    leds, store, killed = ledgers(2)
    led = leds[0]
    try:
        led.begin("allreduce", "float32", 4, -1, "sum", 0, 0)
        # a timeout says nothing of a peer's verdict, and the store is not asked
        store.set(agree._VERDICT, "rank 0: x; rank 1: y")
        assert led.verdict(RuntimeError("Timed out waiting 30000ms for recv operation to complete")) is None
        assert led.verdict(RuntimeError("Connection closed by peer [127.0.0.1]:5000")) == "rank 0: x; rank 1: y"
        assert killed == [0]
        with pytest.raises(agree.MismatchError, match="unusable after an earlier mismatch: rank 0: x; rank 1: y"):
            led.begin("allreduce", "float32", 4, -1, "sum", 1, 0)
    finally:
        led.close()
