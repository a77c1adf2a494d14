"""The bench as nccl-tests users read it: sizes and counts as nccl-tests
defines them, a units row, a ratio that says which way it goes, bandwidths
that stay readable at small sizes, per-iteration times in the JSON."""

import json

import pytest

from conftest import launch
from react_torch import bench


@pytest.mark.parametrize("op,size,want", [
    # nccl-tests: per-rank count rounded down to 16 bytes; size is the whole buffer
    ("allgather", 100, (64, 4, 4, 16)),
    ("allgather", 400, (384, 24, 24, 96)),
    ("reducescatter", 400, (384, 24, 96, 24)),
    ("allreduce", 400, (400, 100, 100, 100)),
    ("broadcast", 8, (8, 2, 2, 2)),
])
def test_shape_follows_nccl_tests(op, size, want):
    assert bench.shape(op, size, 4) == want


def test_numbers_stay_readable():
    assert bench.num(0.0794, 8).strip() == "0.0794"
    assert bench.num(0.000123, 8).strip() == "0.000123"
    assert float(bench.num(8e-7, 8)) == pytest.approx(8e-7, rel=0.1)
    assert bench.num(1234.5678, 9).strip() == "1234.57"
    assert all(len(bench.num(v, 8)) == 8 for v in (1e-9, 0.5, 3.0, 123456.0, 1e12))


def test_percentile_is_nearest_rank():
    xs = [float(i) for i in range(1, 21)]
    assert bench.percentile(xs, 95) == 19.0
    assert bench.percentile([5.0], 95) == 5.0


def _rows(out):
    return [ln.split() for ln in out.splitlines() if ln.strip() and not ln.startswith("#")]


def test_bench_allgather_against_gloo(tmp_path):
    js = tmp_path / "b.json"
    res = launch(4, "react_torch.bench", "--op", "allgather", "-b", "100", "-e", "400", "-f", "4", "-n", "3", "-w", "1", "--block", "2",
                 "--json", str(js), script="-m", env={"REACT_TUNE": "0"})
    for rc, _, err in res:
        assert rc == 0, err[-3000:]
    out = res[0][1]
    head = [ln for ln in out.splitlines() if ln.startswith("#")]
    assert any("react/gloo" in ln and "#wrong" in ln for ln in head)
    assert any("(B)" in ln and "(elements)" in ln and "(us)" in ln and "(GB/s)" in ln for ln in head)
    assert any("> 1: react is slower" in ln for ln in head)
    rows = _rows(out)
    assert [(r[0], r[1], r[6]) for r in rows] == [("64", "4", "react"), ("64", "4", "gloo"), ("384", "24", "react"), ("384", "24", "gloo")]
    for r in rows:
        assert r[11] == "0"  # #wrong
        assert float(r[9]) > 0  # algbw never prints as 0.00
    doc = json.loads(js.read_text())
    assert doc["baseline"] == "gloo"
    react = [r for r in doc["results"] if r["backend"] == "react"]
    assert [len(r["times_s"]) for r in react] == [3, 3]
    assert all(r["ratio"] > 0 and r["p95_s"] >= r["median_s"] for r in react)


def test_bench_against_react_notune():
    res = launch(2, "react_torch.bench", "--op", "allreduce", "-b", "1K", "-e", "1K", "-n", "2", "-w", "1", "--against", "react-notune",
                 script="-m")
    for rc, _, err in res:
        assert rc == 0, err[-3000:]
    rows = _rows(res[0][1])
    assert [r[6] for r in rows] == ["react", "react-notune"]
    assert "react/notune" in res[0][1]
