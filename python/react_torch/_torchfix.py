"""A Work a Python backend returns reaches the caller inside torch's
PyWorkHolder, which passes wait() and get_future() on and nothing else:
is_completed() stays False after a successful wait and _source_rank()
raises (dist.recv without a source calls it). Gloo's own Works answer both.
This teaches torch's Work to ask the future in those two cases; a Work that
answers for itself (every C++ backend's) is not affected.
"""

import torch

_W = torch._C._distributed_c10d.Work
_patched = False


def apply() -> None:
    global _patched
    if _patched:
        return
    _patched = True
    own_completed, own_source = _W.is_completed, _W._source_rank

    def is_completed(self) -> bool:
        if own_completed(self):
            return True
        try:
            return self.get_future().done()
        except RuntimeError:  # a Work without a future
            return False

    def _source_rank(self) -> int:
        try:
            return own_source(self)
        except RuntimeError:
            from .delegated import AnySource

            fut = self.get_future()
            v = fut.value() if fut.done() else None
            if isinstance(v, AnySource):
                return v.rank
            raise

    is_completed.__doc__ = own_completed.__doc__
    _W.is_completed = is_completed
    _W._source_rank = _source_rank
