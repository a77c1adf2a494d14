"""The names react gives collectives and reduce ops, in one place: the
ops that run as a pattern (Go's pattern ops, by its names), those that
reduce, and the reduce ops with torch's ReduceOp mapped to them."""

from __future__ import annotations

import torch
import torch.distributed as dist

# Ops that run as a pattern, in the order of Go's ten.Op.
OPS = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce")
REDUCING = ("allreduce", "reduce", "reducescatter")

SUM, AVG, PRODUCT, MIN, MAX = "sum", "avg", "product", "min", "max"
BAND, BOR, BXOR = "band", "bor", "bxor"
REDUCE_OPS = (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR)


def redop(op: str, reduce: str) -> str:
    """The reduce op a call of op carries in its signature: reduce for the
    ops that reduce, "" for the others."""
    return reduce if op in REDUCING else ""


def op_name(op) -> str:
    """A torch ReduceOp by name (SUM, BAND, PREMUL_SUM, ...), not
    <ReduceOp object at 0x...>."""
    for k, v in dist.ReduceOp.RedOpType.__members__.items():
        if op == v:
            return k
    return str(op)


def _reduce_table():
    r = dist.ReduceOp
    table = [(r.SUM, SUM), (r.PRODUCT, PRODUCT), (r.MIN, MIN), (r.MAX, MAX), (r.BAND, BAND), (r.BOR, BOR), (r.BXOR, BXOR)]
    if hasattr(r, "AVG"):
        table.append((r.AVG, AVG))
    return tuple(table)


_REDUCE_TABLE = _reduce_table()


def reduce_name(op, what: str = "collective") -> str:
    """Maps a torch ReduceOp to the executor's name; an unsupported op
    raises, naming the collective and the op. (A ReduceOp compares equal
    to its RedOpType but hashes apart: the table is searched, not keyed.)"""
    for k, v in _REDUCE_TABLE:
        if op == k:
            return v
    raise ValueError(f"react_torch: {what}: reduce op {op_name(op)} is not supported (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR are)")


def check_reduce(name: str, dtype: torch.dtype, what: str = "collective") -> None:
    if name == AVG and not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(f"react_torch: {what}: reduce op AVG needs a floating point tensor, got {dtype}")
    if name in (MIN, MAX) and dtype.is_complex:
        raise TypeError(f"react_torch: {what}: reduce op {name.upper()} is not defined for {dtype}")
    if name in (BAND, BOR, BXOR) and (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(f"react_torch: {what}: reduce op {name.upper()} needs an integer or bool tensor, got {dtype}")
