"""The Work a react collective returns: a future completed by the group's
collective thread. A Work made by _create_work_from_future would swallow the
collective's exception; this one raises it from wait()."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Callable, Optional

import torch
import torch.distributed as dist


class WaitTimeout(RuntimeError):
    """Work.wait's own timeout passed before the collective completed."""


class Work(dist._Work):
    def __init__(self, fut: torch.futures.Future, what: str = "collective", run: Optional[Callable[[], None]] = None):
        super().__init__()
        self._fut = fut
        self._what = what
        self._run = run  # runs the collective on the waiting thread if no thread has started it (lane.Lane)

    def wait(self, timeout: Optional[timedelta] = None) -> bool:
        """Waits for the collective and raises what it raised. A timeout
        (torch passes timedelta(0) for none) bounds the wait: past it the
        call raises, naming the collective; the collective itself stays
        queued, as with Gloo."""
        secs = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout or 0)
        if secs > 0 and not self._fut.done():
            done = threading.Event()
            self._fut.add_done_callback(lambda _: done.set())
            if not done.wait(secs):
                raise WaitTimeout(f"react_torch: {self._what} did not complete within the {secs:g} s given to Work.wait")
        elif self._run is not None and not self._fut.done():
            self._run()
        self._fut.wait()  # raises the collective's exception
        return True

    def is_completed(self) -> bool:
        return self._fut.done()

    def is_success(self) -> bool:
        if not self._fut.done():
            return False
        try:
            self._fut.value()
        except Exception:
            return False
        return True

    def exception(self):
        if not self._fut.done():
            return None
        try:
            self._fut.value()
        except Exception as e:
            return e
        return None

    def get_future(self) -> torch.futures.Future:
        return self._fut

    def result(self):
        return self._fut.value()

    def synchronize(self) -> None:
        self.wait()
