"""Hosts with several ranks: discovery, the hierarchical collectives against
Gloo's, switches on the rails, and a flat job left as it was. Hosts are
named with REACT_HOST_ID (conftest.launch's hosts), as on a cluster."""

import datetime
import re

import pytest
import torch.distributed as dist

from conftest import free_port, launch
from react_torch import hosts
from react_torch.hosts import Layout

LAYOUTS = {
    "2x2": [0, 0, 1, 1],
    "3x2": [0, 0, 1, 1, 2, 2],
    "2x3": [0, 0, 0, 1, 1, 1],
    "uneven": [0, 1, 0, 1, 1],  # hosts of 2 and 3 ranks, interleaved
}
TUNE_OFF = {"REACT_TUNE": "0"}
HOOK = {"REACT_LAG": "2", "REACT_MODEL": "paper"}  # as test_backend's switch tests, and why


def ok(res, word):
    for rc, out, err in res:
        assert rc == 0 and f"OK {word}" in out, err[-3000:]
    return [out for _, out, _ in res]


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_hierarchical_collectives_equal_gloo(layout):
    """Every op, dtype, reduce op and size edge case of the flat sweep."""
    ok(launch(len(LAYOUTS[layout]), "collectives", env=TUNE_OFF, hosts=LAYOUTS[layout]), "collectives")


@pytest.mark.parametrize("layout", ["2x2", "uneven"])
def test_hierarchical_more_dtypes(layout):
    """int8, int16, complex: the host phases' fallback (Gloo lacks them)."""
    ok(launch(len(LAYOUTS[layout]), "dtypes", env=TUNE_OFF, hosts=LAYOUTS[layout]), "dtypes")


def test_hierarchical_large_messages():
    ok(launch(4, "large", env={**TUNE_OFF, "REACT_SEGMENT_BYTES": str(1 << 18)}, hosts=LAYOUTS["2x2"]), "large")


@pytest.mark.parametrize("hosts_,slow", [
    (LAYOUTS["3x2"], 5),
    ([0, 1, 2, 0, 1, 2, 1], 2),  # hosts of 2, 3 and 2 ranks: rank 6 is on no rail
])
def test_host_pattern_switches_mid_run(hosts_, slow):
    """The slow rank's host is congested for every rail: the group's tuner
    switches the pattern over hosts, results stay exact, every rank runs the
    same version at every epoch (ranks past the rails too); the key is a
    shard of the call (8192 elements over 2 rails)."""
    outs = ok(launch(len(hosts_), "hostswitch", env={"REACT_TEST_SLOW_RANK": str(slow), **HOOK}, hosts=hosts_), "hostswitch")
    assert {re.search(r"rail=(\d)", o).group(1) for o in outs} == {str(i) for i in range(max(hosts_.count(h) for h in hosts_))}
    assert all("numel=4096" in o for o in outs), outs


def test_report_names_the_congested_host():
    """On hosts the pattern runs over hosts: the report names the slow
    rank's host, with its ranks."""
    ok(launch(6, "reported", env={"REACT_TEST_SLOW_RANK": "5", "REACT_LAG": "2"}, hosts=LAYOUTS["3x2"]), "reported")


def test_ddp_losses_equal_gloo_on_hosts():
    def losses(backend):
        res = launch(4, "ddp", backend, env=TUNE_OFF if backend == "react" else {}, hosts=LAYOUTS["2x2"])
        for rc, _, err in res:
            assert rc == 0, err[-3000:]
        return [float(v) for v in [ln for ln in res[0][1].splitlines() if ln.startswith("LOSSES")][0].split()[1:]]

    react, gloo = losses("react"), losses("gloo")
    assert len(react) == 20
    for a, b in zip(react, gloo):
        assert abs(a - b) <= 1e-4 * max(1.0, abs(b)), (react, gloo)


@pytest.mark.parametrize("layout,env,hier", [
    ([0, 1, 2], {}, False),  # one rank a host: flat, as before hosts were found
    ([0, 0, 1, 1], {"REACT_HOSTS": "flat"}, False),
    ([0, 0, 1, 1], {}, True),
    ([0, 1, 2], {"REACT_HOSTS": "hier"}, True),
    (["", "", ""], {}, False),  # nothing named: found on one host (this machine), which runs flat
])
def test_layout_found_and_forced(layout, env, hier):
    hosts_ = layout if layout[0] != "" else None
    per_rank = {r: {"REACT_HOST_ID": ""} for r in range(len(layout))} if hosts_ is None else None
    outs = ok(launch(len(layout), "hostlayout", env={**TUNE_OFF, **env}, hosts=hosts_, per_rank=per_rank), "hostlayout")
    for o in outs:
        assert f"hier={hier}" in o, o
    if hosts_ is None:
        assert "hosts=[[0, 1, 2]]" in outs[0]


def test_unknown_hosts_setting_is_refused():
    res = launch(2, "hostlayout", env={"REACT_HOSTS": "rails"})
    for rc, _, err in res:
        assert rc != 0 and 'REACT_HOSTS="rails": want auto, flat, hier' in err, err[-2000:]


@pytest.mark.parametrize("ids,want,rails", [
    (["a", "a", "b", "b"], [[0, 1], [2, 3]], 2),
    (["b", "a", "b", "a", "a"], [[0, 2], [1, 3, 4]], 2),
    (["x", "y", "z"], [[0], [1], [2]], 1),
    (["h"] * 4, [[0, 1, 2, 3]], 4),
])
def test_layout_of_identities(ids, want, rails):
    lay = Layout.of(ids, "auto")
    assert lay.hosts == want and lay.rails == rails
    assert lay.rail(0) == [rs[0] for rs in want]
    for h, rs in enumerate(want):
        for i, r in enumerate(rs):
            assert (lay.host(r), lay.local(r)) == (h, i)
    assert lay.hier == (len(want) > 1 and any(len(rs) > 1 for rs in want))
    assert Layout.of(ids, "hier").hier and not Layout.of(ids, "flat").hier


def test_identity_names_the_store_address():
    """Without REACT_HOST_ID a rank's identity holds the address it reaches
    the store from (network namespaces of one machine differ there), also
    under the prefixes torch puts on a group's store."""
    store = dist.TCPStore("127.0.0.1", free_port(), 1, True, timeout=datetime.timedelta(seconds=10))
    wrapped = dist.PrefixStore("g/1", dist.PrefixStore("default_pg", store))
    assert hosts.identity(wrapped, env={}).endswith("|127.0.0.1")
    assert hosts.identity(wrapped, env={"REACT_HOST_ID": "n7"}) == "id:n7"
    assert hosts.identity(dist.HashStore(), env={}).endswith("|")
