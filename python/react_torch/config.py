"""react_torch configuration: environment variables (REACT_*) and configure().

react_torch's own settings are listed here. The tuner's are Go's
(pkg/tuner/config.go): their names, types, defaults and help come from
libreact at run time (react_tuner_settings), never copied here; a Config
holds only those the user set, and those alone reach the tuner.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from typing import Any, Dict, List, Optional, Tuple

from . import _lib, ops

log = logging.getLogger("react_torch")

# react_torch's own settings: name -> (environment variable, type, default, help)
_FIELDS = {
    "tune": ("REACT_TUNE", bool, True, "run the tuner; 0 keeps the static patterns"),
    "hosts": ("REACT_HOSTS", str, "auto", "auto (hierarchical when the group spans several hosts and one runs several of its ranks), flat (one pattern over every rank) or hier"),
    "algo_allreduce": ("REACT_ALGO_ALLREDUCE", str, "tree", "tree, ring or halving_doubling"),
    "algo_allgather": ("REACT_ALGO_ALLGATHER", str, "ring", "ring or recursive_doubling"),
    "algo_reducescatter": ("REACT_ALGO_REDUCESCATTER", str, "ring", "ring"),
    "algo_broadcast": ("REACT_ALGO_BROADCAST", str, "tree", "tree or binomial"),
    "algo_reduce": ("REACT_ALGO_REDUCE", str, "tree", "tree or binomial"),
    "leader": ("REACT_LEADER", int, 0, "rank that runs the tuner"),
    "fct_log": ("REACT_FCT_LOG", str, "", "write per-flow FCTs in the react replay format, one file per collective: PATH.OP.DTYPE.NUMEL[.rootR].jsonl (leader)"),
    "log_level": ("REACT_LOG_LEVEL", int, 2, "libreact log level: 0 debug, 1 info, 2 warn, 3 error, 4 off"),
    "log_path": ("REACT_LOG_PATH", str, "", "libreact log file ('' = stderr)"),
    "gomaxprocs": ("REACT_GOMAXPROCS", int, 1, "Go threads per rank (0 = Go's default, all CPUs; a tuned group's leader takes at least 2: its tuners keep one)"),
    "segment_bytes": ("REACT_SEGMENT_BYTES", int, 0, "a message is sent in segments of about this size, so reducing one overlaps receiving the next (0: whole)"),
    "min_calls": ("REACT_MIN_CALLS", int, 3, "a key is tuned only from its this-many-th call on"),
    "check_calls": ("REACT_CHECK_CALLS", bool, False, "also compare every rank's call before any of its data moves, even between the ranks that agree, and on NCCL (default: on with TORCH_DISTRIBUTED_DEBUG=DETAIL, as Gloo's own check; it costs about 30% of a 1 MB AllReduce on 4 CPU ranks here). Without it a call's tags carry its signature and a mismatch still fails on every rank"),
}

# Tuner settings the package sets per collective, not the user: Stepped says
# how the executor that ran it times flows (control.py: the CPU dataflow
# records arrivals and entries on the group clock, read by the dependency
# rule; CUDA's step batches record step ends, read from the receiver's
# previous step); OneHost that every rank of the pattern is on one host
# (hosts.py found them so), where no flow crosses a fabric.
_FIXED = ("Stepped", "OneHost")

_TYPES = {"int": int, "float": float, "string": str, "bool": bool}

# The tuner's settings, name -> (type, default, help), read once per process
# (a forked child keeps them: it cannot call Go).
_tuner: Optional[Dict[str, Tuple[type, Any, str]]] = None


def tuner_settings() -> Dict[str, Tuple[type, Any, str]]:
    """The tuner's settings a user may set, as libreact lists them, in Go's
    order: name -> (type, default, help)."""
    global _tuner
    if _tuner is None:
        _tuner = {s["name"]: (_TYPES[s["type"]], _TYPES[s["type"]](s["default"]), s["help"])
                  for s in _lib.tuner_settings() if s["name"] not in _FIXED}
    return _tuner


def variable(name: str) -> str:
    """A setting's environment variable. A tuner setting's is REACT_ and its
    name in upper case, with an underscore where a word of two or more
    letters starts: KtGrowth is REACT_KT_GROWTH, TauR REACT_TAUR, EMax
    REACT_EMAX."""
    if name in _FIELDS:
        return _FIELDS[name][0]
    return "REACT_" + re.sub(r"([a-z])([A-Z][a-z])", r"\1_\2", name).upper()


@dataclasses.dataclass
class Config:
    tune: bool = True
    hosts: str = "auto"
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
    # the tuner settings the user set (REACT_ variables, configure()), by
    # the tuner's names; the others are libreact's defaults
    tuner_set: Dict[str, Any] = dataclasses.field(default_factory=dict)

    def tuner_json(self) -> Dict[str, Any]:
        """What the tuner is told: only what was set, so that a default
        stays Go's."""
        return dict(self.tuner_set)

    def __getattr__(self, name: str) -> Any:
        # a tuner setting (cfg.Lag) reads as set, else as libreact's default
        if name.startswith("_") or name == "tuner_set" or name in _FIELDS:
            raise AttributeError(name)
        s = tuner_settings().get(name)
        if s is None:
            raise AttributeError(f"react_torch Config has no setting {name!r}")
        return self.tuner_set.get(name, s[1])

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


# The tests' congestion hook: every message into this rank (on hosts, into
# its host) arrives TEST_HOLD_S late, as if its downlink were congested, on
# tuned groups. Not a setting: not in the table, not in configure().
TEST_SLOW_RANK = "REACT_TEST_SLOW_RANK"
# many times a small call's flows on this machine's loopback, so the tuner
# sees it through CPU noise (5 ms was lost in it with a 3 GB pip install
# beside the tests)
TEST_HOLD_S = 0.02


def test_slow_rank(size: int, env: Optional[Dict[str, str]] = None) -> int:
    """The hook's rank, -1 when off; a value that is not a rank of the
    group is an error naming the variable."""
    env = os.environ if env is None else env
    raw = env.get(TEST_SLOW_RANK, "-1")
    try:
        r = int(raw)
    except ValueError:
        r = size
    if not -1 <= r < size:
        raise ValueError(f"react_torch: {TEST_SLOW_RANK}={raw!r}: want -1 (off) or a rank, 0 to {size - 1}")
    return r


# Unknown REACT_* variables already warned about (once per process: other
# software uses the prefix too, REACT_APP_* for web front ends).
_warned: set = set()


def own_settings(env: Optional[Dict[str, str]] = None) -> Config:
    """A Config of react_torch's own REACT_* variables alone; the loader
    reads its settings so, before it can ask libreact for the tuner's."""
    env = os.environ if env is None else env
    cfg = Config()
    # like torch's own collective checks: on when the user asks torch for them
    cfg.check_calls = env.get("TORCH_DISTRIBUTED_DEBUG", "").upper() == "DETAIL"
    for name, (var, typ, _, _) in _FIELDS.items():
        if var in env:
            setattr(cfg, name, _parse(name, var, typ, env[var]))
    return cfg


def from_env(env: Optional[Dict[str, str]] = None) -> Config:
    """Builds a Config from REACT_* variables. A REACT_ variable it does not
    know is ignored with a warning (once per name): the prefix is not ours
    alone, and a training job must not die of another program's setting.
    A known variable with a value of the wrong type is an error. libreact is
    asked for the tuner's settings only when some variable is not
    react_torch's own."""
    env = os.environ if env is None else env
    cfg = own_settings(env)
    # REACT_HOST_ID is one rank's, not a group setting (hosts.py reads it);
    # TEST_SLOW_RANK is the tests' hook, not a setting (test_slow_rank)
    own = {var for var, _, _, _ in _FIELDS.values()} | {"REACT_LIBRARY", "REACT_HOST_ID", TEST_SLOW_RANK}
    rest = sorted(k for k in env if k.startswith("REACT_") and k not in own)
    if not rest:
        return cfg
    tuner = {variable(name): (name, typ) for name, (typ, _, _) in tuner_settings().items()}
    unknown = [k for k in rest if k not in tuner and k not in _warned]
    if unknown:
        _warned.update(unknown)
        log.warning("react_torch: ignoring unknown environment variable(s) %s: not react_torch settings (README lists those)", ", ".join(unknown))
    for var in rest:
        if var in tuner:
            name, typ = tuner[var]
            cfg.tuner_set[name] = _parse(name, var, typ, env[var])
    return cfg


def replace(cfg: Config, **kw: Any) -> Config:
    """Returns cfg with settings replaced, react_torch's or the tuner's; an
    unknown name is an error."""
    own = {k: v for k, v in kw.items() if k in _FIELDS}
    tuner = {k: v for k, v in kw.items() if k not in _FIELDS}
    if tuner:
        known = tuner_settings()
        bad = sorted(k for k in tuner if k not in known)
        if bad:
            raise ValueError(f"react_torch: unknown option(s) {', '.join(bad)}; known: {', '.join(sorted([*_FIELDS, *known]))}")
    return dataclasses.replace(cfg, **own, tuner_set={**cfg.tuner_set, **tuner})


def _show(name: str, cfg: Config) -> str:
    """How a setting reads in an error: its variable and value."""
    return f"{variable(name)}={getattr(cfg, name)!r}"


HOSTS = ("auto", "flat", "hier")

# REACT_LOG_LEVEL -> capi/react.h's REACT_LOG_* (Go's levels start at -1).
LOG_LEVELS = {0: -1, 1: 0, 2: 1, 3: 2, 4: 6}


def validate(cfg: Config, size: int) -> List[str]:
    """What is wrong with cfg for a group of size ranks, one sentence per
    problem naming the variable. The tuner's own rules (B, H, Lag, ...) are
    Go's (tuner.Config.Validate), asked through libreact, not copied here;
    libreact also refuses a rank count past its limit (REACT_MAX_RANKS)."""
    bad = []
    if cfg.hosts not in HOSTS:
        bad.append(f"{_show('hosts', cfg)}: want {', '.join(HOSTS)}")
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
    # algorithm names and the rank count, by generating the patterns' smallest form
    for op in ops.OPS:
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
            what = _show(m.group(1), cfg) if m and m.group(1) in tuner_settings() else "tuner settings"
            bad.append(f"{what}: {_why(e)}")
    return bad


def _why(e: Exception) -> str:
    """libreact's sentence without the calls' prefixes."""
    return re.sub(r"^(react_torch: [^:]*: )?(react_\w+: )?", "", str(e))


# Settings every rank must share: each rank runs the same pattern, switch
# epoch and segment tags only when they agree.
AGREE = ("tune", "hosts", "algo_allreduce", "algo_allgather", "algo_reducescatter", "algo_broadcast", "algo_reduce",
         "leader", "segment_bytes", "min_calls", "Lag", "check_calls")


def shared(cfg: Config) -> Dict[str, Any]:
    return {k: getattr(cfg, k) for k in AGREE}


def table() -> str:
    """The README's table of environment variables; the tuner's rows are
    libreact's."""
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    every = [(var, default, help_) for var, _, default, help_ in _FIELDS.values()]
    every += [(variable(name), default, help_) for name, (_, default, help_) in tuner_settings().items()]
    for var, default, help_ in every:
        shown = int(default) if isinstance(default, bool) else default
        rows.append(f"| `{var}` | {f'`{shown}`' if shown != '' else '(none)'} | {help_} |")
    return "\n".join(rows)


def _lib_init_args() -> Tuple[int, str, int]:
    """libreact's log level, log file and GOMAXPROCS, from react_torch's own
    variables (not from_env: the tuner's settings come from libreact)."""
    cfg = own_settings()
    if cfg.log_level not in LOG_LEVELS:
        raise _lib.ReactError(_lib.E_ARG, f"react_torch: REACT_LOG_LEVEL={cfg.log_level}: want 0 (debug), 1 (info), 2 (warn), 3 (error) or 4 (off)")
    return LOG_LEVELS[cfg.log_level], cfg.log_path, cfg.gomaxprocs


_lib.init_args = _lib_init_args
