import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import time

import pytest

import forked

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WORKERS = os.path.join(os.path.dirname(__file__), "workers.py")
CONFORM = os.path.join(os.path.dirname(__file__), "conform_workers.py")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def launch(n, *args, env=None, timeout=240, script=WORKERS, per_rank=None, hosts=None, python=sys.executable, source=True):
    """Starts n ranks of script as torchrun does (env://), returns [(rc, stdout, stderr)];
    per_rank adds environment variables to some ranks. hosts[r] names rank r's
    host (REACT_HOST_ID); by default every rank is a host of its own, as on
    the cluster these tests stand for (on one machine every rank would be
    found on one host). source: react_torch from the source tree (else the
    interpreter's own, and no REACT_LIBRARY). Ranks of this interpreter are
    forked from a server that imported torch once (forked.py), except where
    a TORCH_* setting is asked for (torch may read it on import)."""
    port = free_port()
    hosts = hosts or list(range(n))
    envs = [_rank_env(r, n, hosts, port, source, env, per_rank) for r in range(n)]
    if source and python == sys.executable and not any(k.startswith("TORCH_") for d in [env or {}, *(per_rank or {}).values()] for k in d):
        return _forked(args, envs, timeout, script)
    procs = [subprocess.Popen([python, script, *args], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for e in envs]
    out = []
    for p in procs:
        try:
            o, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail(f"ranks hung past {timeout}s")
        out.append((p.returncode, o, err))
    return out


_SERVER = None


def _server():
    global _SERVER
    if _SERVER is None:
        _SERVER = multiprocessing.get_context("forkserver")
        _SERVER.set_forkserver_preload(["torch", "torch.distributed"])
    return _SERVER


def _rank_env(r, n, hosts, port, source, env, per_rank):
    local = [q for q in range(n) if hosts[q] == hosts[r]]
    e = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(local.index(r)), LOCAL_WORLD_SIZE=str(len(local)),
             MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1", REACT_HOST_ID=f"host{hosts[r]}")
    if source:
        e["PYTHONPATH"] = os.path.join(ROOT, "python")
    else:
        e.pop("PYTHONPATH", None)
        e.pop("REACT_LIBRARY", None)
    e.update(env or {})
    e.update((per_rank or {}).get(r, {}))
    return e


def _forked(args, envs, timeout, script):
    ctx = _server()
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for r, e in enumerate(envs):
            p = ctx.Process(target=forked.rank, args=(script, list(args), e, f"{tmp}/{r}.out", f"{tmp}/{r}.err"))
            p.start()
            procs.append(p)
        end = time.monotonic() + timeout
        for p in procs:
            p.join(max(0, end - time.monotonic()))
            if p.exitcode is None:
                for q in procs:
                    q.kill()
                pytest.fail(f"ranks hung past {timeout}s")
        return [(p.exitcode, _read(f"{tmp}/{r}.out"), _read(f"{tmp}/{r}.err")) for r, p in enumerate(procs)]


def _read(path):
    """A forked rank's output ('' if it died before making the file)."""
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""
