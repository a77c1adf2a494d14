"""The Work a react collective returns: a future completed by the group's
collective thread. A Work made by _create_work_from_future would swallow the
collective's exception; this one raises it from wait()."""

from __future__ import annotations

from datetime import timedelta
from typing import Optional

import torch
import torch.distributed as dist


class Work(dist._Work):
    def __init__(self, fut: torch.futures.Future, what: str = "collective"):
        super().__init__()
        self._fut = fut
        self._what = what

    def wait(self, timeout: Optional[timedelta] = None) -> bool:
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
