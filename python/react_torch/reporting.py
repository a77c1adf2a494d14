"""What the leader's tuners know, as this rank last heard it: the object
react_torch.report() returns. The content is libreact's (pkg/tuner.Report,
one per collective key); this module only shifts versions to the group's
numbering and prints it."""

from typing import Any, Dict, List, Optional


class KeyReport:
    """One collective key's tuner: the ranks slow themselves (slow_hosts:
    a busy CPU, a slow NIC; their links' loads are marked "host"), the
    links its link model gives competing flows (most first; each with the
    links it cannot be told apart from),
    the pairs that stand out, the last batch's collective time, and every
    change it made. Versions are the group's (stats()'s). On a
    hierarchical group the pattern runs over hosts: a link's "rank" is a
    host, hosts[rank] its ranks."""

    def __init__(self, d: Dict[str, Any], hosts: Optional[List[List[int]]] = None):
        self.hosts = hosts
        op, dtype, numel, root = d["key"]
        base, r = d["base"], d["report"]
        self.key = (op, dtype, numel, root)
        self.name = f"{op} {dtype} x{numel}" + (f" root {root}" if root >= 0 else "")
        self.model, self.epoch, self.version = r["model"], r["epoch"], r["version"] + base
        self.time: Optional[Dict[str, float]] = r["time"]
        self.noise, self.rms, self.misfit = r["noise"], r["rms"], r["misfit"]
        self.slow_hosts: List[Dict[str, Any]] = r["slow_hosts"]
        self.links: List[Dict[str, Any]] = r["links"]
        self.pairs: List[Dict[str, Any]] = r["pairs"]
        self.changes: List[Dict[str, Any]] = [{**c, "from": c["from"] + base, "to": c["to"] + base} for c in r["changes"]]

    def __str__(self) -> str:
        out = [f"{self.name}: pattern version {self.version} at epoch {self.epoch} (tuner {self.model})"]
        if self.time:
            out.append(f"  collective time: mean {self.time['mean'] * 1e3:.3f} ms, p95 {self.time['p95'] * 1e3:.3f} ms (last {self.time['epochs']} epochs)")
        if self.misfit:
            out.append(f"  the links miss the flows by {self.rms:.2f} (log): a busy CPU slows flows too, a load may be a host's")
        for h in self.slow_hosts:
            how = f"busy, sharing its sends and receives with {h['busy']:.1f} competing flows" if h["kind"] == "busy" else "slow"
            out.append(f"  {_node(h['rank'], self.hosts)} is slow itself, not its links ({how}): its sends take x{h['send']:.2f}, its receives x{h['receive']:.2f}")
        for ln in self.links:
            what = f"read as {_node(ln['rank'], self.hosts)} slow itself" if ln.get("host") else "congested" if ln["significant"] else "not significant"
            load = f"{ln['competing']:.2f} ± {ln['se']:.2f} competing flows"
            if ln.get("slow", 0) >= 0.01:
                rate = f"at {100 / (1 + ln['slow']):.0f}% of the line rate"
                load = rate if ln["competing"] < 0.01 else f"{rate}, {load}"
            s = f"  {_link(ln, self.hosts)}: {load} ({what})"
            if ln.get("ambiguous_with"):
                s += " or " + ", ".join(_link(o, self.hosts) for o in ln["ambiguous_with"]) + " (the flows seen cannot tell them apart)"
            out.append(s)
        for p in self.pairs:
            out.append(f"  pair {_node(p['src'], self.hosts)} -> {_node(p['dst'], self.hosts)}: x{p['factor']:.2f} ± {p['se']:.2f}")
        for c in self.changes:
            s = f"  epoch {c['epoch']}: version {c['from']} -> {c['to']} from epoch {c['effective']} by {', '.join(c['swaps'])}"
            if c["predicted"]:
                s += f"; predicted {c['predicted']:.2f}x"
            if c["measured"]:
                s += f", measured {c['measured']:.2f}x"
            out.append(s + f"; {c['verdict']}")
        return "\n".join(out)


def _node(r: int, hosts: Optional[List[List[int]]]) -> str:
    if hosts is None:
        return f"rank {r}"
    return f"host {r} (rank{'s' if len(hosts[r]) > 1 else ''} {', '.join(map(str, hosts[r]))})"


def _link(ln: Dict[str, Any], hosts: Optional[List[List[int]]]) -> str:
    return f"{_node(ln['rank'], hosts)}'s {'downlink' if ln['dir'] == 'down' else 'uplink'}"


class Report:
    """The leader's report as of one exchange: `keys`, a KeyReport per
    tuned collective; `exchange`, the exchange that carried it. hosts: a
    hierarchical group's ranks per host (its patterns run over hosts)."""

    def __init__(self, d: Dict[str, Any], hosts: Optional[List[List[int]]] = None):
        self.exchange: int = d["exchange"]
        self.keys: List[KeyReport] = [KeyReport(k, hosts) for k in d["keys"]]

    def key(self, op: str, dtype: str, numel: int, root: int = -1) -> Optional[KeyReport]:
        return next((k for k in self.keys if k.key == (op, dtype, numel, root)), None)

    def __str__(self) -> str:
        return f"react report (exchange {self.exchange})\n" + "\n".join(str(k) for k in self.keys)

    __repr__ = __str__
