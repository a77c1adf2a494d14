"""What turning REACT on costs when there is nothing to fix: the tuner on
against the tuner off (and react against gloo), measured in one run with the
configurations interleaved step by step, so all see the same machine load.

    python scripts/overhead.py ddp      # DDP, 8-layer transformer (29.4M parameters), 4 ranks
    python scripts/overhead.py small    # 8 ranks, 50 AllReduces of 64 KB an iteration
    python scripts/overhead.py report   # DDP on two tuned groups, one calling react_torch.report() every step
    python scripts/overhead.py memory   # RSS after 1,000 AllReduces of fresh 4 MB tensors, react / gloo
    python scripts/overhead.py calls    # where an AllReduce's time goes: its messages bare, react's executor, the whole call, gloo
    python scripts/overhead.py all
    python scripts/overhead.py small --ranks-per-host 2   # the same on hosts of 2 ranks (hierarchical)

It starts the ranks itself on this machine (env:// rendezvous, as torchrun)
and prints one table per experiment: ratios of medians per repeat, then
min/median/max over the repeats; counters (pattern switches, control-group
operations per iteration, epochs that waited for the control plane) are
those of the tuned group. Set REACT_LIBRARY and PYTHONPATH as `make test`
does, or install the package.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ranks a host (REACT_HOST_ID: ranks r*PER_HOST.. share one); 1: every rank a host of its own
PER_HOST = 1


def launch(n: int, args: list, timeout: float = 1200) -> list:
    port, procs = _port(), []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r % PER_HOST), LOCAL_WORLD_SIZE=str(PER_HOST),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1", REACT_HOST_ID=f"host{r // PER_HOST}")
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    out = []
    for p in procs:
        o, e = p.communicate(timeout=timeout)
        if p.returncode != 0:
            sys.exit(f"a rank failed ({p.returncode}):\n{e[-4000:]}")
        out.append(o)
    return [json.loads(line[7:]) for line in out[0].splitlines() if line.startswith("RESULT ")]


# ---------------------------------------------------------------- workers


def _groups():
    """The tuned react group (default settings), an untuned react group and
    gloo: three subgroups of one Gloo world, so that none of them holds the
    default group's place and the three are made alike."""
    import torch.distributed as dist

    import react_torch

    dist.init_process_group("gloo")
    on = dist.new_group(backend="react")
    react_torch.configure(tune=False)
    off = dist.new_group(backend="react")
    gloo = dist.new_group(backend="gloo")
    return on, off, gloo


def _counters(group, iters: int) -> dict:
    import react_torch

    c = react_torch.control_stats(group)
    return {"switches": c["switches"], "msgs_per_iter": c["control_messages"] / iters, "waits": c["waits"], "wait_s": c["wait_s"],
            "exchanges": c["exchanges"]}


def _model(vocab: int = 8192, d: int = 512, layers: int = 8):
    import torch
    import torch.nn as nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 8, 4 * d, dropout=0.0, batch_first=True), layers)
            self.out = nn.Linear(d, vocab, bias=False)
            self.out.weight = self.emb.weight  # tied: 29.4M parameters

        def forward(self, x):
            return self.out(self.enc(self.emb(x)))

    torch.manual_seed(0)
    return LM()


def worker_ddp(iters: int, repeats: int, batch: int, seq: int) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    on, off, gl = _groups()
    rank = dist.get_rank()
    models = {name: DDP(_model(), process_group=g) for name, g in (("on", on), ("off", off), ("gloo", gl))}
    opts = {k: torch.optim.SGD(m.parameters(), lr=1e-3) for k, m in models.items()}
    g = torch.Generator().manual_seed(rank)
    x = torch.randint(0, 8192, (batch, seq), generator=g)
    y = torch.randint(0, 8192, (batch, seq), generator=g)
    times = {k: [] for k in models}
    orders = (("on", "off", "gloo"), ("off", "gloo", "on"), ("gloo", "on", "off"))
    for it in range(iters * repeats + 2):
        for k in orders[it % 3]:
            dist.barrier(group=off)
            t0 = time.perf_counter()
            opts[k].zero_grad(set_to_none=True)
            F.cross_entropy(models[k](x).view(-1, 8192), y.view(-1)).backward()
            opts[k].step()
            times[k].append(time.perf_counter() - t0)
    params = sum(p.numel() for p in models["on"].parameters())
    import react_torch

    switched = {f"{s['op']} {s['numel']}": s["switches"] for s in react_torch.stats(on) if s["switches"]}
    if rank == 0:
        print("RESULT " + json.dumps({"params": params, "times": {k: v[2:] for k, v in times.items()}, "switched": switched,
                                      **_counters(on, iters * repeats + 2)}), flush=True)
    dist.barrier(group=off)
    dist.destroy_process_group()


def worker_report(iters: int, repeats: int, batch: int, seq: int) -> None:
    """Two tuned react groups, a DDP model on each, steps interleaved; one
    of them calls react_torch.report() on every rank after every step."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    import react_torch

    torch.set_num_threads(1)
    dist.init_process_group("react")
    groups = {"on": dist.group.WORLD, "report": dist.new_group(backend="react")}
    bar = dist.new_group(backend="gloo")
    rank = dist.get_rank()
    models = {k: DDP(_model(), process_group=g) for k, g in groups.items()}
    opts = {k: torch.optim.SGD(m.parameters(), lr=1e-3) for k, m in models.items()}
    g = torch.Generator().manual_seed(rank)
    x = torch.randint(0, 8192, (batch, seq), generator=g)
    y = torch.randint(0, 8192, (batch, seq), generator=g)
    times = {k: [] for k in models}
    reports = 0
    for it in range(iters * repeats + 2):
        for k in (("on", "report") if it % 2 == 0 else ("report", "on")):
            dist.barrier(group=bar)
            t0 = time.perf_counter()
            opts[k].zero_grad(set_to_none=True)
            F.cross_entropy(models[k](x).view(-1, 8192), y.view(-1)).backward()
            opts[k].step()
            if k == "report":
                reports += react_torch.report(groups[k]) is not None
            times[k].append(time.perf_counter() - t0)
    if rank == 0:
        print("RESULT " + json.dumps({"times": {k: v[2:] for k, v in times.items()}, "reports": reports,
                                      **_counters(groups["report"], iters * repeats + 2)}), flush=True)
    dist.barrier(group=bar)
    dist.destroy_process_group()


def worker_small(iters: int, repeats: int, calls: int, numel: int) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    on, off, gloo = _groups()
    xs = [torch.ones(numel) for _ in range(calls)]
    groups = {"on": on, "off": off, "gloo": gloo}
    times = {k: [] for k in groups}
    order = list(groups)
    for it in range(iters * repeats + 2):
        for k in order[it % 3 :] + order[: it % 3]:
            dist.barrier(group=gloo)
            t0 = time.perf_counter()
            for x in xs:
                dist.all_reduce(x, group=groups[k])
            times[k].append(time.perf_counter() - t0)
            for x in xs:
                x.fill_(1)
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps({"times": {k: v[2:] for k, v in times.items()}, **_counters(on, iters * repeats + 2)}), flush=True)
    dist.barrier(group=gloo)
    dist.destroy_process_group()


def _floor(pl, work, pg, scratch, send_index) -> None:
    """The plan's messages run step by step with the least Python: every
    receive posted first, a step's sends issued once the receives before it
    were applied. What the messages cost without react's bookkeeping."""
    import torch
    from react_torch.executor import _Recv

    posted = {}
    for m in pl.recvs:
        if m.size:
            buf = work[m.ranges[0][0] : m.ranges[0][1]] if m.direct else scratch[m.offset : m.offset + m.size]
            posted[id(m)] = (buf, pg.recv([buf], m.src, m.step))
    sent = {}
    for ss, rr in pl.steps:
        for m in ss:
            rs = m.ranges
            buf = work[rs[0][0] : rs[0][1]] if len(rs) == 1 else torch.cat([work[lo:hi] for lo, hi in rs])
            sent[send_index[id(m)]] = pg.send([buf], m.dst, m.step)
        for m in rr:
            if not m.size:
                continue
            buf, w = posted[id(m)]
            w.wait()
            if m.direct:
                continue
            for i in m.war:
                sent.pop(i).wait()
            _Recv(m, buf, [work[lo:hi] for lo, hi in m.ranges], m.kinds, [(0, m.size)]).apply(0, "sum")
    for w in sent.values():
        w.wait()


def worker_calls(iters: int, repeats: int, numel: int) -> None:
    """Rank 0's time and process CPU per AllReduce (tuner off, the default
    pattern) for: the plan's messages run bare (_floor), react's executor
    called directly, the whole react call, and gloo's collective; the four
    in rotating order, iters calls a block."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    _, off, gl = _groups()
    rank, n = dist.get_rank(), dist.get_world_size()
    x = torch.full((numel,), float(rank + 1))
    dist.all_reduce(x, group=off)
    be = off._get_backend(torch.device("cpu"))
    st, pl, ex = next(iter(be._keys.values())), next(iter(be._plans.values())), next(iter(be._executors.values()))
    scratch = torch.empty(max(pl.need, 1))
    send_index = {id(m): i for i, m in enumerate(pl.sends)}
    x.fill_(float(rank + 1))
    _floor(pl, x, ex.pg, scratch, send_index)
    if not torch.equal(x, torch.full_like(x, n * (n + 1) / 2)):
        raise SystemExit("the bare run of the plan computed a wrong AllReduce")
    runs = {"bare": lambda: _floor(pl, x, ex.pg, scratch, send_index), "executor": lambda: ex.run(st.pattern, pl, x),
            "react": lambda: dist.all_reduce(x, group=off), "gloo": lambda: dist.all_reduce(x, group=gl)}
    order = list(runs)
    times = {k: [] for k in runs}
    cpu = {k: [] for k in runs}
    for it in range(repeats * 3 + 1):
        for k in order[it % 4 :] + order[: it % 4]:
            dist.barrier(group=gl)
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(iters):
                runs[k]()
            times[k].append((time.perf_counter() - t0) / iters)
            cpu[k].append((time.process_time() - c0) / iters)
    if rank == 0:
        print("RESULT " + json.dumps({"algo": st.pattern.algo, "times": {k: v[1:] for k, v in times.items()},
                                      "cpu": {k: v[1:] for k, v in cpu.items()}}), flush=True)
    dist.barrier(group=gl)
    dist.destroy_process_group()


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def worker_memory(backend: str, calls: int, numel: int) -> None:
    import torch
    import torch.distributed as dist

    import react_torch  # noqa: F401

    torch.set_num_threads(1)
    os.environ["REACT_TUNE"] = "1"
    dist.init_process_group(backend)
    x = torch.ones(numel)
    dist.all_reduce(x)
    start = _rss_mb()
    peak = start
    for i in range(calls):
        x = torch.ones(numel)  # fresh each call
        dist.all_reduce(x)
        if i % 50 == 0:
            peak = max(peak, _rss_mb())
    end = _rss_mb()
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps({"backend": backend, "start_mb": start, "end_mb": end, "peak_mb": max(peak, end)}), flush=True)
    dist.destroy_process_group()


# ---------------------------------------------------------------- tables


def _summary(xs) -> str:
    return f"{min(xs):.3f} / {statistics.median(xs):.3f} / {max(xs):.3f}"


def _ratios(times: dict, a: str, b: str, repeats: int) -> list:
    n = len(times[a]) // repeats
    return [statistics.median(times[a][i * n : (i + 1) * n]) / statistics.median(times[b][i * n : (i + 1) * n]) for i in range(repeats)]


def run_ddp(a) -> None:
    r = launch(a.ranks, ["ddp", str(a.iters), str(a.repeats), str(a.batch), str(a.seq)])[0]
    on_off = _ratios(r["times"], "on", "off", a.repeats)
    print(f"\n## DDP, {r['params'] / 1e6:.1f}M-parameter transformer, {a.ranks} ranks, {a.iters} steps x {a.repeats} repeats (batch {a.batch} x {a.seq})\n")
    print("| measure | min / median / max |\n| --- | --- |")
    print(f"| step time, tuner on / tuner off | {_summary(on_off)} |")
    print(f"| step time, tuner on / gloo | {_summary(_ratios(r['times'], 'on', 'gloo', a.repeats))} |")
    print(f"| step time, tuner off / gloo | {_summary(_ratios(r['times'], 'off', 'gloo', a.repeats))} |")
    print(f"| step time (s), tuner off, median | {statistics.median(r['times']['off']):.3f} |")
    print(f"| pattern switches (tuned group, whole run) | {r['switches']} {r.get('switched') or ''} |")
    print(f"| control-group operations per iteration | {r['msgs_per_iter']:.3f} |")
    print(f"| epochs that waited for the control plane | {r['waits']} ({r['wait_s']:.3f} s) |")


def run_report(a) -> None:
    r = launch(a.ranks, ["report", str(a.iters), str(a.repeats), str(a.batch), str(a.seq)])[0]
    print(f"\n## DDP (as above), {a.ranks} ranks, two tuned groups, one calling react_torch.report() every step, {a.iters} steps x {a.repeats} repeats\n")
    print("| measure | min / median / max |\n| --- | --- |")
    print(f"| step time, report() every step / none | {_summary(_ratios(r['times'], 'report', 'on', a.repeats))} |")
    print(f"| steps that had a report (rank 0) | {r['reports']} of {len(r['times']['report']) + 2} |")
    print(f"| control-group operations per iteration (reporting group) | {r['msgs_per_iter']:.3f} |")


def run_small(a) -> None:
    r = launch(8 if a.ranks == 4 else a.ranks, ["small", str(a.iters), str(a.repeats), "50", str(64 * 1024 // 4)])[0]
    print(f"\n## {8 if a.ranks == 4 else a.ranks} ranks, 50 AllReduces of 64 KB an iteration, {a.iters} iterations x {a.repeats} repeats\n")
    print("| measure | min / median / max |\n| --- | --- |")
    print(f"| iteration time, tuner on / tuner off | {_summary(_ratios(r['times'], 'on', 'off', a.repeats))} |")
    print(f"| iteration time, tuner off / gloo | {_summary(_ratios(r['times'], 'off', 'gloo', a.repeats))} |")
    print(f"| iteration time (s), gloo, median | {statistics.median(r['times']['gloo']):.4f} |")
    print(f"| pattern switches (tuned group, whole run) | {r['switches']} |")
    print(f"| control-group operations per iteration | {r['msgs_per_iter']:.3f} |")
    print(f"| epochs that waited for the control plane | {r['waits']} ({r['wait_s']:.3f} s) |")


def run_memory(a) -> None:
    rows = []
    for rep in range(a.repeats):
        for b in (("gloo", "react") if rep % 2 == 0 else ("react", "gloo")):
            rows.append(launch(a.ranks, ["memory", b, "1000", str(1 << 20)])[0])
    g = [x for x in rows if x["backend"] == "gloo"]
    r = [x for x in rows if x["backend"] == "react"]
    print(f"\n## RSS of rank 0 after 1,000 AllReduces of fresh 4 MB tensors, {a.ranks} ranks, {a.repeats} runs each\n")
    print("| measure | min / median / max |\n| --- | --- |")
    print(f"| end RSS, react / gloo | {_summary([x['end_mb'] / y['end_mb'] for x, y in zip(r, g)])} |")
    print(f"| peak RSS, react / gloo | {_summary([x['peak_mb'] / y['peak_mb'] for x, y in zip(r, g)])} |")
    print(f"| growth (MB) from the first call, react | {_summary([x['end_mb'] - x['start_mb'] for x in r])} |")
    print(f"| growth (MB) from the first call, gloo | {_summary([x['end_mb'] - x['start_mb'] for x in g])} |")


def run_calls(a) -> None:
    print(f"\n## Where an AllReduce's time goes, {a.ranks} ranks, tuner off, rank 0: ms a call (its process's CPU ms a call), "
          f"medians of {a.repeats * 3} blocks\n")
    print("| size | bare messages | react's executor | whole react call | gloo | react / gloo | bare / gloo |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for size in (64 << 10, 1 << 20, 4 << 20, 16 << 20):
        r = launch(a.ranks, ["calls", str(max(2, min(a.iters, (64 << 20) // size))), str(a.repeats), str(size // 4)])[0]
        t = {k: statistics.median(v) * 1e3 for k, v in r["times"].items()}
        c = {k: statistics.median(v) * 1e3 for k, v in r["cpu"].items()}
        cells = " | ".join(f"{t[k]:.2f} ({c[k]:.2f})" for k in ("bare", "executor", "react", "gloo"))
        print(f"| {size >> 10} KB, {r['algo']} | {cells} | {t['react'] / t['gloo']:.2f} | {t['bare'] / t['gloo']:.2f} |")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        kind, rest = sys.argv[2], sys.argv[3:]
        if kind == "memory":
            worker_memory(rest[0], int(rest[1]), int(rest[2]))
        else:
            {"ddp": worker_ddp, "small": worker_small, "report": worker_report, "calls": worker_calls}[kind](*map(int, rest))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["ddp", "small", "memory", "report", "calls", "all"])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--iters", type=int, default=20, help="iterations per repeat and configuration")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--ranks-per-host", type=int, default=1, help="hosts of this many ranks (hierarchical: docs/hosts.md)")
    a = ap.parse_args()
    global PER_HOST
    PER_HOST = a.ranks_per_host
    if PER_HOST > 1:
        print(f"# hosts of {PER_HOST} ranks (REACT_HOST_ID): hierarchical collectives, patterns over hosts")
    for w in (["ddp", "small", "memory"] if a.what == "all" else [a.what]):
        {"ddp": run_ddp, "small": run_small, "memory": run_memory, "report": run_report, "calls": run_calls}[w](a)


if __name__ == "__main__":
    main()
