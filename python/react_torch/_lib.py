"""Private loader of libreact.so, the Go core behind a C ABI (capi/react.h).

Loaded lazily, after torch (signal handler order), once per process. A
process forked after the library loaded cannot run Go (it would hang), so
every call from another pid fails at once with a clear error.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
from typing import Dict, Optional, Sequence, Tuple

# Status codes of capi/react.h; tests/python checks them against the header.
OK, NONE = 0, 1
E_ARG, E_INVALID, E_SHORT, E_SEMANTICS, E_HANDLE, E_STATE = -1, -2, -3, -4, -5, -6
E_FORK, E_PANIC, E_LIMIT = -11, -12, -13
ABI_VERSION = 8

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_settings: Optional[list] = None  # react_settings, read as the library loads
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
        "react_settings": ([u8p, c.c_size_t, sizep], c.c_int),
        "react_settings_agree": ([c.c_char_p, c.c_int, u8p, c.c_size_t, sizep], c.c_int),
        "react_settings_env": ([c.c_char_p, u8p, c.c_size_t, sizep], c.c_int),
        "react_hosts_layout": ([c.c_char_p, c.c_char_p, u8p, c.c_size_t, sizep], c.c_int),
        "react_call_sign": ([c.c_int64, c.c_char_p, c.c_char_p, c.c_int64, c.c_int64, c.c_char_p, c.c_int64, c.c_int64,
                             c.POINTER(c.c_int64), c.POINTER(c.c_uint32), c.POINTER(c.c_int64)], c.c_int),
        "react_call_sentence": ([c.POINTER(c.c_int64), c.POINTER(c.c_int), c.c_int, c.c_int, u8p, c.c_size_t, sizep], c.c_int),
        "react_control_create": ([c.c_char_p, c.POINTER(c.c_uint64)], c.c_int),
        "react_control_key": ([c.c_uint64, u8p, c.c_size_t, c.c_int64, c.c_int, c.c_char_p, c.c_char_p, c.POINTER(c.c_int)], c.c_int),
        "react_control_begin": ([c.c_uint64, c.c_int, c.POINTER(c.c_int64), c.POINTER(c.c_int64)], c.c_int),
        "react_control_pattern": ([c.c_uint64, c.c_int, c.c_int64, u8p, c.c_size_t, sizep], c.c_int),
        "react_control_end": ([c.c_uint64, c.c_int, c.c_void_p, c.c_void_p, c.c_size_t, c.c_double, c.c_int, c.c_double, c.c_int, c.POINTER(c.c_int64)], c.c_int),
        "react_control_send": ([c.c_uint64, c.c_double, c.POINTER(c.c_int64)], c.c_int),
        "react_control_fill": ([c.c_uint64, c.c_int64, c.c_int64, c.POINTER(c.c_int64), c.POINTER(c.c_double), c.c_size_t, c.c_double], c.c_int),
        "react_control_row": ([c.c_uint64, c.c_int64, c.POINTER(c.c_double), c.c_size_t, sizep], c.c_int),
        "react_control_take": ([c.c_uint64, c.c_int64, c.POINTER(c.c_double), c.c_size_t], c.c_int),
        "react_control_answer": ([c.c_uint64, c.c_int64, c.c_double, u8p, c.c_size_t, sizep], c.c_int),
        "react_control_check": ([c.c_uint64, c.c_int64, u8p, c.c_size_t, c.POINTER(c.c_int64), c.c_size_t, sizep], c.c_int),
        "react_control_accept": ([c.c_uint64, c.c_int64, c.POINTER(c.c_int64), c.c_size_t, c.POINTER(c.c_int64), u8p, c.c_size_t, sizep], c.c_int),
        "react_control_report": ([c.c_uint64, c.c_int, u8p, c.c_size_t, sizep], c.c_int),
        "react_control_offset": ([c.c_uint64, c.c_double], c.c_int),
        "react_control_stats": ([c.c_uint64, u8p, c.c_size_t, sizep], c.c_int),
        "react_control_close": ([c.c_uint64], c.c_int),
    }
    for name, (args, res) in sig.items():
        fn = getattr(lib, name)  # a missing symbol is a stale library: fail loudly
        fn.argtypes, fn.restype = args, res


def lib() -> ctypes.CDLL:
    global _lib, _pid, _settings
    if _forked or (_pid is not None and _pid != os.getpid()):
        raise ReactError(E_FORK, "react_torch: libreact was loaded by a parent process; a forked child cannot call it (Go does not survive fork)")
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            import torch  # noqa: F401  (torch first: signal handlers)

            path = library_path()
            handle = ctypes.CDLL(path)
            try:
                _declare(handle)
            except AttributeError as e:
                raise ReactError(E_ARG, f"react_torch: {path} is not the libreact this package expects ({e}); rebuild it (make lib)") from None
            if handle.react_abi_version() != ABI_VERSION:
                raise ReactError(E_ARG, f"react_torch: {path} has ABI {handle.react_abi_version()}, want {ABI_VERSION}; rebuild it (make lib)")
            if _settings is None:  # before react_init, which takes three of them
                _settings = json.loads(_sized(handle.react_settings, "settings", handle=handle))
            env = settings_env(os.environ, handle)
            if "init_error" in env:
                raise ReactError(E_ARG, "react_torch: " + env["init_error"])
            init = env["init"]
            rc = handle.react_init(init["log_level"], init["log_path"].encode() or None, init["gomaxprocs"])
            if rc < 0:
                raise ReactError(rc, "react_torch: react_init failed: " + _last_error(handle))
            _lib, _pid = handle, os.getpid()
    return _lib


def _last_error(handle: ctypes.CDLL) -> str:
    buf = ctypes.create_string_buffer(4096)
    handle.react_last_error(buf, len(buf))
    return buf.value.decode(errors="replace")


def _check(rc: int, what: str, handle: Optional[ctypes.CDLL] = None) -> int:
    if rc < 0:
        raise ReactError(rc, f"react_torch: {what}: {_last_error(handle or lib())}")
    return rc


def _buf(data: bytes):
    return (ctypes.c_uint8 * len(data)).from_buffer_copy(data), len(data)


def _sized(call, what: str, guess: int = 0, handle: Optional[ctypes.CDLL] = None) -> bytes:
    """Runs a call under the size-query protocol: a buffer of guess bytes
    (NULL when 0) first, then the size asked for. handle: the library while
    it loads."""
    n = ctypes.c_size_t(0)
    out = (ctypes.c_uint8 * guess)() if guess else None
    rc = call(out, guess, ctypes.byref(n))
    if rc == E_SHORT:
        out = (ctypes.c_uint8 * max(n.value, 1))()
        rc = call(out, n.value, ctypes.byref(n))
    _check(rc, what, handle)
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


def settings() -> list:
    """Every setting (react_settings): [{"name", "var", "type", "default",
    "help", "tuner", "shared"}, ...]; kept from the library's loading, so a
    forked child reads them too."""
    if _settings is None:
        lib()
    return _settings


def settings_env(env: Dict[str, str], handle: Optional[ctypes.CDLL] = None) -> dict:
    """What the environment env sets (react_settings_env): {"values",
    "unknown", "problems", "init" or "init_error"}. handle: the library
    while it loads."""
    lb = handle or lib()
    data = json.dumps({k: v for k, v in env.items() if k.startswith("REACT_") or k == "TORCH_DISTRIBUTED_DEBUG"}).encode()
    return json.loads(_sized(lambda b, c, n: lb.react_settings_env(data, b, c, n), "settings env", 1024, handle))


def hosts_layout(ids: Sequence[str], mode: str) -> dict:
    """A group's ranks by host from each rank's host identity (react_hosts_layout)."""
    lb, data = lib(), json.dumps(list(ids)).encode()
    return json.loads(_sized(lambda b, c, n: lb.react_hosts_layout(data, mode.encode(), b, c, n), "hosts layout", 512))


def settings_agree(every_json: bytes, size: int) -> str:
    """What keeps the ranks with these settings from running together, "" if
    nothing (react_settings_agree; every_json: each rank's set values)."""
    lb = lib()
    return _sized(lambda b, c, n: lb.react_settings_agree(every_json, size, b, c, n), "settings agree", 512).decode()


CALL_FIELDS = 8  # capi/react.h's REACT_CALL_FIELDS


class Signer:
    """react_call_sign, its output buffers made once: a call's signature,
    the salt of its tags and its digest. One per thread that signs."""

    def __init__(self):
        self.sig, self.salt, self.digest = (ctypes.c_int64 * CALL_FIELDS)(), ctypes.c_uint32(), ctypes.c_int64()
        self.out = (self.sig, ctypes.byref(self.salt), ctypes.byref(self.digest))

    def __call__(self, seq: int, op: str, dtype: str, numel: int, root: int, reduce: str, epoch: int,
                 version: int) -> Tuple[Tuple[int, ...], int, int]:
        _check(lib().react_call_sign(seq, op.encode(), dtype.encode(), numel, root, reduce.encode(), epoch, version, *self.out),
               "call sign")
        return tuple(self.sig[:]), self.salt.value, self.digest.value


def call_sentence(calls: Dict[int, Sequence[int]], size: int) -> str:
    """The ranks grouped by the call they made (react_call_sentence; calls: rank -> signature)."""
    rs = sorted(calls)
    sigs = (ctypes.c_int64 * (CALL_FIELDS * len(rs)))(*(int(x) for r in rs for x in calls[r]))
    ranks = (ctypes.c_int * len(rs))(*rs)
    lb = lib()
    return _sized(lambda b, c, n: lb.react_call_sentence(sigs, ranks, len(rs), size, b, c, n), "call sentence", 512).decode()


class Control:
    """One rank's control plane of a group in libreact (react_control_*,
    internal/control): every rule of it lives there; this moves arguments."""

    def __init__(self, config_json: str):
        h = ctypes.c_uint64(0)
        _check(lib().react_control_create(config_json.encode(), ctypes.byref(h)), "control create")
        self._h = h.value
        self._lib = lib()  # per call, no fork check: the backend refuses a forked child's calls first (_admit)
        self._e, self._v = ctypes.c_int64(0), ctypes.c_int64(0)
        self._ep, self._vp = ctypes.byref(self._e), ctypes.byref(self._v)
        self._due = (ctypes.c_int64 * 5)()
        self._row = (ctypes.c_double * 0)()

    def key(self, pattern: bytes, numel: int, itemsize: int, config_json: str, fct_log: str = "") -> int:
        b, n = _buf(pattern)
        out = ctypes.c_int(0)
        _check(lib().react_control_key(self._h, b, n, numel, itemsize, config_json.encode(), fct_log.encode(), ctypes.byref(out)), "control key")
        return out.value

    def begin(self, key: int) -> Tuple[int, int]:
        """(epoch, version in force)"""
        _check(self._lib.react_control_begin(self._h, key, self._ep, self._vp), "control begin")
        return self._e.value, self._v.value

    def pattern(self, key: int, version: int) -> bytes:
        lb = lib()
        return _sized(lambda b, c, n: lb.react_control_pattern(self._h, key, version, b, c, n), "control pattern", 4096)

    def end(self, key: int, pl, elapsed: float, entry: int = -1, entry_at: float = 0.0, deferred: bool = False) -> Tuple[int, int, int, int, int]:
        """pl: the pattern.Plan whose arrivals the executor wrote, or None.
        (recorded, exchange due or 0, the answer it needs, the key's next
        epoch, whether its next begin may switch)"""
        n = 0 if pl is None else len(pl.flows)
        fp, ap = pl.where if n else (None, None)
        _check(self._lib.react_control_end(self._h, key, fp, ap, n, elapsed, entry, entry_at, int(deferred), self._due), "control end")
        d = self._due
        return d[0], d[1], d[2], d[3], d[4]

    def send(self, at: float) -> Tuple[int, int]:
        """(exchange, its deferred records)"""
        out = (ctypes.c_int64 * 2)()
        _check(lib().react_control_send(self._h, at, out), "control send")
        return out[0], out[1]

    def fill(self, x: int, i: int, flows, arrivals, elapsed: float) -> None:
        n = len(flows)
        fp = flows.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)) if n else None
        ap = arrivals.ctypes.data_as(ctypes.POINTER(ctypes.c_double)) if n else None
        _check(lib().react_control_fill(self._h, x, i, fp, ap, n, elapsed), "control fill")

    def row(self, x: int):
        """This rank's row of exchange x, a float64 numpy array."""
        import numpy as np

        n = ctypes.c_size_t(0)
        rc = lib().react_control_row(self._h, x, self._row, len(self._row), ctypes.byref(n))
        if rc == E_SHORT:
            self._row = (ctypes.c_double * max(n.value, 2 * len(self._row)))()
            rc = lib().react_control_row(self._h, x, self._row, len(self._row), ctypes.byref(n))
        _check(rc, "control row")
        return np.ctypeslib.as_array(self._row)[: n.value].copy()

    def take(self, x: int, values) -> None:
        _check(lib().react_control_take(self._h, x, values.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), len(values)), "control take")

    def answer(self, x: int, now: float) -> bytes:
        lb = lib()
        return _sized(lambda b, c, n: lb.react_control_answer(self._h, x, now, b, c, n), "control answer", 1024)

    def check(self, x: int, body: bytes) -> list:
        b, nb = _buf(body)
        n = ctypes.c_size_t(0)
        ok = (ctypes.c_int64 * 16)()
        rc = lib().react_control_check(self._h, x, b, nb, ok, len(ok), ctypes.byref(n))
        if rc == E_SHORT:
            ok = (ctypes.c_int64 * n.value)()
            rc = lib().react_control_check(self._h, x, b, nb, ok, len(ok), ctypes.byref(n))
        _check(rc, "control check")
        return list(ok[: n.value])

    def accept(self, x: int, votes) -> Tuple[list, bool]:
        """(refusals [{"key", "version", "why"}], estimate the clock again now)"""
        lb = lib()
        v = (ctypes.c_int64 * max(len(votes), 1))(*votes)
        res = (ctypes.c_int64 * 2)()
        raw = _sized(lambda b, c, n: lb.react_control_accept(self._h, x, v, len(votes), res, b, c, n), "control accept", 256)
        return json.loads(raw), bool(res[1])

    def report(self, ask: bool) -> bytes:
        lb = lib()
        return _sized(lambda b, c, n: lb.react_control_report(self._h, int(ask), b, c, n), "control report", 8192)

    def offset(self, offset: float) -> None:
        _check(lib().react_control_offset(self._h, offset), "control offset")

    def stats(self) -> dict:
        lb = lib()
        return json.loads(_sized(lambda b, c, n: lb.react_control_stats(self._h, b, c, n), "control stats", 1024))

    def close(self) -> None:
        if self._h:
            h, self._h = self._h, 0
            _check(lib().react_control_close(h), "control close")
