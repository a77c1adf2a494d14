"""The control plane's cost on the collective thread: one call's begin and
end (libreact's react_control_begin and react_control_end, through
_lib.Control as the backend makes them), untuned and tuned, on one process.

    python tests/python/bench_control.py [--calls 20000] [--ranks 8] [--algo tree]

A tuned call's record carries this rank's arrivals (the flows into rank 0, from its plan)
as the backend passes them: the plan's arrays, which the executor writes in place.
The batch is made too large to fill, so nothing is exchanged: what is timed
is what every call pays. Prints microseconds per call.
"""

import argparse
import json
import time

from react_torch import _lib
from react_torch.pattern import Pattern, plan


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--algo", default="tree")
    a = ap.parse_args()
    raw = _lib.generate_pattern("allreduce", a.algo, a.ranks, -1)
    print(f"allreduce {a.algo}, {a.ranks} ranks, {a.calls} calls")
    for tuned in (False, True):
        c = _lib.Control(json.dumps({"batch": 10**9, "min_calls": 0, "tuned": tuned, "leader": False}))
        k = c.key(raw, 1 << 24, 4, "{}", "")
        pl = plan(Pattern.decode(raw), 0, 1 << 24, 4, 0)
        pl.arrivals[:] = [1e-4 * (i + 1) for i in range(len(pl.arrivals))]
        t0 = time.perf_counter()
        for _ in range(a.calls):
            c.begin(k)
            c.end(k, pl if tuned else None, 1e-3, 0, 1.0)
        us = (time.perf_counter() - t0) / a.calls * 1e6
        c.close()
        print(f"tuned: {us:.1f} us per call ({len(pl.flows)} arrivals)" if tuned else f"untuned: {us:.1f} us per call")


if __name__ == "__main__":
    main()
