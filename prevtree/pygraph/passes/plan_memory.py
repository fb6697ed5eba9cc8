"""plan-memory: place every `pygraph.alloc` in one static arena, reusing memory between buffers
whose lifetimes do not overlap.

Lifetimes are positions in program order: a buffer lives from the first node that touches it (or a
view of it) to the last, the function's return included. Placement is greedy best-fit, aligned to 256
bytes, over the buffers in a few orders (largest first, by first use, by bytes times lifetime), keeping
the smallest arena.

In place: a kernel's output takes the bytes of an input that dies at that kernel when both are arena
buffers with the same layout and no other argument of the kernel reaches that input's storage. Every
generated kernel reads an element before it writes the element at the same address (a 1-D kernel per
block, a reduction kernel per row), so no write clobbers a value still to be read; chains of kernels
then run in one buffer, as a residual stream does. Kernels of a template (`d.KERNEL_TEMPLATES`: an
attention's programs read all keys and values of their head, a matvec's the whole row) are the exception
and write no input's bytes, and no output takes the bytes of the source a gather reads at its indices.

Reuse against parallelism: bytes that two buffers share make `pygraph.ir.plan.dependencies` add
write-after-read edges from the nodes touching the first buffer to the writer of the second. By default
that is the price of the smaller arena. With `parallel=true`, bytes are shared (reused or in place) only
where those nodes are already ordered before the writer by data dependencies, segment order or the
program order of library nodes (which the graph keeps anyway), so independent branches (the Q, K and V
projections, the branches of an inception or squeeze-excitation block) still overlap on the GPU, at
the cost of a larger arena. `reuse=false` shares nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import attrs
from ..ir import dialect as d
from ..ir._mlir import func, ir
from ..ir.buffers import buffer_root, users, written_operand
from ..ir.layout import Layout
from ..ir.plan import ARENA_ALIGNMENT
from .base import Pass, main_function, walk
from .gathers import gathered_arguments


@dataclasses.dataclass
class PlanMemory(Pass):
    """Assigns `arena_offset` to every alloc and `pygraph.arena_bytes` to `@main`."""

    name = "plan-memory"
    summary = "place arena buffers by liveness, reusing memory between buffers that are never live together"
    reuse: bool = True  # share bytes between buffers that are never live together
    in_place: bool = True  # a kernel's output may take the bytes of an input that dies at that kernel
    parallel: bool = False  # share bytes only where the nodes involved are ordered already

    def run(self, module: ir.Module) -> None:
        main = main_function(module)
        ops = walk(main)
        position = {op.operation: i for i, op in enumerate(ops)}
        order = _Order(ops)
        buffers: dict[ir.Value, _Buffer] = {}
        for op in ops:
            if isinstance(op, d.AllocOp):
                touched = {position[u.operation] for u in users(op.buf)} or {len(ops)}
                layout = Layout.from_attr(op.layout)
                size = _align(layout.storage_elements() * layout.dtype.itemsize)
                buffers[op.buf] = _Buffer([op], layout, size, touched)
        if self.reuse and self.in_place:
            templates = _template_kernels(module)
            gathered = _gathered_arguments(module)
            for op in ops:
                callee = ir.FlatSymbolRefAttr(op.kernel).value if isinstance(op, d.KernelOp) else None
                if callee is not None and callee not in templates:
                    self._write_in_place(
                        op, position[op.operation], buffers, order, gathered.get(callee, set())
                    )
        distinct = list(dict.fromkeys(buffers.values()))
        placements = [self._place(sorted(distinct, key=key), order) for key in _ORDERS]
        placed = min(placements, key=lambda p: max((off + b.size for b, off in p), default=0))
        with module.context:
            for buf, offset in placed:
                for alloc in buf.allocs:
                    alloc.attributes["arena_offset"] = attrs.i64(offset)
            main.attributes[d.ARENA_BYTES] = attrs.i64(max((off + b.size for b, off in placed), default=0))

    def _place(self, bufs: list[_Buffer], order: _Order) -> list[tuple[_Buffer, int]]:
        """Each buffer, in turn, into the tightest gap between the placed ones it cannot share bytes with."""
        placed: list[tuple[_Buffer, int]] = []
        for buf in bufs:
            busy = sorted(
                (off, off + other.size) for other, off in placed if not self._can_share(buf, other, order)
            )
            placed.append((buf, _lowest_gap(busy, buf.size)))
        return placed

    def _write_in_place(
        self, kernel: Any, at: int, buffers: dict[ir.Value, _Buffer], order: _Order, gathered: set[int]
    ) -> None:
        """Gives each output of `kernel` written first here the bytes of an input that dies here with
        the same layout (merging their buffers), unless a gather reads that input (by position: `gathered`)."""
        args, modes = list(kernel.args), [ir.StringAttr(a).value for a in kernel.access]
        roots = [buffer_root(a) for a in args]
        taken: list[_Buffer] = []  # inputs given to an output already (two outputs never share bytes)
        for out, mode in zip(args, modes, strict=True):
            target = buffers.get(out)
            if mode != "w" or target is None or target.first != at:
                continue
            for k, (arg, arg_mode) in enumerate(zip(args, modes, strict=True)):
                source = buffers.get(arg)
                if (
                    arg_mode == "r"
                    and k not in gathered
                    and source is not None
                    and source is not target
                    and source not in taken
                    and source.last == at
                    and source.layout == target.layout
                    and roots.count(arg) == 1
                    and (not self.parallel or all(order.before(u, at) for u in source.touched))
                ):
                    source.absorb(target)
                    for alloc in target.allocs:
                        buffers[alloc.buf] = source
                    taken.append(source)
                    break

    def _can_share(self, a: _Buffer, b: _Buffer, order: _Order) -> bool:
        if not self.reuse or not (a.last < b.first or b.last < a.first):
            return False
        earlier, later = (a, b) if a.last < b.first else (b, a)
        return not self.parallel or all(order.before(u, later.first) for u in earlier.touched)


@dataclasses.dataclass(eq=False)
class _Buffer:
    """Allocs that share one place in the arena (several when written in place), and where they live."""

    allocs: list[Any]
    layout: Layout
    size: int
    touched: set[int]  # positions of the ops that touch them

    @property
    def first(self) -> int:
        return min(self.touched)

    @property
    def last(self) -> int:
        return max(self.touched)

    def absorb(self, other: _Buffer) -> None:
        self.allocs += other.allocs
        self.touched |= other.touched
        self.size = max(self.size, other.size)


class _Order:
    """Which nodes must finish before which, whatever the arena: data dependencies between nodes (per
    storage, as the IR states them), program order among library nodes, and the order of segments and
    host steps, which run one after another."""

    def __init__(self, ops: list[Any]) -> None:
        self.reach: dict[int, int] = {}  # node position -> bitset of the positions it waits for
        writer: dict[ir.Value, int] = {}
        readers: dict[ir.Value, list[int]] = {}
        done = barrier = 0  # all nodes so far; the nodes before the current segment or host step
        last_library = None
        for at, op in enumerate(ops):
            if isinstance(op, (d.SegmentOp, d.HostOp)):
                barrier = done
            accesses = _accesses(op)
            if accesses is None:
                continue
            waits = [writer[root] for root, _ in accesses if root in writer]
            waits += [r for root, mode in accesses if "w" in mode for r in readers.get(root, [])]
            if isinstance(op, d.LibraryOp) and last_library is not None:
                waits.append(last_library)
            bits = barrier
            for w in waits:
                bits |= self.reach[w] | (1 << w)
            self.reach[at] = bits
            for root, mode in accesses:
                if "w" in mode:
                    writer[root], readers[root] = at, []
                if "r" in mode:
                    readers.setdefault(root, []).append(at)
            last_library = at if isinstance(op, d.LibraryOp) else last_library
            done |= 1 << at
            if isinstance(op, d.HostOp):
                barrier = done

    def before(self, a: int, b: int) -> bool:
        """Whether node `a` is `b` or finishes before `b` starts (positions that are no node, such as the
        return, come after everything)."""
        return a == b or bool((self.reach.get(b, 0) >> a) & 1)


def _accesses(op: Any) -> list[tuple[ir.Value, str]] | None:
    """(storage, "r" | "w" | "rw") for each buffer a node touches; None for ops that are no node."""
    if isinstance(op, d.KernelOp):
        return [(buffer_root(a), ir.StringAttr(m).value) for a, m in zip(op.args, op.access, strict=True)]
    if isinstance(op, (d.LibraryOp, d.HostOp)):
        written = written_operand(op)  # an in-place or out form writes an operand
        accesses = [
            (buffer_root(v), "rw" if written is not None and v == written else "r") for v in op.inputs
        ]
        return accesses + [(v, "w") for v in op.results_]
    if isinstance(op, d.CopyOp):
        return [(buffer_root(op.source), "r"), (buffer_root(op.target), "w")]
    if isinstance(op, d.FillOp):
        return [(buffer_root(op.target), "w")]
    return None


# Orders to place buffers in; the smallest arena wins (the first on ties). Largest first usually packs
# best, but where a large buffer lives across smaller ones of other phases it can leave gaps that placing
# by first use, or by bytes times lifetime, avoids (BERT's plan on the H200: 2.62 MB largest first, where
# 2.25 MB are live at once).
_ORDERS = (
    lambda b: (-b.size, b.first),
    lambda b: (b.first, -b.size),
    lambda b: (-b.size * (b.last - b.first + 1), b.first),
)


def _lowest_gap(busy: list[tuple[int, int]], size: int) -> int:
    """The offset of the tightest gap between busy byte ranges that holds `size` bytes (best fit), or the
    end of the last one."""
    best, cursor = None, 0
    for start, stop in busy:
        if start - cursor >= size and (best is None or start - cursor < best[1]):
            best = (cursor, start - cursor)
        cursor = max(cursor, stop)
    return best[0] if best is not None else cursor


def _align(n: int) -> int:
    return max(ARENA_ALIGNMENT, -(-n // ARENA_ALIGNMENT) * ARENA_ALIGNMENT)


def _gathered_arguments(module: ir.Module) -> dict[str, set[int]]:
    """Per fused function, the arguments its gathers read at their indices (`gathers.gathered_arguments`)."""
    return {
        fn.sym_name.value: gathered_arguments(fn.regions[0].blocks[0].operations)
        for fn in module.body.operations
        if isinstance(fn, func.FuncOp) and d.FUSED in fn.attributes
    }


def _template_kernels(module: ir.Module) -> set[str]:
    """The fused functions computing an op of a kernel template (`d.KERNEL_TEMPLATES`)."""
    return {
        fn.sym_name.value
        for fn in module.body.operations
        if isinstance(fn, func.FuncOp)
        and any(
            d.CLASS in op.attributes and ir.StringAttr(op.attributes[d.CLASS]).value in d.KERNEL_TEMPLATES
            for op in fn.regions[0].blocks[0]
        )
    }
