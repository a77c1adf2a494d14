"""react_torch: collectives that route around network congestion.

`import react_torch` registers the torch.distributed backend "react" for cpu
and cuda; pass backend="react" to init_process_group and start with torchrun.
"""

import torch  # before the native library: signal handler order
import torch.distributed as dist

from .config import Config, from_env, replace, table  # noqa: F401
from . import _torchfix
from ._lib import ReactError  # noqa: F401

__all__ = ["Config", "ReactError", "backend_of", "configure", "control_stats", "from_env", "report", "stats"]

_overrides = {}


def configure(**options):
    """Overrides REACT_* settings for groups created after the call; an
    unknown option name raises ValueError."""
    replace(from_env(), **options)  # validates names and values
    _overrides.update(options)


def backend_of(group=None):
    """The react backend of a group (default: the default group), or None
    when the group runs another backend."""
    from .backend import ReactBackend

    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if isinstance(pg, ReactBackend):  # the ProcessGroup route (torch before 2.14)
        return pg
    try:
        b = pg._get_backend(torch.device("cpu"))
    except (RuntimeError, AttributeError):
        return None
    return b if isinstance(b, ReactBackend) else None


def stats(group=None):
    """Per collective key of a react group (default: the default group): calls,
    pattern version in force, switches and refusals. [] for another backend."""
    b = backend_of(group)
    return b.stats() if b is not None else []


def control_stats(group=None):
    """A react group's control plane: exchanges, operations on its control
    group, epochs that waited for it (and seconds), pattern switches. {} for
    another backend."""
    b = backend_of(group)
    return b.control_stats() if b is not None else {}


def report(group=None):
    """What the leader's tuners know about the network, as this rank last
    heard it (react_torch.reporting.Report: per collective, the congested
    links, slow pairs, collective times and the changes made), or None
    before the first answer or for a group without a tuner. It never
    waits: the call asks for a newer report, which the leader sends with
    the answer to this rank's next exchange."""
    b = backend_of(group)
    return b.report() if b is not None else None


def _create(opts, backend_options=None):
    from .backend import create

    return create(opts, backend_options, replace(from_env(), **_overrides))


# The oldest torch react runs on (pyproject.toml's lower bound says the same).
TORCH_FLOOR = "2.8"


def _check_torch() -> None:
    """From 2.14 react is a c10d Backend written in Python; before, torch
    cannot construct one (pybind's "No constructor defined!"), and react is
    a ProcessGroup of its own (route.py). Older than the floor
    is refused."""
    have = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    if have < tuple(int(x) for x in TORCH_FLOOR.split(".")):
        raise ImportError(f"react_torch needs torch {TORCH_FLOOR} or newer, this is torch {torch.__version__}")


_check_torch()
_torchfix.apply()

if "react" not in dist.Backend.backend_list:
    # extended_api: torch hands the creator its options (group name, global
    # ranks) and wraps the Backend it returns in its own ProcessGroup.
    dist.Backend.register_backend("react", _create, extended_api=True, devices=["cpu", "cuda"])
