"""plan-memory: place every `pygraph.alloc` in one static arena, reusing memory between buffers
whose lifetimes do not overlap.

Lifetimes are positions in program order: a buffer lives from the first node that touches it (or a
view of it) to the last, the function's return included. Placement is greedy best-fit over buffers
sorted by size, aligned to 256 bytes. Reuse adds write-after-read edges between nodes that share
bytes (`pygraph.ir.plan.dependencies` derives them), which is the price of the smaller arena.
"""

from __future__ import annotations

import dataclasses

from ..ir import attrs
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.buffers import users
from ..ir.layout import Layout
from ..ir.plan import ARENA_ALIGNMENT
from .base import Pass, main_function, walk


@dataclasses.dataclass
class PlanMemory(Pass):
    """Assigns `arena_offset` to every alloc and `pygraph.arena_bytes` to `@main`."""

    name = "plan-memory"
    summary = "place arena buffers by liveness, reusing memory between buffers that are never live together"
    reuse: bool = True

    def run(self, module: ir.Module) -> None:
        main = main_function(module)
        ops = walk(main)
        position = {op.operation: i for i, op in enumerate(ops)}
        end = len(ops)
        allocs = [op for op in ops if isinstance(op, d.AllocOp)]
        intervals = []
        for alloc in allocs:
            touched = [position[u.operation] for u in users(alloc.buf)]
            first, last = (min(touched), max(touched)) if touched else (end, end)
            layout = Layout.from_attr(alloc.layout)
            size = _align(layout.storage_elements() * layout.dtype.itemsize)
            intervals.append((first, last, size, alloc))
        placed: list[tuple[int, int, int, int]] = []  # first, last, offset, size
        total = 0
        for first, last, size, alloc in sorted(intervals, key=lambda t: (-t[2], t[0])):
            offset = self._place(first, last, size, placed) if self.reuse else total
            placed.append((first, last, offset, size))
            total = max(total, offset + size)
            with module.context:
                alloc.attributes["arena_offset"] = attrs.i64(offset)
        with module.context:
            main.attributes[d.ARENA_BYTES] = attrs.i64(total)

    @staticmethod
    def _place(first: int, last: int, size: int, placed: list[tuple[int, int, int, int]]) -> int:
        """Lowest offset whose bytes no buffer live at the same time uses (best fit among gaps)."""
        busy = sorted((off, off + n) for start, stop, off, n in placed if start <= last and first <= stop)
        best, cursor = None, 0
        for start, stop in busy:
            if start - cursor >= size and (best is None or start - cursor < best[1]):
                best = (cursor, start - cursor)
            cursor = max(cursor, stop)
        return best[0] if best is not None else cursor


def _align(n: int) -> int:
    return max(ARENA_ALIGNMENT, -(-n // ARENA_ALIGNMENT) * ARENA_ALIGNMENT)
