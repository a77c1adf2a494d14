"""react behaves like a torch.distributed backend (issue 15): torch's own
group machinery, faults and bad input, each on real multi-process groups."""

import pytest

from conftest import CONFORM, launch


def test_group_machinery_goes_through_the_backend():
    """group_name, destroy_process_group(subgroup), batch_isend_irecv and
    monitored_barrier: torch reaches them through the group's Backend."""
    for rc, out, err in launch(3, "backends", env={"REACT_TUNE": "0"}, script=CONFORM, timeout=120):
        assert rc == 0 and "OK backends" in out, err[-3000:]
