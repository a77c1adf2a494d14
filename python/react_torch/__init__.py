"""react_torch: collectives that route around network congestion.

`import react_torch` registers the torch.distributed backend "react" for cpu
and cuda; pass backend="react" to init_process_group and start with torchrun.
"""

import torch  # noqa: F401  (before the native library: signal handler order)
import torch.distributed as dist

from .config import Config, from_env, replace, table  # noqa: F401
from ._lib import ReactError  # noqa: F401

__all__ = ["Config", "ReactError", "configure", "from_env", "stats"]

_overrides = {}


def configure(**options):
    """Overrides REACT_* settings for groups created after the call; an
    unknown option name raises ValueError."""
    replace(from_env(), **options)  # validates names and values
    _overrides.update(options)


def stats(group=None):
    """Per collective key of a react group (default: the default group): calls,
    pattern version in force, switches and refusals. [] for another backend."""
    from .backend import ReactProcessGroup

    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    return pg.stats() if isinstance(pg, ReactProcessGroup) else []


def _create(store, rank, size, timeout):
    from .backend import ReactProcessGroup

    cfg = replace(from_env(), **_overrides)
    return ReactProcessGroup(store, rank, size, timeout, cfg)


if "react" not in dist.Backend.backend_list:
    dist.Backend.register_backend("react", _create, devices=["cpu", "cuda"])
