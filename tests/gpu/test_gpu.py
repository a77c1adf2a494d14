"""GPU checks, for a machine with a CUDA device (one is enough; `make
test-gpu`). Without one, only the CPU case runs. Multi-rank NCCL needs one
GPU per rank and cannot run on one GPU; what one rank can run is run here."""

import contextlib
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist

import react_torch  # noqa: F401  (registers the backend)
from react_torch.executor import combine, _Recv
from react_torch.pattern import COPY, REDUCE, Message

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")


@cuda
def test_executor_applies_on_gpu():
    work = torch.arange(12, dtype=torch.float32, device="cuda")
    buf = torch.ones(8, device="cuda")
    parts = [work[0:4], work[8:12]]
    r = _Recv(Message(step=1, src=1, dst=0, tag=0, flows=[0, 1]), buf, parts, [REDUCE, COPY], [(0, 8)])
    r.apply(0, "sum")
    want = torch.tensor([1, 2, 3, 4, 4, 5, 6, 7, 1, 1, 1, 1], dtype=torch.float32)
    assert torch.equal(work.cpu(), want)
    acc = torch.tensor([1, 5], device="cuda", dtype=torch.int32)
    combine(acc, torch.tensor([3, 2], device="cuda", dtype=torch.int32), "max")
    assert acc.tolist() == [3, 5]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_one_rank_group(tmp_path, device):
    """A world of one: every op completes through the group's thread (with a
    CUDA future on the caller's stream, on cuda)."""
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("react", store=store, rank=0, world_size=1, timeout=timedelta(seconds=30))
    try:
        ctx = torch.cuda.stream(torch.cuda.Stream()) if device == "cuda" else contextlib.nullcontext()
        with ctx:
            x = torch.arange(10, device=device, dtype=torch.float32)
            dist.all_reduce(x, async_op=True).wait()
            out = torch.empty(10, device=device)
            dist.all_gather_into_tensor(out, x)
            dist.broadcast(x, src=0)
            dist.barrier()
        if device == "cuda":
            torch.cuda.synchronize()
        assert torch.equal(out.cpu(), torch.arange(10, dtype=torch.float32))
        assert torch.equal(x.cpu(), torch.arange(10, dtype=torch.float32))
    finally:
        dist.destroy_process_group()
