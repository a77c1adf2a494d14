"""External long-running TCP flows for the testbed (stdlib only).

    python flow.py sink --port 5201 --duration 600
    python flow.py send --host 10.77.0.2 --port 5201 --duration 600

Both ends stop by themselves after --duration seconds (a bound, in case the
testbed that started them dies), or at SIGTERM/SIGINT; each prints one JSON
line with the bytes moved and the mean rate at exit.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import sys
import threading
import time


class _Stop(Exception):
    pass


def _on_signal(signum, frame):
    raise _Stop()


def sink(port: int, duration: float) -> dict:
    deadline = time.monotonic() + duration
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(16)
    srv.settimeout(0.5)
    total = [0]
    lock = threading.Lock()
    t0 = time.monotonic()

    def drain(conn):
        conn.settimeout(0.5)
        buf = bytearray(1 << 20)
        try:
            while time.monotonic() < deadline:
                try:
                    n = conn.recv_into(buf)
                except socket.timeout:
                    continue
                if n == 0:
                    return
                with lock:
                    total[0] += n
        except OSError:
            return
        finally:
            conn.close()

    try:
        while time.monotonic() < deadline:
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                continue
            threading.Thread(target=drain, args=(conn,), daemon=True).start()
    except _Stop:
        pass
    finally:
        srv.close()
    dt = time.monotonic() - t0
    return {"role": "sink", "port": port, "bytes": total[0], "seconds": round(dt, 3), "mbit_s": round(total[0] * 8 / dt / 1e6, 2)}


def send(host: str, port: int, duration: float) -> dict:
    deadline = time.monotonic() + duration
    sock = None
    while time.monotonic() < deadline:  # the sink may not listen yet
        try:
            sock = socket.create_connection((host, port), timeout=1.0)
            break
        except OSError:
            time.sleep(0.1)
    if sock is None:
        return {"role": "send", "error": "no connection"}
    sock.settimeout(0.5)
    buf = b"\0" * (1 << 20)
    total = 0
    t0 = time.monotonic()
    try:
        while time.monotonic() < deadline:
            try:
                total += sock.send(buf)
            except socket.timeout:
                continue
    except (_Stop, OSError):
        pass
    finally:
        sock.close()
    dt = time.monotonic() - t0
    return {"role": "send", "host": host, "port": port, "bytes": total, "seconds": round(dt, 3), "mbit_s": round(total * 8 / dt / 1e6, 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="flow.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sink")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--duration", type=float, default=600)
    c = sub.add_parser("send")
    c.add_argument("--host", required=True)
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--duration", type=float, default=600)
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    try:
        res = sink(a.port, a.duration) if a.cmd == "sink" else send(a.host, a.port, a.duration)
    except _Stop:
        res = {"role": a.cmd, "stopped": True}
    print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
