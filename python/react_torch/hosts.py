"""Which ranks of a group share a host.

Flows between ranks of one host never touch the network, so REACT tunes a
pattern over hosts, not ranks (hier.py). Each rank names its host and the
names meet through the store the group was made with: the hostname, the
kernel's boot id (two containers of one machine share it, two machines do
not) and the address this rank reaches the store from (two network
namespaces of one machine, as in the testbed, differ there). REACT_HOST_ID
replaces all three, for tests and for clusters where they mislead.
LOCAL_WORLD_SIZE, torchrun's count of ranks a host, is only compared with
what was found: a launcher may set it wrong, a rank never guesses from it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
from typing import Dict, List, Optional

from . import _lib

log = logging.getLogger("react_torch")

_KEY = "react/host/"


def _store_address(store) -> Optional[tuple]:
    """(host, port) of the TCP store under any prefixes, or None (a file or
    hash store has no address)."""
    seen = 0
    while store is not None and seen < 16:
        host = getattr(store, "host", None)
        port = getattr(store, "port", None)
        if isinstance(host, str) and isinstance(port, int):
            return host, port
        store = getattr(store, "underlying_store", None)
        seen += 1
    return None


def _source_address(addr: Optional[tuple]) -> str:
    """The local address this process reaches addr from (a UDP connect
    picks the route; nothing is sent)."""
    if addr is None:
        return ""
    try:
        fam = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
        with socket.socket(fam, socket.SOCK_DGRAM) as s:
            s.connect(addr)
            return s.getsockname()[0]
    except OSError:
        return ""


def identity(store, env: Optional[Dict[str, str]] = None) -> str:
    """This rank's host identity."""
    env = os.environ if env is None else env
    given = env.get("REACT_HOST_ID")
    if given:
        return "id:" + given
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    return f"{socket.gethostname()}|{boot}|{_source_address(_store_address(store))}"


@dataclasses.dataclass(frozen=True)
class Layout:
    """A group's ranks by host and whether it runs over them (libreact's
    react_hosts_layout): hosts[h] lists the ranks on host h in rank order,
    hosts ordered by their lowest rank, so every rank that sees the same
    identities builds the same layout."""

    hosts: List[List[int]]
    host_of: List[int]
    local_of: List[int]
    rails: int
    hier: bool
    text: str

    @staticmethod
    def of(ids: List[str], mode: str) -> "Layout":
        return Layout(**_lib.hosts_layout(ids, mode))

    def host(self, rank: int) -> int:
        return self.host_of[rank]

    def local(self, rank: int) -> int:
        return self.local_of[rank]

    def rail(self, i: int) -> List[int]:
        return [rs[i] for rs in self.hosts]


def discover(store, rank: int, size: int, mode: str, env: Optional[Dict[str, str]] = None) -> Layout:
    """Every rank's host identity, through the store; every rank returns
    the same layout. The store's get waits for a rank that has not written
    yet (up to the store's timeout: a dead rank fails the group's creation)."""
    env = os.environ if env is None else env
    store.set(f"{_KEY}{rank}", identity(store, env))
    ids = [store.get(f"{_KEY}{r}").decode() for r in range(size)]
    lay = Layout.of(ids, mode)
    hint = env.get("LOCAL_WORLD_SIZE")
    mine = len(lay.hosts[lay.host(rank)])
    # the hint counts the world's ranks a host; a subgroup may hold fewer
    if hint and hint.isdigit() and int(hint) != mine and "REACT_HOST_ID" not in env and env.get("WORLD_SIZE") == str(size):
        log.warning("react_torch: LOCAL_WORLD_SIZE=%s but %d rank(s) of this group share rank %d's host (%s); "
                    "going by what was found (REACT_HOST_ID names hosts explicitly)", hint, mine, rank, lay.text)
    return lay
