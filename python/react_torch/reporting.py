"""What the leader's tuners know, as this rank last heard it: the object
react_torch.report() returns. Content and text are libreact's
(pkg/tuner.Report, one per collective key, its versions the group's)."""

from typing import Any, Dict, List, Optional


class KeyReport:
    """One collective key's tuner: the ranks slow themselves (slow_hosts:
    a busy CPU, a slow NIC; their links' loads are marked "host"), the
    links its link model gives competing flows (most first; each with the
    links it cannot be told apart from), the pairs that stand out, the last
    batch's collective time, and every change it made. Versions are the
    group's (stats()'s). On a hierarchical group the pattern runs over
    hosts: a link's "rank" is a host, which str() names with its ranks."""

    def __init__(self, d: Dict[str, Any]):
        op, dtype, numel, root = d["key"]
        r = d["report"]
        self.key = (op, dtype, numel, root)
        self.model, self.epoch, self.version = r["model"], r["epoch"], r["version"]
        self.time: Optional[Dict[str, float]] = r["time"]
        self.noise, self.rms, self.misfit = r["noise"], r["rms"], r["misfit"]
        self.slow_hosts: List[Dict[str, Any]] = r["slow_hosts"]
        self.links: List[Dict[str, Any]] = r["links"]
        self.pairs: List[Dict[str, Any]] = r["pairs"]
        self.changes: List[Dict[str, Any]] = r["changes"]
        self.text: str = d["text"]

    def __str__(self) -> str:
        return self.text


class Report:
    """The leader's report as of one exchange: `keys`, a KeyReport per
    tuned collective; `exchange`, the exchange that carried it."""

    def __init__(self, d: Dict[str, Any]):
        self.exchange: int = d["exchange"]
        self.keys: List[KeyReport] = [KeyReport(k) for k in d["keys"]]

    def key(self, op: str, dtype: str, numel: int, root: int = -1) -> Optional[KeyReport]:
        return next((k for k in self.keys if k.key == (op, dtype, numel, root)), None)

    def __str__(self) -> str:
        return f"react report (exchange {self.exchange})\n" + "\n".join(str(k) for k in self.keys)

    __repr__ = __str__
