import os
import socket
import subprocess
import sys

import pytest

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
    interpreter's own, and no REACT_LIBRARY)."""
    port = free_port()
    procs = []
    hosts = hosts or list(range(n))
    for r in range(n):
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
        procs.append(subprocess.Popen([python, script, *args], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
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
