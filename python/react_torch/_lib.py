"""Private loader of libreact.so, the Go core behind a C ABI (capi/react.h).

Loaded lazily, after torch (signal handler order), once per process. A
process forked after the library loaded cannot run Go (it would hang), so
every call from another pid fails at once with a clear error.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Callable, Optional, Tuple

# Status codes of capi/react.h; tests/python checks them against the header.
OK, NONE = 0, 1
E_ARG, E_INVALID, E_SHORT, E_SEMANTICS, E_HANDLE, E_STATE = -1, -2, -3, -4, -5, -6
E_FORK, E_PANIC, E_LIMIT = -11, -12, -13
ABI_VERSION = 2

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_pid: Optional[int] = None
_forked = False


class ReactError(RuntimeError):
    """A libreact call failed; code is the ABI status."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def _after_fork_in_child() -> None:
    global _forked
    if _lib is not None:
        _forked = True


os.register_at_fork(after_in_child=_after_fork_in_child)


def library_path() -> str:
    env = os.environ.get("REACT_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "libreact.so"), os.path.join(here, "..", "..", "build", "libreact.so")):
        if os.path.exists(cand):
            return os.path.abspath(cand)
    raise ReactError(-1, "react_torch: libreact.so not found (build it with `make lib` or set REACT_LIBRARY)")


def _declare(lib: ctypes.CDLL) -> None:
    c = ctypes
    u8p = c.POINTER(c.c_uint8)
    sizep = c.POINTER(c.c_size_t)
    sig = {
        "react_abi_version": ([], c.c_int),
        "react_init": ([c.c_int, c.c_char_p, c.c_int], c.c_int),
        "react_last_error": ([c.c_char_p, c.c_size_t], c.c_int),
        "react_pattern_generate": ([c.c_char_p, c.c_char_p, c.c_int, c.c_int, u8p, c.c_size_t, sizep], c.c_int),
        "react_pattern_layout": ([u8p, c.c_size_t, u8p, c.c_size_t, sizep], c.c_int),
        "react_pattern_plan": ([u8p, c.c_size_t, c.c_int, c.c_int64, c.c_int, c.c_int64, u8p, c.c_size_t, sizep], c.c_int),
        "react_tuner_settings": ([u8p, c.c_size_t, sizep], c.c_int),
        "react_tuner_create": ([u8p, c.c_size_t, c.c_double, c.c_char_p, c.POINTER(c.c_uint64)], c.c_int),
        "react_tuner_close": ([c.c_uint64], c.c_int),
        "react_leader_create": ([c.POINTER(c.c_uint64)], c.c_int),
        "react_leader_key": ([c.c_uint64, c.c_int, u8p, c.c_size_t, c.c_int, c.c_double, c.c_char_p, c.c_char_p], c.c_int),
        "react_leader_exchange": ([c.c_uint64, c.POINTER(c.c_int64), c.c_size_t, c.POINTER(c.c_double), c.c_size_t], c.c_int),
        "react_leader_decisions": ([c.c_uint64, u8p, c.c_size_t, sizep], c.c_int),
        "react_leader_reset": ([c.c_uint64, c.c_int], c.c_int),
        "react_leader_report": ([c.c_uint64, c.c_int64, u8p, c.c_size_t, sizep], c.c_int),
        "react_leader_close": ([c.c_uint64], c.c_int),
    }
    for name, (args, res) in sig.items():
        fn = getattr(lib, name)  # a missing symbol is a stale library: fail loudly
        fn.argtypes, fn.restype = args, res


# What react_init is given: libreact's log level, its log file ("" for
# stderr) and GOMAXPROCS. config.py installs the function that reads them
# from react_torch's own REACT_* variables (the package imports it first),
# so that this module imports nothing of the package.
def _default_init_args() -> Tuple[int, str, int]:
    return 1, "", 1


init_args: Callable[[], Tuple[int, str, int]] = _default_init_args


def lib() -> ctypes.CDLL:
    global _lib, _pid
    if _forked or (_pid is not None and _pid != os.getpid()):
        raise ReactError(E_FORK, "react_torch: libreact was loaded by a parent process; a forked child cannot call it (Go does not survive fork)")
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            import torch  # noqa: F401  (torch first: signal handlers)

            level, log_path, procs = init_args()
            path = library_path()
            handle = ctypes.CDLL(path)
            try:
                _declare(handle)
            except AttributeError as e:
                raise ReactError(E_ARG, f"react_torch: {path} is not the libreact this package expects ({e}); rebuild it (make lib)") from None
            if handle.react_abi_version() != ABI_VERSION:
                raise ReactError(E_ARG, f"react_torch: {path} has ABI {handle.react_abi_version()}, want {ABI_VERSION}; rebuild it (make lib)")
            rc = handle.react_init(level, log_path.encode() or None, procs)
            if rc < 0:
                raise ReactError(rc, "react_torch: react_init failed: " + _last_error(handle))
            _lib, _pid = handle, os.getpid()
    return _lib


def _last_error(handle: ctypes.CDLL) -> str:
    buf = ctypes.create_string_buffer(4096)
    handle.react_last_error(buf, len(buf))
    return buf.value.decode(errors="replace")


def _check(rc: int, what: str) -> int:
    if rc < 0:
        raise ReactError(rc, f"react_torch: {what}: {_last_error(lib())}")
    return rc


def _buf(data: bytes):
    return (ctypes.c_uint8 * len(data)).from_buffer_copy(data), len(data)


def _sized(call, what: str, guess: int = 0) -> bytes:
    """Runs a call under the size-query protocol: a buffer of guess bytes
    (NULL when 0) first, then the size asked for."""
    n = ctypes.c_size_t(0)
    out = (ctypes.c_uint8 * guess)() if guess else None
    rc = call(out, guess, ctypes.byref(n))
    if rc == E_SHORT:
        out = (ctypes.c_uint8 * max(n.value, 1))()
        rc = call(out, n.value, ctypes.byref(n))
    _check(rc, what)
    return bytes(out[: n.value])


def generate_pattern(op: str, algo: str, ranks: int, root: int) -> bytes:
    lb = lib()
    return _sized(lambda b, c, n: lb.react_pattern_generate(op.encode(), algo.encode(), ranks, root, b, c, n), f"generate {op}/{algo} for {ranks} ranks")


def pattern_layout(data: bytes) -> bytes:
    """The pattern's layout, once libreact has checked it (ReactError if it
    fails). The buffer is guessed large enough so that the pattern is
    decoded and checked once; only an allgather whose flows carry many
    blocks each needs a second call."""
    lb = lib()
    src, ln = _buf(data)
    return _sized(lambda b, c, n: lb.react_pattern_layout(src, ln, b, c, n), "pattern layout", guess=ln + 4096)


def pattern_plan(data: bytes, rank: int, numel: int, itemsize: int, segment_bytes: int) -> bytes:
    """One rank's execution plan of a pattern (react.plan/v1)."""
    lb = lib()
    src, ln = _buf(data)
    return _sized(lambda b, c, n: lb.react_pattern_plan(src, ln, rank, numel, itemsize, segment_bytes, b, c, n),
                  f"plan of rank {rank}", guess=4 * ln + 4096)


def tuner_settings() -> list:
    """The tuner's settings: [{"name", "type", "default", "help"}, ...]."""
    import json

    lb = lib()
    return json.loads(_sized(lambda b, c, n: lb.react_tuner_settings(b, c, n), "tuner settings"))


class Tuner:
    """A libreact tuner, made and closed: what checks a tuner config."""

    def __init__(self, pattern: bytes, message_bytes: float, config_json: str):
        h = ctypes.c_uint64(0)
        b, n = _buf(pattern)
        _check(lib().react_tuner_create(b, n, float(message_bytes), config_json.encode(), ctypes.byref(h)), "tuner create")
        self._h = h.value

    def close(self) -> None:
        if self._h:
            lib().react_tuner_close(self._h)
            self._h = 0


class Leader:
    """A group leader's tuners in libreact (react_leader_*): every key's
    epochs of an exchange go in whole; decisions and reports come out."""

    def __init__(self):
        h = ctypes.c_uint64(0)
        _check(lib().react_leader_create(ctypes.byref(h)), "leader create")
        self._h = h.value

    def key(self, key: int, pattern: bytes, version: int, message_bytes: float, config_json: str, log_path: str = "") -> None:
        b, n = _buf(pattern)
        _check(lib().react_leader_key(self._h, key, b, n, version, float(message_bytes), config_json.encode(), log_path.encode()), "leader key")

    def exchange(self, layout, values) -> None:
        """layout: int64 array, values: float64 array (numpy, contiguous)."""
        lp = layout.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
        vp = values.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
        _check(lib().react_leader_exchange(self._h, lp, len(layout), vp, len(values)), "leader exchange")

    def decisions(self) -> list:
        """[(key, version, effective epoch, pattern bytes)]"""
        import msgpack

        lb = lib()
        raw = _sized(lambda b, c, n: lb.react_leader_decisions(self._h, b, c, n), "leader decisions", 256)
        return [tuple(d) for d in msgpack.unpackb(raw)]

    def report(self, exchange: int) -> bytes:
        lb = lib()
        return _sized(lambda b, c, n: lb.react_leader_report(self._h, exchange, b, c, n), "leader report", 8192)

    def reset(self, key: int) -> None:
        _check(lib().react_leader_reset(self._h, key), "leader reset")

    def close(self) -> None:
        if self._h:
            h, self._h = self._h, 0
            _check(lib().react_leader_close(h), "leader close")
