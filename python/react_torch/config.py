"""react_torch configuration: environment variables (REACT_*) and configure().

Every tuner parameter of the paper is reachable; names follow the Go tuner's
Config (pkg/tuner/config.go), which documents what each one means.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, Optional

# name of the field -> (environment variable, type, default, help)
_FIELDS = {
    "tune": ("REACT_TUNE", bool, True, "run the tuner; 0 keeps the static patterns"),
    "algo_allreduce": ("REACT_ALGO_ALLREDUCE", str, "tree", "tree, ring or halving_doubling"),
    "algo_allgather": ("REACT_ALGO_ALLGATHER", str, "ring", "ring or recursive_doubling"),
    "algo_reducescatter": ("REACT_ALGO_REDUCESCATTER", str, "ring", "ring"),
    "algo_broadcast": ("REACT_ALGO_BROADCAST", str, "tree", "tree"),
    "algo_reduce": ("REACT_ALGO_REDUCE", str, "tree", "tree"),
    "leader": ("REACT_LEADER", int, 0, "rank that runs the tuner"),
    "fct_log": ("REACT_FCT_LOG", str, "", "write per-flow FCTs in the react replay format, one file per collective: PATH.OP.DTYPE.NUMEL[.rootR].jsonl (leader)"),
    "log_level": ("REACT_LOG_LEVEL", int, 1, "libreact log level: 0 debug, 1 info, 2 warn, 3 error"),
    "log_path": ("REACT_LOG_PATH", str, "", "libreact log file ('' = stderr)"),
    "gomaxprocs": ("REACT_GOMAXPROCS", int, 1, "Go threads per rank (0 = Go's default, all CPUs)"),
    "segment_bytes": ("REACT_SEGMENT_BYTES", int, 0, "a message is sent in segments of about this size, so reducing one overlaps receiving the next (0: whole)"),
    "min_calls": ("REACT_MIN_CALLS", int, 3, "a key is tuned only from its this-many-th call on"),
    "test_slow_rank": ("REACT_TEST_SLOW_RANK", int, -1, "test hook: the leader multiplies the FCTs of flows into this rank by 4 before the tuner sees them"),
    "Model": ("REACT_MODEL", str, "react", "the tuner's loop: react (a link model learned from the FCTs judges whole patterns) or paper (the paper's Algorithm 1)"),
    "MinGain": ("REACT_MIN_GAIN", float, 0.01, "react: minimum predicted speed-up of a change"),
    "Confidence": ("REACT_CONFIDENCE", float, 0.95, "react: one-sided level at which a change's observed gain must be significant to keep it"),
    "B": ("REACT_B", int, 6, "epochs per batch"),
    "Delta1": ("REACT_DELTA1", float, 0.2, "paper: steady congestion threshold"),
    "Delta2": ("REACT_DELTA2", float, 0.15, "paper: erratic congestion threshold"),
    "Kt": ("REACT_KT", int, 15, "paper: transforms tried per batch"),
    "KtGrowth": ("REACT_KT_GROWTH", int, 5, "paper: added to Kt after a fruitless batch"),
    "Epsilon": ("REACT_EPSILON", float, 0.05, "paper: minimum estimated gain of a transform"),
    "H": ("REACT_H", int, 60, "epochs of FCT history kept"),
    "EMax": ("REACT_EMAX", int, 5, "paper: fruitless batches before exploration stops"),
    "AMax": ("REACT_AMAX", int, 4, "swaps in one change"),
    "TauR": ("REACT_TAUR", float, 0.05, "paper: observed gain needed to keep a change"),
    "Lag": ("REACT_LAG", int, 5, "epochs between a decision and the switch"),
    "Seed": ("REACT_SEED", int, 1, "tuner's random seed"),
}

_TUNER_KEYS = ("Model", "MinGain", "Confidence", "B", "Delta1", "Delta2", "Kt", "KtGrowth", "Epsilon", "H", "EMax", "AMax", "TauR", "Lag", "Seed")


@dataclasses.dataclass
class Config:
    tune: bool = True
    algo_allreduce: str = "tree"
    algo_allgather: str = "ring"
    algo_reducescatter: str = "ring"
    algo_broadcast: str = "tree"
    algo_reduce: str = "tree"
    leader: int = 0
    fct_log: str = ""
    log_level: int = 1
    log_path: str = ""
    gomaxprocs: int = 1
    segment_bytes: int = 0
    min_calls: int = 3
    test_slow_rank: int = -1
    Model: str = "react"
    MinGain: float = 0.01
    Confidence: float = 0.95
    B: int = 6
    Delta1: float = 0.2
    Delta2: float = 0.15
    Kt: int = 15
    KtGrowth: int = 5
    Epsilon: float = 0.05
    H: int = 60
    EMax: int = 5
    AMax: int = 4
    TauR: float = 0.05
    Lag: int = 5
    Seed: int = 1

    def tuner_json(self) -> Dict[str, Any]:
        # the executor runs each rank's steps in order and times a flow from
        # the receiver's step start: the link model must replay it so
        return {**{k: getattr(self, k) for k in _TUNER_KEYS}, "Stepped": True}

    def algo(self, op: str) -> str:
        return getattr(self, "algo_" + op)


def _parse(name: str, var: str, typ: type, raw: str) -> Any:
    try:
        if typ is bool:
            low = raw.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        return typ(raw)
    except ValueError:
        raise ValueError(f"react_torch: {var}={raw!r} is not a valid {typ.__name__} for {name}") from None


def from_env(env: Optional[Dict[str, str]] = None) -> Config:
    """Builds a Config from REACT_* variables; an unknown REACT_ variable is an error."""
    env = os.environ if env is None else env
    known = {var for var, _, _, _ in _FIELDS.values()} | {"REACT_LIBRARY"}
    unknown = sorted(k for k in env if k.startswith("REACT_") and k not in known)
    if unknown:
        raise ValueError(f"react_torch: unknown environment variable(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    cfg = Config()
    for name, (var, typ, _, _) in _FIELDS.items():
        if var in env:
            setattr(cfg, name, _parse(name, var, typ, env[var]))
    return cfg


def replace(cfg: Config, **kw: Any) -> Config:
    """Returns cfg with fields replaced; an unknown name is an error."""
    bad = sorted(k for k in kw if k not in _FIELDS)
    if bad:
        raise ValueError(f"react_torch: unknown option(s) {', '.join(bad)}; known: {', '.join(sorted(_FIELDS))}")
    return dataclasses.replace(cfg, **kw)


def table() -> str:
    """The README's table of environment variables."""
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for name, (var, _, default, help_) in _FIELDS.items():
        shown = int(default) if isinstance(default, bool) else default
        rows.append(f"| `{var}` | {f'`{shown}`' if shown != '' else '(none)'} | {help_} |")
    return "\n".join(rows)
