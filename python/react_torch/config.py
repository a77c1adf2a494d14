"""react_torch configuration: environment variables (REACT_*) and configure().

Every tuner parameter of the paper is reachable; names follow the Go tuner's
Config (pkg/tuner/config.go), which documents what each one means.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from typing import Any, Dict, List, Optional

log = logging.getLogger("react_torch")

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
    "log_level": ("REACT_LOG_LEVEL", int, 2, "libreact log level: 0 debug, 1 info, 2 warn, 3 error, 4 off"),
    "log_path": ("REACT_LOG_PATH", str, "", "libreact log file ('' = stderr)"),
    "gomaxprocs": ("REACT_GOMAXPROCS", int, 1, "Go threads per rank (0 = Go's default, all CPUs)"),
    "segment_bytes": ("REACT_SEGMENT_BYTES", int, 0, "a message is sent in segments of about this size, so reducing one overlaps receiving the next (0: whole)"),
    "min_calls": ("REACT_MIN_CALLS", int, 3, "a key is tuned only from its this-many-th call on"),
    "check_calls": ("REACT_CHECK_CALLS", bool, False, "compare every rank's call (op, dtype, count, epoch, version) before its data moves; a mismatch fails on every rank (default: on with TORCH_DISTRIBUTED_DEBUG=DETAIL, as Gloo's own check; it costs 20-40% of a 1 MB AllReduce on 4 CPU ranks here)"),
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
    log_level: int = 2
    log_path: str = ""
    gomaxprocs: int = 1
    segment_bytes: int = 0
    min_calls: int = 3
    check_calls: bool = False
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


# Unknown REACT_* variables already warned about (once per process: other
# software uses the prefix too, REACT_APP_* for web front ends).
_warned: set = set()


def from_env(env: Optional[Dict[str, str]] = None) -> Config:
    """Builds a Config from REACT_* variables. A REACT_ variable it does not
    know is ignored with a warning (once per name): the prefix is not ours
    alone, and a training job must not die of another program's setting.
    A known variable with a value of the wrong type is an error."""
    env = os.environ if env is None else env
    known = {var for var, _, _, _ in _FIELDS.values()} | {"REACT_LIBRARY"}
    unknown = sorted(k for k in env if k.startswith("REACT_") and k not in known and k not in _warned)
    if unknown:
        _warned.update(unknown)
        log.warning("react_torch: ignoring unknown environment variable(s) %s: not react_torch settings (README lists those)", ", ".join(unknown))
    cfg = Config()
    # like torch's own collective checks: on when the user asks torch for them
    cfg.check_calls = env.get("TORCH_DISTRIBUTED_DEBUG", "").upper() == "DETAIL"
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


def _show(name: str, cfg: Config) -> str:
    """How a setting reads in an error: its variable and value."""
    return f"{_FIELDS[name][0]}={getattr(cfg, name)!r}"


# REACT_LOG_LEVEL -> capi/react.h's REACT_LOG_* (Go's levels start at -1).
LOG_LEVELS = {0: -1, 1: 0, 2: 1, 3: 2, 4: 6}


def validate(cfg: Config, size: int) -> List[str]:
    """What is wrong with cfg for a group of size ranks, one sentence per
    problem naming the variable. The tuner's own rules (B, H, Lag, ...) are
    Go's (tuner.Config.Validate), asked through libreact, not copied here;
    libreact also refuses a rank count past its limit (REACT_MAX_RANKS)."""
    from . import _lib

    bad = []
    if cfg.log_level not in LOG_LEVELS:
        bad.append(f"{_show('log_level', cfg)}: want 0 (debug), 1 (info), 2 (warn), 3 (error) or 4 (off)")
    if not 0 <= cfg.leader < size:
        bad.append(f"{_show('leader', cfg)}: the leader must be a rank of the group, 0 to {size - 1}")
    if cfg.segment_bytes < 0:
        bad.append(f"{_show('segment_bytes', cfg)}: want >= 0 (0 sends whole messages)")
    if cfg.min_calls < 1:
        bad.append(f"{_show('min_calls', cfg)}: want >= 1")
    if cfg.gomaxprocs < 0:
        bad.append(f"{_show('gomaxprocs', cfg)}: want >= 0 (0 leaves Go's default)")
    if not -1 <= cfg.test_slow_rank < size:
        bad.append(f"{_show('test_slow_rank', cfg)}: want -1 (off) or a rank, 0 to {size - 1}")
    # algorithm names and the rank count, by generating the patterns' smallest form
    for op in ("allreduce", "allgather", "reducescatter", "broadcast", "reduce"):
        try:
            _lib.generate_pattern(op, cfg.algo(op), 2, 0 if op in ("broadcast", "reduce") else -1)
        except _lib.ReactError as e:
            bad.append(f"{_show('algo_' + op, cfg)}: {_why(e)}")
    if size > 1:
        try:
            _lib.generate_pattern("broadcast", "tree", size, 0)
        except _lib.ReactError as e:
            bad.append(f"a group of {size} ranks: {_why(e)}")
    if cfg.tune and size > 1:
        import json

        try:
            _lib.Tuner(_lib.generate_pattern("allreduce", "ring", 2, -1), 1.0, json.dumps(cfg.tuner_json())).close()
        except _lib.ReactError as e:
            m = re.search(r"tuner config: (\w+) =", str(e))
            what = _show(m.group(1), cfg) if m and m.group(1) in _FIELDS else "tuner settings"
            bad.append(f"{what}: {_why(e)}")
    return bad


def _why(e: Exception) -> str:
    """libreact's sentence without the calls' prefixes."""
    return re.sub(r"^(react_torch: [^:]*: )?(react_\w+: )?", "", str(e))


# Settings every rank must share: each rank runs the same pattern, switch
# epoch and segment tags only when they agree.
AGREE = ("tune", "algo_allreduce", "algo_allgather", "algo_reducescatter", "algo_broadcast", "algo_reduce",
         "leader", "segment_bytes", "min_calls", "Lag", "check_calls")


def shared(cfg: Config) -> Dict[str, Any]:
    return {k: getattr(cfg, k) for k in AGREE}


def table() -> str:
    """The README's table of environment variables."""
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for name, (var, _, default, help_) in _FIELDS.items():
        shown = int(default) if isinstance(default, bool) else default
        rows.append(f"| `{var}` | {f'`{shown}`' if shown != '' else '(none)'} | {help_} |")
    return "\n".join(rows)
