"""A small model trained with DDP on the react backend.

    torchrun --nproc_per_node=4 examples/train_ddp.py
"""

from datetime import timedelta

import torch
import torch.distributed as dist

import react_torch  # noqa: F401  registers backend "react"


def main():
    dist.init_process_group("react", timeout=timedelta(seconds=120))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    w = torch.randn(64, 10, generator=torch.Generator().manual_seed(42))
    for step in range(60):
        x = torch.randn(32, 64, generator=g)
        y = (x @ w).argmax(dim=1)
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 10 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}", flush=True)
    if rank == 0:
        print(f"done: {world} ranks on backend react", flush=True)
        for k in react_torch.stats():
            print(f"  {k['op']} {k['dtype']} x{k['numel']}: {k['epochs']} calls, {k['algo']} pattern, version {k['version']}, {k['switches']} switches", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
