"""Settings: the environment and configure() refuse what they do not know,
naming it."""

import pytest

import react_torch
from react_torch import config


def test_env_parses_known_variables():
    cfg = config.from_env({"REACT_TUNE": "off", "REACT_LAG": "3", "REACT_EPSILON": "0.1", "REACT_ALGO_ALLREDUCE": "ring"})
    assert (cfg.tune, cfg.Lag, cfg.Epsilon, cfg.algo("allreduce")) == (False, 3, 0.1, "ring")
    assert cfg.tuner_json()["Lag"] == 3


@pytest.mark.parametrize("env,words", [
    ({"REACT_LAGG": "3"}, ["REACT_LAGG", "unknown"]),
    ({"REACT_LAG": "soon"}, ["REACT_LAG", "'soon'", "int"]),
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


def test_defaults_are_the_go_tuners():
    import os
    import re

    src = open(os.path.join(os.path.dirname(__file__), "..", "..", "pkg", "tuner", "config.go")).read()
    body = re.search(r"func DefaultConfig\(\) Config \{\s*return Config\{([^}]*)\}", src).group(1)
    go = {k: float(v) for k, v in re.findall(r"(\w+): ([0-9.]+)", body)}
    py = config.Config().tuner_json()
    assert py.pop("Stepped") is True  # a property of the executor, not a setting
    assert py.pop("Model") == re.search(r"Model: Model(\w+)", body).group(1).lower()
    assert set(go) == set(py)
    for k, v in go.items():
        assert float(py[k]) == v, k
