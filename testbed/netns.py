"""The emulated network of the testbed: hosts as network namespaces on one
Linux bridge (a star), each link shaped both ways with tc tbf; whether
namespaces can be made here; and removing, by name prefix, what a run left
(rtb<pid>...)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PREFIX = "rtb"
SUBNET = "10.77.0"  # private to the namespaces: the bridge has no address, nothing routes out
DEFAULT_VENV = os.path.expanduser("~/.cache/react-torch/venv-torch2.15.0")


class Unavailable(Exception):
    """Network namespaces cannot be made here (not root, no ip/tc, no netns)."""


def log(msg: str) -> None:
    print(f"[testbed {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh(*argv: str, check: bool = True, quiet: bool = False) -> subprocess.CompletedProcess:
    p = subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def python_exe() -> str:
    env = os.environ.get("TESTBED_PYTHON")
    if env:
        return env
    v = os.path.join(os.environ.get("VENV", DEFAULT_VENV), "bin", "python")
    return v if os.path.exists(v) else sys.executable


def library() -> str:
    return os.environ.get("REACT_LIBRARY") or os.path.join(ROOT, "build", "libreact.so")


def check_available() -> None:
    """Raises Unavailable with the reason when namespaces cannot be made."""
    if not sys.platform.startswith("linux"):
        raise Unavailable(f"needs Linux network namespaces; this is {sys.platform}")
    if os.geteuid() != 0:
        raise Unavailable("needs root (it creates network namespaces, veths, a bridge and tc qdiscs); run as root or use the simulator")
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise Unavailable(f"'{tool}' (iproute2) is not installed")
    probe = f"{PREFIX}{os.getpid()}-probe"
    p = sh("ip", "netns", "add", probe, check=False)
    if p.returncode != 0:
        raise Unavailable(f"cannot create a network namespace: {p.stderr.strip()}")
    try:
        q = sh("ip", "link", "add", f"{PREFIX}{os.getpid()}pb", "type", "bridge", check=False)
        if q.returncode != 0:
            raise Unavailable(f"cannot create a Linux bridge: {q.stderr.strip()}")
        sh("ip", "link", "del", f"{PREFIX}{os.getpid()}pb", check=False)
    finally:
        sh("ip", "netns", "del", probe, check=False)


# ---------------------------------------------------------------- cleanup by prefix

_NAME = re.compile(rf"^{PREFIX}(\d+)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def leftovers(pid: Optional[int] = None, include_live: bool = False) -> Dict[str, List[str]]:
    """Namespaces, links and processes named with our prefix: of one testbed pid,
    or of every dead testbed pid (and live ones too with include_live)."""

    def mine(name: str) -> bool:
        m = _NAME.match(name)
        if not m:
            return False
        owner = int(m.group(1))
        if pid is not None:
            return owner == pid
        return include_live or not _alive(owner)

    out = {"netns": [], "links": [], "pids": []}
    p = sh("ip", "netns", "list", check=False)
    for line in p.stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        if mine(name):
            out["netns"].append(name)
            q = sh("ip", "netns", "pids", name, check=False)
            out["pids"] += [x for x in q.stdout.split() if x.isdigit()]
    p = sh("ip", "-o", "link", "show", check=False)
    for line in p.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            name = parts[1].strip().split("@")[0]
            if mine(name):
                out["links"].append(name)
    return out


def clean(pid: Optional[int] = None, include_live: bool = False) -> Dict[str, List[str]]:
    """Kills the processes inside our namespaces, deletes the namespaces, then the links."""
    found = leftovers(pid, include_live)
    for x in found["pids"]:
        try:
            os.kill(int(x), signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 5
    for ns in found["netns"]:
        while time.monotonic() < deadline and sh("ip", "netns", "pids", ns, check=False).stdout.strip():
            time.sleep(0.05)
        sh("ip", "netns", "del", ns, check=False)
    for link in sorted(found["links"], key=lambda n: n.endswith("br")):  # veths first, the bridge last
        sh("ip", "link", "del", link, check=False)
    return found


# ---------------------------------------------------------------- the network


class Testbed:
    """A star: hosts (namespaces) on one bridge, each link shaped both ways."""

    def __init__(self, nranks: int, nexternal: int, rate: Optional[str], burst: str = "64kb", latency: str = "20ms"):
        self.tag = f"{PREFIX}{os.getpid()}"
        self.nranks, self.nexternal = nranks, nexternal
        self.rate, self.burst, self.latency = rate, burst, latency
        self.bridge = f"{self.tag}br"
        self.hosts: List[Tuple[str, str, str]] = []  # (namespace, bridge-side veth, ip)
        for i in range(nranks):
            self.hosts.append((f"{self.tag}-r{i}", f"{self.tag}a{i}", f"{SUBNET}.{i + 1}"))
        for j in range(nexternal):
            self.hosts.append((f"{self.tag}-x{j}", f"{self.tag}a{nranks + j}", f"{SUBNET}.{101 + j}"))
        self.procs: List[subprocess.Popen] = []
        self.made = False

    def rank(self, i: int) -> Tuple[str, str, str]:
        return self.hosts[i]

    def external(self, j: int) -> Tuple[str, str, str]:
        return self.hosts[self.nranks + j]

    def up(self) -> None:
        self.made = True  # from here on down() has something to remove
        sh("ip", "link", "add", self.bridge, "type", "bridge", "stp_state", "0")
        sh("ip", "link", "set", self.bridge, "up")
        for idx, (ns, veth, ip) in enumerate(self.hosts):
            peer = f"{self.tag}b{idx}"
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", veth, "type", "veth", "peer", "name", peer)
            sh("ip", "link", "set", peer, "netns", ns)
            sh("ip", "link", "set", veth, "master", self.bridge, "up")
            n = ("ip", "netns", "exec", ns)
            sh(*n, "ip", "link", "set", "lo", "up")
            sh(*n, "ip", "link", "set", peer, "name", "eth0")
            sh(*n, "ip", "addr", "add", f"{ip}/24", "dev", "eth0")
            sh(*n, "ip", "link", "set", "eth0", "up")
            self.shape(idx, self.rate)
        self.wait_reachable()

    def shape(self, idx: int, rate: Optional[str]) -> None:
        ns, veth, _ = self.hosts[idx]
        for dev, pre in ((veth, ()), ("eth0", ("ip", "netns", "exec", ns))):
            sh(*pre, "tc", "qdisc", "del", "dev", dev, "root", check=False, quiet=True)
            if rate:
                sh(*pre, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", self.burst, "latency", self.latency)

    def wait_reachable(self, timeout: float = 10.0) -> None:
        ns0 = self.hosts[0][0]
        deadline = time.monotonic() + timeout
        for _, _, ip in self.hosts[1:]:
            while sh("ip", "netns", "exec", ns0, "ping", "-c1", "-W1", ip, check=False).returncode != 0:
                if shutil.which("ping") is None or time.monotonic() > deadline:
                    return
                time.sleep(0.1)

    def popen(self, ns: str, argv: List[str], env: Dict[str, str], stdout, stderr) -> subprocess.Popen:
        p = subprocess.Popen(["ip", "netns", "exec", ns, *argv], env=env, stdout=stdout, stderr=stderr,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(p)
        return p

    def stop(self, procs: List[subprocess.Popen], grace: float = 5.0) -> None:
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + grace
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()

    def down(self) -> None:
        sigs = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)  # a second ^C must not stop the cleanup
        try:
            self.stop(self.procs, grace=2.0)
            self.procs = []
            if self.made:
                clean(pid=os.getpid())
                self.made = False
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
