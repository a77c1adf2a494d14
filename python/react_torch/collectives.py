"""The torch adapters: ProcessGroup's collective methods, each admitted
(_admit: nothing queued for a call this process cannot run), checked for
sizes, and queued in call order (_submit) as runs of the key's pattern
(_run). ReactBackend inherits them."""

import contextlib
from typing import List

import torch
import torch.distributed as dist

from .ops import AVG, check_reduce, reduce_name


class Collectives:
    """ProcessGroup's collectives on a ReactBackend."""

    def allreduce(self, tensors: List[torch.Tensor], opts=None):
        if any(t.layout != torch.strided for t in tensors):
            # Gloo reduces sparse COO tensors (sums of index sets); a pattern
            # of dense chunks cannot carry them
            o = dist.AllreduceOptions()
            o.reduceOp = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
            return self._delegated("allreduce of sparse tensors", lambda: self._gloo.allreduce(tensors, o), tensors, layouts=True)
        dev = self._admit("allreduce", tensors)
        name = _redop(opts, "allreduce")
        for t in tensors:
            check_reduce(name, t.dtype, "allreduce")

        def fn():
            for t in tensors:
                self._in_place(t, "allreduce", name)

        return self._submit(fn, tensors, dev, "allreduce", opts)

    def allreduce_coalesced(self, tensors: List[torch.Tensor], opts=None):
        o = dist.AllreduceOptions()
        if opts is not None:
            o.reduceOp = opts.reduceOp
        return self.allreduce(tensors, o)

    def broadcast(self, tensors: List[torch.Tensor], opts=None):
        dev = self._admit("broadcast", tensors)
        root = opts.rootRank if opts is not None else 0

        def fn():
            for t in tensors:
                self._in_place(t, "broadcast", "sum", root)

        return self._submit(fn, tensors, dev, "broadcast", opts)

    def reduce(self, tensors: List[torch.Tensor], opts=None):
        dev = self._admit("reduce", tensors)
        root = opts.rootRank if opts is not None else 0
        name = _redop(opts, "reduce")
        for t in tensors:
            check_reduce(name, t.dtype, "reduce")

        def fn():
            for t in tensors:
                # a rank other than the root keeps its input, as NCCL's does
                self._in_place(t, "reduce", name, root, keep=self._rank != root)

        return self._submit(fn, tensors, dev, "reduce", opts)

    def _in_place(self, t: torch.Tensor, op: str, name: str, root: int = -1, keep: bool = False) -> None:
        """Runs op on t's elements (through a contiguous copy where t is not
        contiguous) and leaves the result in t, unless keep."""
        if self._size == 1:
            return
        flat = t.view(-1) if t.is_contiguous() else t.contiguous().view(-1)
        self._run(op, t, t.numel(), flat, name, root, keep=keep)
        if keep:
            return
        if name == AVG:
            flat.div_(self._size)
        if flat.data_ptr() != t.data_ptr():
            t.copy_(flat.view_as(t))

    def _check_allgather(self, out: torch.Tensor, inp: torch.Tensor) -> None:
        m = inp.numel()
        if out.numel() != m * self._size:
            raise ValueError(f"react_torch: allgather output has {out.numel()} elements, want {self._size} x {m} = {m * self._size}")
        if out.dtype != inp.dtype:
            raise TypeError(f"react_torch: allgather output dtype {out.dtype} differs from input {inp.dtype}")

    def _allgather_flat(self, out: torch.Tensor, inp: torch.Tensor) -> None:
        m = inp.numel()
        buf = out.view(-1) if out.is_contiguous() else torch.empty(out.numel(), dtype=out.dtype, device=out.device)
        buf[self._rank * m : (self._rank + 1) * m].copy_(inp.reshape(-1))
        if self._size > 1:
            self._run("allgather", inp, m * self._size, buf)
        if buf.data_ptr() != out.data_ptr():
            out.copy_(buf.view_as(out))

    def allgather(self, output_tensors: List[List[torch.Tensor]], input_tensors: List[torch.Tensor], opts=None):
        dev = self._admit("allgather", output_tensors, input_tensors)
        for outs, inp in zip(output_tensors, input_tensors):
            if len(outs) != self._size:
                raise ValueError(f"react_torch: allgather needs {self._size} output tensors, got {len(outs)}")
            for o in outs:
                if o.numel() != inp.numel():
                    raise ValueError(f"react_torch: allgather output tensor has {o.numel()} elements, input has {inp.numel()}")
                if o.dtype != inp.dtype:
                    raise TypeError(f"react_torch: allgather output dtype {o.dtype} differs from input {inp.dtype}")

        def fn():
            for outs, inp in zip(output_tensors, input_tensors):
                flat = torch.empty(inp.numel() * self._size, dtype=inp.dtype, device=inp.device)
                self._allgather_flat(flat, inp)
                for r, o in enumerate(outs):
                    o.copy_(flat[r * inp.numel() : (r + 1) * inp.numel()].view_as(o))

        return self._submit(fn, output_tensors, dev, "allgather", opts)

    def allgather_coalesced(self, output_lists: List[List[torch.Tensor]], inputs: List[torch.Tensor], opts=None):
        """dist.all_gather_coalesced: output_lists[r][i] gets rank r's
        inputs[i]. The inputs travel as one buffer, one allgather."""
        dev = self._admit("allgather_coalesced", output_lists, inputs)
        if len(output_lists) != self._size:
            raise ValueError(f"react_torch: allgather_coalesced needs {self._size} output lists (one per rank), got {len(output_lists)}")
        for r, outs in enumerate(output_lists):
            if len(outs) != len(inputs):
                raise ValueError(f"react_torch: allgather_coalesced: output list {r} has {len(outs)} tensors, there are {len(inputs)} inputs")
            for o, i in zip(outs, inputs):
                if o.numel() != i.numel() or o.dtype != i.dtype:
                    raise ValueError(f"react_torch: allgather_coalesced: output {tuple(o.shape)} {o.dtype} does not fit input {tuple(i.shape)} {i.dtype}")
        if len({i.dtype for i in inputs}) > 1:
            raise TypeError(f"react_torch: allgather_coalesced: inputs of several dtypes {sorted({str(i.dtype) for i in inputs})}")

        def fn():
            if not inputs:
                return
            m = sum(i.numel() for i in inputs)
            flat = torch.empty(m * self._size, dtype=inputs[0].dtype, device=inputs[0].device)
            self._allgather_flat(flat, torch.cat([i.reshape(-1) for i in inputs]))
            for r, outs in enumerate(output_lists):
                off = r * m
                for o in outs:
                    o.copy_(flat[off : off + o.numel()].view_as(o))
                    off += o.numel()

        return self._submit(fn, output_lists, dev, "allgather_coalesced", opts)

    def allgather_into_tensor_coalesced(self, outputs: List[torch.Tensor], inputs: List[torch.Tensor], opts=None):
        dev = self._admit("allgather", outputs, inputs)
        for o, i in zip(outputs, inputs):
            self._check_allgather(o, i)

        def fn():
            for o, i in zip(outputs, inputs):
                self._allgather_flat(o, i)

        return self._submit(fn, outputs, dev, "allgather", opts)

    def all_gather_single_coalesced(self, outputs: List[torch.Tensor], inputs: List[torch.Tensor], opts=None):
        return self.allgather_into_tensor_coalesced(outputs, inputs, opts)

    def _allgather_base(self, output: torch.Tensor, input: torch.Tensor, opts=None):
        return self.allgather_into_tensor_coalesced([output], [input], opts)

    def all_gather_single(self, output: torch.Tensor, input: torch.Tensor, opts=None):
        return self.allgather_into_tensor_coalesced([output], [input], opts)

    def _check_reduce_scatter(self, out: torch.Tensor, inp: torch.Tensor, name: str) -> None:
        m = out.numel()
        if inp.numel() != m * self._size:
            raise ValueError(f"react_torch: reduce_scatter input has {inp.numel()} elements, want {self._size} x {m} = {m * self._size}")
        if out.dtype != inp.dtype:
            raise TypeError(f"react_torch: reduce_scatter output dtype {out.dtype} differs from input {inp.dtype}")
        check_reduce(name, inp.dtype, "reduce_scatter")

    def _reduce_scatter_flat(self, out: torch.Tensor, inp: torch.Tensor, name: str) -> None:
        m = out.numel()
        work = inp.reshape(-1).clone()
        if self._size > 1:
            self._run("reducescatter", inp, m * self._size, work, name)
        res = work[self._rank * m : (self._rank + 1) * m]
        if name == AVG:
            res = res / self._size
        out.copy_(res.view_as(out))

    def reduce_scatter(self, output_tensors: List[torch.Tensor], input_tensors: List[List[torch.Tensor]], opts=None):
        dev = self._admit("reduce_scatter", output_tensors, input_tensors)
        name = _redop(opts, "reduce_scatter")
        for out, ins in zip(output_tensors, input_tensors):
            if len(ins) != self._size:
                raise ValueError(f"react_torch: reduce_scatter needs {self._size} input tensors, got {len(ins)}")
            for i in ins:
                if i.numel() != out.numel():
                    raise ValueError(f"react_torch: reduce_scatter input tensor has {i.numel()} elements, output has {out.numel()}")
                if i.dtype != out.dtype:
                    raise TypeError(f"react_torch: reduce_scatter output dtype {out.dtype} differs from input {i.dtype}")
            check_reduce(name, out.dtype, "reduce_scatter")

        def fn():
            for out, ins in zip(output_tensors, input_tensors):
                self._reduce_scatter_flat(out, torch.cat([i.reshape(-1) for i in ins]), name)

        return self._submit(fn, output_tensors, dev, "reduce_scatter", opts)

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        dev = self._admit("reduce_scatter", outputs, inputs)
        name = _redop(opts, "reduce_scatter")
        for o, i in zip(outputs, inputs):
            self._check_reduce_scatter(o, i, name)

        def fn():
            for o, i in zip(outputs, inputs):
                self._reduce_scatter_flat(o, i, name)

        return self._submit(fn, outputs, dev, "reduce_scatter", opts)

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        return self.reduce_scatter_tensor_coalesced(outputs, inputs, opts)

    def _reduce_scatter_base(self, output: torch.Tensor, input: torch.Tensor, opts=None):
        return self.reduce_scatter_tensor_coalesced([output], [input], opts)

    def reduce_scatter_single(self, output, input, opts=None):
        return self.reduce_scatter_tensor_coalesced([output], [input], opts)

    def barrier(self, opts=None):
        self._admit("barrier")
        t = torch.zeros(1)

        def fn():
            if self._size > 1:
                led = self._ledger
                if led is not None:
                    led.begin("barrier", "", 0)
                    # Gloo's allreduce: ask every rank, or in a large group the ring's neighbours
                    led.peers = range(self._size) if self._size <= 64 else ((self._rank - 1) % self._size, (self._rank + 1) % self._size)
                with led if led is not None else contextlib.nullcontext():
                    if self._check is not None:
                        self._check("barrier", "", 0)
                    self._gloo.allreduce([t]).wait()

        return self._submit(fn, [t], t.device, "barrier", opts)


def _redop(opts, what: str) -> str:
    """The executor's name of the reduce op opts carry (SUM without opts)."""
    return reduce_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM, what)
