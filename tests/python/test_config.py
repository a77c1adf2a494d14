"""Settings: configure() refuses what it does not know and the environment
ignores it with a warning; bad values are errors naming the variable."""

import json
import os
import subprocess
import sys

import pytest

import react_torch
from react_torch import _lib, config


def problems(cfg, size):
    """What libreact finds wrong with cfg set alike on every rank of a group of size."""
    one = json.dumps(cfg.values)
    return _lib.settings_agree(("[" + ",".join([one] * size) + "]").encode(), size)


def test_env_parses_known_variables():
    cfg = config.from_env({"REACT_TUNE": "off", "REACT_LAG": "3", "REACT_EPSILON": "0.1", "REACT_ALGO_ALLREDUCE": "ring"})
    assert (cfg.tune, cfg.Lag, cfg.Epsilon, cfg.algo("allreduce")) == (False, 3, 0.1, "ring")
    assert cfg.tuner_json()["Lag"] == 3


@pytest.mark.parametrize("env,words", [
    ({"REACT_LAG": "soon"}, ["REACT_LAG", '"soon"', "int"]),
    ({"REACT_TAUR": "high"}, ["REACT_TAUR", '"high"', "float", "TauR"]),
    ({"REACT_TUNE": "maybe"}, ["REACT_TUNE", "bool"]),
])
def test_env_errors_name_the_variable(env, words):
    with pytest.raises(ValueError) as e:
        config.from_env(env)
    for w in words:
        assert w in str(e.value)


def test_configure_refuses_unknown_names():
    with pytest.raises(ValueError, match="unknown option.*lagg"):
        react_torch.configure(lagg=3)
    react_torch.configure(Lag=4)
    try:
        assert react_torch._overrides["Lag"] == 4
    finally:
        react_torch._overrides.clear()


def test_settings_come_from_libreact():
    """Names, variables, types and defaults are libreact's: a Config sends
    the tuner only what was set, reads the rest as Go's defaults, and every
    default passes libreact's check."""
    from react_torch import _lib

    listed = {s["name"]: s for s in _lib.settings()}
    # properties of the executor and of the group, not settings
    assert "Stepped" not in listed and "OneHost" not in listed
    assert listed["tune"]["var"] == "REACT_TUNE" and listed["KtGrowth"]["tuner"] and not listed.get("tune", {}).get("tuner")
    cfg = config.Config()
    assert cfg.tuner_json() == {}
    for name, s in config.settings().items():
        assert getattr(cfg, name) == listed[name]["default"] and isinstance(s["default"], s["type"]) and s["help"], name
        assert problems(config.replace(cfg, **{name: s["default"]}), 4) == "", name
    assert {name for name, s in config.settings().items() if s["shared"]} == {"tune", "hosts", "algo_allreduce", "algo_allgather", "algo_reducescatter", "algo_broadcast",
                                       "algo_reduce", "leader", "segment_bytes", "min_calls", "Lag", "check_calls"}


def test_variables_keep_their_names():
    """REACT_ and the name in upper case, an underscore where a word of two
    or more letters starts: the variables users already set keep working."""
    want = {"Model": "REACT_MODEL", "B": "REACT_B", "H": "REACT_H", "Kt": "REACT_KT", "KtGrowth": "REACT_KT_GROWTH",
            "TauR": "REACT_TAUR", "EMax": "REACT_EMAX", "AMax": "REACT_AMAX", "Delta1": "REACT_DELTA1",
            "MinGain": "REACT_MIN_GAIN", "Confidence": "REACT_CONFIDENCE", "Lag": "REACT_LAG", "Seed": "REACT_SEED"}
    assert {k: config.variable(k) for k in want} == want
    cfg = config.from_env({"REACT_KT_GROWTH": "7", "REACT_TAUR": "0.1", "REACT_EMAX": "3", "REACT_MODEL": "paper"})
    assert cfg.tuner_json() == {"KtGrowth": 7, "TauR": 0.1, "EMax": 3, "Model": "paper"}
    assert problems(cfg, 4) == ""


def test_configure_sets_tuner_settings():
    react_torch.configure(KtGrowth=7)
    try:
        cfg = config.replace(config.from_env({}), **react_torch._overrides)  # as _create builds it
        assert (cfg.KtGrowth, cfg.tuner_json()) == (7, {"KtGrowth": 7})
    finally:
        react_torch._overrides.clear()
    with pytest.raises(ValueError, match="unknown option.*kt_growth"):
        react_torch.configure(kt_growth=7)
    with pytest.raises(ValueError, match="unknown option.*Stepped"):
        react_torch.configure(Stepped=False)


def test_unknown_env_variable_warns_once(caplog):
    """Other software uses the REACT_ prefix (REACT_APP_*): a job must not
    die of it. One warning per name and process."""
    config._warned.discard("REACT_APP_X")
    with caplog.at_level("WARNING", logger="react_torch"):
        cfg = config.from_env({"REACT_APP_X": "1", "REACT_LAG": "3"})
        config.from_env({"REACT_APP_X": "1"})
    assert cfg.Lag == 3
    hits = [r for r in caplog.records if "REACT_APP_X" in r.getMessage()]
    assert len(hits) == 1 and "ignoring unknown" in hits[0].getMessage()


@pytest.mark.parametrize("kw,size,words", [
    ({"Lag": 0}, 4, ["REACT_LAG=0", "Lag = 0, want >= 1"]),
    ({"Lag": -2}, 4, ["REACT_LAG=-2"]),
    ({"B": 0}, 4, ["REACT_B=0", "B = 0, want >= 1"]),
    ({"H": 0}, 4, ["REACT_H=0", "want >= B"]),
    ({"leader": 99}, 4, ["REACT_LEADER=99", "0 to 3"]),
    ({"leader": -1}, 4, ["REACT_LEADER=-1"]),
    ({"segment_bytes": -1}, 4, ["REACT_SEGMENT_BYTES=-1", "want >= 0"]),
    ({"min_calls": 0}, 4, ["REACT_MIN_CALLS=0"]),
    ({"log_level": 5}, 4, ["REACT_LOG_LEVEL=5", "4 (off)"]),
    ({"Model": "magic"}, 4, ['REACT_MODEL="magic"', "react", "paper"]),
    ({"Lag": "2"}, 4, ['REACT_LAG="2"', "want an integer"]),
    ({"KtGrowth": -1}, 4, ["REACT_KT_GROWTH=-1", "KtGrowth = -1, want >= 0"]),
    ({"algo_allreduce": "zigzag"}, 4, ['REACT_ALGO_ALLREDUCE="zigzag"', "tree, ring, halving_doubling"]),
    ({"hosts": "ring"}, 4, ['REACT_HOSTS="ring"', "auto, flat, hier"]),
    ({"min_calls": 1.5}, 4, ["REACT_MIN_CALLS=1.5", "want an integer"]),
    ({}, 2000, ["2000 ranks", "at most 1024 ranks"]),
    ({"tune": False, "Lag": 0}, 4, []),  # the tuner's settings do not matter untuned
    ({}, 4, []),
])
def test_problems_name_the_variable(kw, size, words):
    bad = problems(config.replace(config.Config(), **kw), size)
    if not words:
        assert bad == ""
        return
    assert bad.startswith(f"invalid settings for a react group of {size} ranks: every rank: ") and bad.count("every rank") == 1, bad
    for w in words:
        assert w in bad, (w, bad)


def test_call_check_follows_torch_debug():
    """The call-mismatch check costs a round of messages per collective: off
    unless asked for, like Gloo's own check under TORCH_DISTRIBUTED_DEBUG."""
    assert config.from_env({}).check_calls is False
    assert config.from_env({"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}).check_calls is True
    assert config.from_env({"TORCH_DISTRIBUTED_DEBUG": "DETAIL", "REACT_CHECK_CALLS": "0"}).check_calls is False
    assert config.from_env({"REACT_CHECK_CALLS": "1"}).check_calls is True


def test_slow_rank_hook_is_not_a_setting(caplog):
    """REACT_TEST_SLOW_RANK is the tests' hook: no setting, no option, no
    row in the README's table, no unknown-variable warning; a value that is
    not a rank of the group names the variable."""
    assert "REACT_TEST_SLOW_RANK" not in config.table()
    with pytest.raises(ValueError, match="unknown option"):
        react_torch.configure(test_slow_rank=1)
    config._warned.clear()
    with caplog.at_level("WARNING"):
        config.from_env({"REACT_TEST_SLOW_RANK": "2"})
    assert "REACT_TEST_SLOW_RANK" not in caplog.text
    assert config.test_slow_rank(4, {"REACT_TEST_SLOW_RANK": "2"}) == 2
    assert config.test_slow_rank(4, {}) == -1
    for bad in ("4", "-2", "x"):
        with pytest.raises(ValueError, match=f"REACT_TEST_SLOW_RANK='{bad}': want -1 \\(off\\) or a rank, 0 to 3"):
            config.test_slow_rank(4, {"REACT_TEST_SLOW_RANK": bad})


def _load_lib(env: dict) -> subprocess.CompletedProcess:
    code = "from react_torch import _lib\ntry:\n    _lib.lib()\nexcept _lib.ReactError as e:\n    print(e)\n"
    return subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True, timeout=120)


def test_libreact_starts_from_its_variables(tmp_path):
    """libreact reads its log level, file and threads from the environment
    as it loads (react_settings_env), and a bad one stops it with the
    variable named."""
    path = tmp_path / "react.log"
    out = _load_lib({"REACT_LOG_LEVEL": "0", "REACT_LOG_PATH": str(path), "REACT_GOMAXPROCS": "2"})
    assert out.returncode == 0 and out.stdout == "", out.stderr
    line = json.loads(path.read_text().splitlines()[0])
    assert (line["msg"], line["gomaxprocs"]) == ("libreact initialised", 2)
    for env, words in [({"REACT_LOG_LEVEL": "loud"}, 'REACT_LOG_LEVEL="loud" is not a valid int'),
                       ({"REACT_GOMAXPROCS": "-1"}, "REACT_GOMAXPROCS=-1: want >= 0")]:
        out = _load_lib(env)
        assert words in out.stdout, (out.stdout, out.stderr)
