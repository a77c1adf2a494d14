"""A group's collective lane: its calls run one at a time, in call order, on
the group's collective thread, except that a caller that waits for a call
no thread has started runs it (and the calls queued before it) itself.

A synchronous call (every torch collective without async_op) is then one
call on the caller's thread, as it would be without a lane: no hand-off to
the collective thread and back, which on a few busy cores costs as much as
moving a small tensor (two thread wake-ups a call). An asynchronous call
still runs without its caller: the collective thread takes it at once.
"""

from __future__ import annotations

import collections
import threading
from typing import Callable, Deque, Optional


class Job:
    __slots__ = ("fn", "started")

    def __init__(self, fn: Callable[[], None]):
        self.fn = fn  # never raises: its outcome goes to its Work's future
        self.started = False


class Lane:
    def __init__(self, name: str = "react-coll"):
        self._name = name
        self._cv = threading.Condition()
        self._queue: Deque[Job] = collections.deque()
        self._busy = False  # a job runs (on the lane's thread or a caller's)
        self._closed = False
        self._waiters = 0  # callers in run_until, waiting for a running job
        self._thread: Optional[threading.Thread] = None

    def submit(self, fn: Callable[[], None], wake: bool = True) -> Job:
        """Queues fn; wake False leaves the lane's thread asleep (the
        caller runs it at once with run_until)."""
        job = Job(fn)
        with self._cv:
            if self._closed:
                raise RuntimeError("react_torch: the group is shut down; no collective can be queued on it")
            self._queue.append(job)
            if not wake:
                return job
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            self._cv.notify_all()
        return job

    def _take(self) -> Optional[Job]:
        """The next job, marked running; None when another runs or none is
        queued. Holds the lock."""
        if self._busy or not self._queue:
            return None
        job = self._queue.popleft()
        job.started = True
        self._busy = True
        return job

    def _done(self) -> None:
        with self._cv:
            self._busy = False
            if self._queue or self._waiters or self._closed:
                self._cv.notify_all()

    def _loop(self) -> None:
        while True:
            with self._cv:
                job = self._take()
                while job is None:
                    if self._closed and not self._queue and not self._busy:
                        return
                    self._cv.wait()
                    job = self._take()
            try:
                job.fn()
            finally:
                self._done()

    def run_until(self, job: Job) -> None:
        """Runs, on the calling thread, the queued jobs up to and including
        job, in order, while no other thread has started them; returns once
        job has started somewhere (its future says when it ends)."""
        while True:
            with self._cv:
                while not job.started and self._busy:
                    self._waiters += 1
                    try:
                        self._cv.wait()
                    finally:
                        self._waiters -= 1
                if job.started:
                    return
                nxt = self._take()
            if nxt is None:  # job started elsewhere in between
                return
            try:
                nxt.fn()
            finally:
                self._done()

    def close(self) -> None:
        """Runs what was queued, then stops the lane's thread."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
            t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join()
