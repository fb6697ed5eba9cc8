"""Executors of plans: the CPU emulator and the CUDA-graph runtime."""

from __future__ import annotations

from typing import Any


class UnrecordableCall(RuntimeError):
    """A library call of a graph segment could not be recorded into a CUDA graph (it synchronises with
    the host, reads a value back, copies from pageable memory). Raised by the first call once its results
    are computed, node by node, which `results` holds: the caller re-plans with that op between graphs
    (`CompiledModel._keep_outside_graphs`) and returns them."""

    def __init__(self, location: str, op: str, cause: BaseException) -> None:
        first_line = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        super().__init__(
            f"{location}: recording {op} failed: {first_line}\n(a call that synchronises with the host, reads "
            "a value back or copies from pageable CPU memory cannot be part of a CUDA graph; "
            "PYGRAPH_GRAPHS=none runs every segment without graphs)"
        )
        self.location, self.op, self.cause = location, op, first_line
        self.results: list[Any] | None = None
