"""Runs one rank of a multi-process test in a process forked from a server
that imported torch once (conftest.launch): on 2 cores, each rank's own
`import torch` (about 4 s of CPU) was most of what the suite spent. The
child then does what the interpreter does for `python script args`: the
environment, argv and output files are the rank's own, react_torch is
imported fresh (the server never loads libreact: Go's runtime does not
survive a fork), and at the end non-daemon threads are joined and atexit
handlers run before the exit status is returned."""

import atexit
import os
import runpy
import sys
import threading
import traceback


def rank(script, args, env, out_path, err_path):
    os.environ.clear()
    os.environ.update(env)
    for p in reversed(env.get("PYTHONPATH", "").split(os.pathsep)):
        if p and p not in sys.path:
            sys.path.insert(0, p)
    for fd, path in ((1, out_path), (2, err_path)):
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
    sys.stdout = open(1, "w", closefd=False, buffering=1)
    sys.stderr = open(2, "w", closefd=False, buffering=1)
    if "OMP_NUM_THREADS" in env:
        import torch

        torch.set_num_threads(int(env["OMP_NUM_THREADS"]))
    code = 0
    try:
        if script == "-m":
            sys.argv = [args[0], *args[1:]]
            runpy.run_module(args[0], run_name="__main__", alter_sys=True)
        else:
            sys.argv = [script, *args]
            sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
