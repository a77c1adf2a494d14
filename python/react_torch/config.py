"""react_torch configuration: environment variables (REACT_*) and configure().

Every setting, react_torch's own and the tuner's, and the rules their values
meet are Go's (internal/settings): names, variables, types, defaults and
help come from libreact (react_settings), the values the environment sets
from react_settings_env, problems and disagreements between ranks from
react_settings_agree (agree.settings); none is copied here. A Config holds
the values set; the others read as libreact's defaults, and only the
tuner's that were set reach the tuner.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from typing import Any, Dict, Optional

from . import _lib

log = logging.getLogger("react_torch")

_TYPES = {"int": int, "float": float, "string": str, "bool": bool}


_settings: Optional[Dict[str, dict]] = None


def settings() -> Dict[str, dict]:
    """Every setting by name, in libreact's order: {"var", "type" (a Python
    type), "default", "help", "tuner", "shared"}. Read once per process."""
    global _settings
    if _settings is None:
        _settings = {s["name"]: {**s, "type": _TYPES[s["type"]], "default": _TYPES[s["type"]](s["default"]),
                                 "tuner": s.get("tuner", False), "shared": s.get("shared", False)} for s in _lib.settings()}
    return _settings


def variable(name: str) -> str:
    return settings()[name]["var"]


@dataclasses.dataclass
class Config:
    values: Dict[str, Any] = dataclasses.field(default_factory=dict)  # the settings set, by name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "values":
            raise AttributeError(name)
        s = settings().get(name)
        if s is None:
            raise AttributeError(f"react_torch Config has no setting {name!r}")
        return self.values.get(name, s["default"])

    def tuner_json(self) -> Dict[str, Any]:
        """What the tuner is told: only what was set, so that a default
        stays Go's."""
        every = settings()
        return {k: v for k, v in self.values.items() if every[k]["tuner"]}

    def algo(self, op: str) -> str:
        return getattr(self, "algo_" + op)


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


def from_env(env: Optional[Dict[str, str]] = None) -> Config:
    """Builds a Config from REACT_* variables (libreact parses them). A
    REACT_ variable that is no setting is ignored with a warning (once per
    name): the prefix is not ours alone, and a training job must not die of
    another program's setting. A known variable with a value of the wrong
    type is an error."""
    got = _lib.settings_env(os.environ if env is None else env)
    if got["problems"]:
        raise ValueError("react_torch: " + "; ".join(got["problems"]))
    unknown = [k for k in got["unknown"] if k not in _warned]
    if unknown:
        _warned.update(unknown)
        log.warning("react_torch: ignoring unknown environment variable(s) %s: not react_torch settings (README lists those)", ", ".join(unknown))
    every = settings()
    return Config({k: every[k]["type"](v) for k, v in got["values"].items()})


def replace(cfg: Config, **kw: Any) -> Config:
    """Returns cfg with settings replaced; an unknown name is an error."""
    known = settings()
    bad = sorted(k for k in kw if k not in known)
    if bad:
        raise ValueError(f"react_torch: unknown option(s) {', '.join(bad)}; known: {', '.join(sorted(known))}")
    return Config({**cfg.values, **kw})


def table() -> str:
    """The README's table of environment variables."""
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for s in settings().values():
        shown = int(s["default"]) if isinstance(s["default"], bool) else s["default"]
        rows.append(f"| `{s['var']}` | {f'`{shown}`' if shown != '' else '(none)'} | {s['help']} |")
    return "\n".join(rows)
