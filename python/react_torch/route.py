"""Which of torch's two routes a backend written in Python takes, and what
the older one needs.

From torch 2.14 react is a c10d Backend that torch wraps in its own
ProcessGroup. Before, torch cannot construct a Backend written in Python
(pybind's "No constructor defined!"), and react is a ProcessGroup of its
own, the route torch has taken for Python groups since 2.0; adapt() gives
that class what torch's wrapper would have (docs/install.md).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from .work import Work

_C10dBackend = torch._C._distributed_c10d.Backend


def _backend_constructible() -> bool:
    class _Probe(_C10dBackend):
        pass

    try:
        _Probe(0, 1)
    except TypeError:
        return False
    return True


BACKEND_ROUTE = _backend_constructible()
# the class react's backend derives from on this torch
BASE = _C10dBackend if BACKEND_ROUTE else dist.ProcessGroup

# Methods torch calls on a ProcessGroup with tensors.
_COLLECTIVES = ("allreduce", "broadcast", "reduce", "allgather", "_allgather_base", "allgather_coalesced", "allgather_into_tensor_coalesced",
                "reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor_coalesced", "allreduce_coalesced", "alltoall", "alltoall_base",
                "send", "recv", "recv_anysource", "gather", "scatter")


def _all_meta(args) -> bool:
    flat, stack = [], list(args)
    while stack:
        a = stack.pop()
        if isinstance(a, (list, tuple)):
            stack.extend(a)
        elif isinstance(a, torch.Tensor):
            flat.append(a)
    return bool(flat) and all(t.device.type == "meta" for t in flat)


def _meta_noop(method):
    """torch calls a Python ProcessGroup's methods directly, without the
    dispatcher's meta kernels that make a collective of meta tensors a
    no-op for its own backends; this does the same."""

    def call(self, *args, **kwargs):
        if _all_meta(args):
            fut = torch.futures.Future()
            fut.set_result(None)
            return Work(fut, method.__name__)
        return method(self, *args, **kwargs)

    call.__name__, call.__doc__ = method.__name__, method.__doc__
    return call


def adapt(cls):
    """On the ProcessGroup route: the group's name and description kept in
    Python (a ProcessGroup keeps them in its backends, and this one has
    none: torch's _set_group_name would set nothing and group_name would
    raise "ProcessGroup name not set", which destroy_process_group reads;
    C++ callers that ask the group its name do not see it), and meta calls
    a no-op. The instance holds them in _name and _desc. On the Backend
    route, cls as it is."""
    if BACKEND_ROUTE:
        return cls

    def set_name(self, name: str) -> None:
        self._name = name

    def set_desc(self, desc: str) -> None:
        self._desc = desc

    cls.group_name = property(lambda self: self._name)
    cls.group_desc = property(lambda self: self._desc)
    cls._set_group_name, cls._set_group_desc = set_name, set_desc
    for m in _COLLECTIVES:
        if hasattr(cls, m):
            setattr(cls, m, _meta_noop(getattr(cls, m)))
    return cls
