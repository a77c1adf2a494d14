"""What REACT changed in a testbed run, read from the leader's FCT log
(REACT_FCT_LOG): the pattern versions run and, per chunk, the ranks the
switches swapped or the flows they moved, and what the congested rank
receives before and after."""

from __future__ import annotations

import json
import os
from typing import Dict, List, Optional

def fct_file(base: str, count: int) -> Optional[str]:
    """The benchmarked key's FCT log: REACT_FCT_LOG=base writes base.OP.DTYPE.NUMEL.jsonl per key
    (older backends wrote every key into base itself)."""
    for p in (f"{base}.allreduce.float32.{count}.jsonl", base):
        if os.path.exists(p):
            return p
    return None


def _load_fct(path: str, nbytes: int) -> Dict[int, List[dict]]:
    """Flows of the benchmarked key per pattern version (the barrier's key is skipped)."""
    by_epoch_ver: Dict[int, Dict[int, dict]] = {}
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            if "flow" not in d or d["bytes"] < nbytes / 64:  # the barrier's key logs tiny flows
                continue
            by_epoch_ver.setdefault(d["version"], {})[d["flow"]] = d
    out = {}
    for ver, flows in by_epoch_ver.items():
        out[ver] = [flows[k] for k in sorted(flows)]
    return out


def describe_swap(path: str, target: Optional[int], nbytes: int) -> dict:
    vers = _load_fct(path, nbytes)
    if not vers:
        return {"versions": [], "text": "no FCT log of the benchmarked collective"}
    first, last = min(vers), max(vers)
    a, b = vers[first], vers[last]

    def into(fl, r):
        return sum(1 for x in fl if x["dst"] == r), sum(x["bytes"] for x in fl if x["dst"] == r)

    def roles(fl, r):
        # per chunk: how many flows rank r receives and sends
        out = {}
        for x in fl:
            c = out.setdefault(x["chunk"], [0, 0])
            if x["dst"] == r:
                c[0] += 1
            if x["src"] == r:
                c[1] += 1
        return out

    perms = {}
    if len(a) == len(b):
        for c in sorted({x["chunk"] for x in a}):
            m, ok = {}, True
            for x, y in zip(a, b):
                if x["chunk"] != c:
                    continue
                for u, v in ((x["src"], y["src"]), (x["dst"], y["dst"])):
                    if m.setdefault(u, v) != v:
                        ok = False
            if ok:
                perms[c] = "ranks swapped " + _cycles(m) if _cycles(m) != "unchanged" else "unchanged"
            else:
                moved = [f"s{x['step']} {x['src']}->{x['dst']} => {y['src']}->{y['dst']}" for x, y in zip(a, b)
                         if x["chunk"] == c and (x["src"], x["dst"]) != (y["src"], y["dst"])]
                perms[c] = "flows moved: " + ", ".join(moved)
    lines = [f"pattern versions run: {sorted(vers)} (first {first}, last {last})"]
    for c, p in perms.items():
        lines.append(f"  chunk {c}: {p}")
    res = {"versions": sorted(vers), "permutations": {str(c): p for c, p in perms.items()}}
    if target is not None:
        fa, fb = into(a, target), into(b, target)
        lines.append(f"  congested rank {target}: receives {fa[0]} flows ({fa[1] / 2**20:.1f} MiB) per epoch in v{first}, "
                     f"{fb[0]} flows ({fb[1] / 2**20:.1f} MiB) in v{last}")
        ra, rb = roles(a, target), roles(b, target)
        for c in sorted(ra):
            lines.append(f"    chunk {c}: in/out flows {ra[c][0]}/{ra[c][1]} -> {rb.get(c, [0, 0])[0]}/{rb.get(c, [0, 0])[1]}")
        # the fewest flows into target in any version run: what the tuner tried, kept or reverted
        fewest = min(into(fl, target)[0] for fl in vers.values())
        res.update({"target": target, "flows_into_target_before": fa[0], "flows_into_target_after": fb[0],
                    "flows_into_target_fewest": fewest, "bytes_into_target_before": fa[1], "bytes_into_target_after": fb[1]})
    res["edges_before"] = _edges(a)
    res["edges_after"] = _edges(b)
    res["text"] = "\n".join(lines)
    return res


def _cycles(m: Dict[int, int]) -> str:
    seen, cyc = set(), []
    for s in sorted(m):
        if s in seen or m[s] == s:
            seen.add(s)
            continue
        c, x = [], s
        while x not in seen and x in m:
            seen.add(x)
            c.append(x)
            x = m[x]
        if len(c) > 1:
            cyc.append("(" + " ".join(str(v) for v in c) + ")")
    return " ".join(cyc) if cyc else "unchanged"


def _edges(fl: List[dict]) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for x in fl:
        out.setdefault(f"chunk{x['chunk']}", []).append(f"s{x['step']}:{x['src']}->{x['dst']}")
    return out


