"""What torch users run now, on react: the functional collectives
(torch.distributed._functional_collectives, behind DTensor and
torch.compile), a DTensor redistribution on a DeviceMesh, and FSDP2
(fully_shard) on a small model. The functional results are checked against
their values in the worker; FSDP2's losses against the same training
computed in one process (the mean of the ranks' gradients a step). Both of
react's routes pass (torch's Backend from 2.14, a ProcessGroup of its own
before: make test-torch-old runs this on torch 2.8; docs/install.md)."""

import pytest

import workers
from conftest import launch


@pytest.mark.parametrize("n", [2, 4])
def test_functional_dtensor_fsdp2(n):
    res = launch(n, "modern", env={"MODERN_BACKEND": "react"}, timeout=300)
    for rc, out, err in res:
        assert rc == 0 and "OK modern" in out, err[-3000:]
    out = res[0][1].splitlines()
    features = {x.split()[1]: x.split(None, 2)[2] for x in out if x.startswith("FEATURE")}
    assert features == {"functional": "OK", "dtensor": "OK", "fsdp2": "OK"}, features
    losses = [float(v) for x in out if x.startswith("LOSSES") for v in x.split()[1:]]
    assert losses == pytest.approx(workers.fsdp_reference(n), rel=1e-5, abs=1e-6)
