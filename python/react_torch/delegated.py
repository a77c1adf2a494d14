"""What a react group does not run as a pattern: point-to-point transfers,
all-to-all, gather, scatter and the monitored barrier go to the inner group
once the collectives called before them have run (logged once each); the
coalescing brackets and the sequence numbers torch asks a backend for.

A mixin of ReactBackend (backend.py), which provides _admit, _drain,
_submit, _inner, _gloo, _timeout and _size.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import torch
import torch.distributed as dist

from .work import Work

log = logging.getLogger("react_torch")


def done(value=None) -> Work:
    fut = torch.futures.Future()
    fut.set_result(value)
    return Work(fut)


class AnySource:
    """The value of a receive-from-any-source Work's future: the tensors and
    the rank they came from (see _torchfix: torch asks the Work for it)."""

    def __init__(self, tensors, rank: int):
        self.tensors, self.rank = tensors, rank


class Passed(Work):
    """A point-to-point Work of the inner group, passed on. Its own future
    completes when it is waited for: torch's holder of a Work a Python
    backend returns asks the future whether it completed (_torchfix), and
    Gloo's send and receive Works have none."""

    def __init__(self, inner, what: str):
        super().__init__(torch.futures.Future(), what)
        self._inner = inner

    def wait(self, timeout=None) -> bool:
        try:
            ok = self._inner.wait(timeout) if timeout is not None else self._inner.wait()
        except BaseException as e:
            if not self._fut.done():
                self._fut.set_exception(e)
            raise
        if not self._fut.done():
            self._fut.set_result(None)
        return ok

    def is_completed(self) -> bool:
        return self._inner.is_completed()

    def is_success(self) -> bool:
        return self._inner.is_success()


class Delegated:
    _seqnum = 0  # collectives called on the group, for torch's sequence numbers

    def _delegated(self, name: str, call, *tensors, layouts: bool = False):
        self._admit(name, *tensors, layouts=layouts)
        if name not in self._delegated_logged:
            self._delegated_logged.add(name)
            log.info("react_torch: %s is delegated to the inner group", name)
        self._drain()
        self._seqnum += 1
        return call()

    def send(self, tensors, dst: int, tag: int = 0):
        return self._delegated("send", lambda: Passed(self._inner(tensors[0]).send(tensors, dst, tag), f"send to rank {dst}"), tensors)

    def recv(self, tensors, src: int, tag: int = 0):
        return self._delegated("recv", lambda: Passed(self._inner(tensors[0]).recv(tensors, src, tag), f"receive from rank {src}"), tensors)

    def recv_anysource(self, tensors, tag: int = 0):
        """The inner receive, waited for here: torch reads the source rank
        from the Work it is handed, and a Work a Python backend returns
        reaches torch in a holder that does not pass that question on; the
        source travels in the future's value instead (_torchfix)."""
        def call():
            w = self._inner(tensors[0]).recv_anysource(tensors, tag)
            w.wait()
            return done(AnySource(tensors, w._source_rank()))

        return self._delegated("recv_anysource", call, tensors)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        return self._delegated("alltoall_base", lambda: self._inner(input).alltoall_base(output, input, output_split_sizes, input_split_sizes, opts or dist.AllToAllOptions()), output, input)

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        return self.alltoall_base(output, input, output_split_sizes, input_split_sizes, opts)

    def alltoall(self, outputs, inputs, opts=None):
        return self._delegated("alltoall", lambda: self._inner(inputs[0]).alltoall(outputs, inputs, opts or dist.AllToAllOptions()), outputs, inputs)

    def gather(self, outputs, inputs, opts=None):
        return self._delegated("gather", lambda: self._inner(inputs[0]).gather(outputs, inputs, opts or dist.GatherOptions()), outputs, inputs)

    def scatter(self, outputs, inputs, opts=None):
        return self._delegated("scatter", lambda: self._inner(outputs[0]).scatter(outputs, inputs, opts or dist.ScatterOptions()), outputs, inputs)

    def monitored_barrier(self, opts=None, wait_all_ranks: bool = False):
        """Gloo's monitored barrier on the inner group, once every collective
        called before it has run: it names the ranks that did not arrive. A
        timeout of 0 is Gloo's too: rank 0 times out at once."""
        self._admit("monitored_barrier")
        self._drain()
        timeout = opts.timeout if opts is not None and opts.timeout >= timedelta(0) else self._timeout
        if self._size > 1:
            self._gloo.monitored_barrier(timeout, wait_all_ranks)
        return done()

    # torch's coalescing manager brackets a batch with these: the ops
    # between them run in call order anyway, so the batch's Work is the
    # completion of everything called up to its end.
    def start_coalescing(self) -> None:
        pass

    def end_coalescing(self):
        self._admit("coalesced batch")
        return self._submit(lambda: None, None, torch.device("cpu"), "coalesced batch")

    # torch numbers a group's collectives (all_gather_object on a subgroup
    # asks); the count is the same on every rank when they call the same.
    def _set_sequence_number_for_group(self) -> None:
        self._seqnum = 0

    def _get_sequence_number_for_group(self) -> int:
        return self._seqnum
