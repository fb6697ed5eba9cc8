"""plan-memory: place every `pygraph.alloc` in one static arena, reusing memory between buffers
whose lifetimes do not overlap.

Lifetimes are positions in program order: a buffer lives from the first node that touches it (or a
view of it, a host op's view among them: `x[i.item()]`) to the last, the function's return included.
Placement is greedy best-fit, aligned to 256 bytes, over the buffers in a few orders (largest first, by
first use, by bytes times lifetime), keeping the smallest arena.

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

Outputs as scratch (`outputs=true`, the default): a call's outputs are fresh tensors allocated before the
graph runs, and nothing reads their bytes until the node that first writes them. A buffer that dies
before that node (or that this node reads and overwrites in place, by the rule above) may live there
instead of in the arena, as a view of the output: what reduce-overhead's pool gets by handing an output
the memory of intermediates that died (MatmulChain: four 64 MB products in the arena's 64 MB and the
output's, not 128 MB beside the output). A buffer goes there only where the arena would otherwise grow to
hold it. Such a view moves with the output each call: in an output the table reaches, only generated
kernels may touch it (they load the address from the slot); in a patched output, generated kernels and
vendor calls may, each one more node patched per call. That host time must fit in a tenth of the GPU time
the host does not wait for (`estimates.gpu_slack_us`, less the patches the plan has already), so a
host-bound model, or one whose every layer would need patching, keeps its arena: memory is taken only
where it costs next to no time.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import attrs, costs
from ..ir import dialect as d
from ..ir._mlir import func, ir
from ..ir.buffers import buffer_layout, buffer_root, patched, touching, views, written_operand
from ..ir.layout import Layout
from ..ir.plan import ARENA_ALIGNMENT
from . import estimates
from .base import Pass, main_function, walk
from .gathers import gathered_arguments

# Patching for buffers in outputs may take this share of the host time the GPU does not wait for: where a
# caller holds each result while the next call runs, the output's address alternates and every such node
# is updated each call. Measured on the H200 with no limit (`probe-scratch-outputs-s21a-h200.log`, the
# benchmark's per-output figures in `bench-s21a.log`): GPT-2's 110 patched nodes saved 0.47 MB, and
# patching its output cost 82 us of host time per call (0.7 us with its 2 nodes before); BERT's 51 saved
# 0.37 MB for 35 us; MatmulChain's saved 64 MB patching nothing (its products run outside graphs).
SCRATCH_SHARE_OF_SLACK = 0.1


@dataclasses.dataclass
class PlanMemory(Pass):
    """Assigns `arena_offset` to every alloc and `pygraph.arena_bytes` to `@main`."""

    name = "plan-memory"
    summary = "place arena buffers by liveness, reusing memory between buffers that are never live together"
    reuse: bool = True  # share bytes between buffers that are never live together
    in_place: bool = True  # a kernel's output may take the bytes of an input that dies at that kernel
    parallel: bool = False  # share bytes only where the nodes involved are ordered already
    outputs: bool = True  # buffers dead before an output is written may live in its bytes
    costs: str = "default"  # the cost cache key (device and versions): patches must fit in the GPU's slack

    def run(self, module: ir.Module) -> None:
        main = main_function(module)
        ops = walk(main)
        position = {op.operation: i for i, op in enumerate(ops)}
        order = _Order(ops)
        buffers: dict[ir.Value, _Buffer] = {}
        for op in ops:
            if isinstance(op, d.AllocOp):
                touched = {position[u.operation] for u in touching(op.buf)} or {len(ops)}
                layout = Layout.from_attr(op.layout)
                nbytes = layout.storage_elements() * layout.dtype.itemsize
                buffers[op.buf] = _Buffer([op], layout, _align(nbytes), touched, nbytes)
        templates = _template_kernels(module)
        gathered = _gathered_arguments(module)
        if self.reuse and self.in_place:
            for op in ops:
                callee = ir.FlatSymbolRefAttr(op.kernel).value if isinstance(op, d.KernelOp) else None
                if callee is not None and callee not in templates:
                    self._write_in_place(
                        op, position[op.operation], buffers, order, gathered.get(callee, set())
                    )
        distinct = list(dict.fromkeys(buffers.values()))
        hosts = _Hosts(main, ops, position, templates, gathered) if self.reuse and self.outputs else None
        placements = [self._place(sorted(distinct, key=key), order, None) for key in _ORDERS]
        if hosts is not None and hosts.outputs:
            model = costs.load(self.costs)
            slack = estimates.gpu_slack_us(ops, model) - hosts.patched_sites() * model.set_params_us
            budget = SCRATCH_SHARE_OF_SLACK * max(0.0, slack)
            for key in _ORDERS:
                placement = self._place(sorted(distinct, key=key), order, hosts)
                extra = hosts.extra_sites(placement.scratch)
                if extra == 0 or extra * model.set_params_us <= budget:
                    placements.append(placement)
        placed = min(placements, key=lambda p: (p.arena_bytes, len(p.scratch)))
        with module.context:
            for buf, offset in placed.arena:
                for alloc in buf.allocs:
                    alloc.attributes["arena_offset"] = attrs.i64(offset)
            for buf, output, offset in placed.scratch:
                hosts.move_into(buf, output, offset)
            main.attributes[d.ARENA_BYTES] = attrs.i64(placed.arena_bytes)

    def _place(self, bufs: list[_Buffer], order: _Order, hosts: _Hosts | None) -> _Placement:
        """Each buffer, in turn, into the tightest gap between the placed ones it cannot share bytes with;
        with `hosts`, into an output's bytes instead where the arena would grow to hold it."""
        placement = _Placement([], [])
        top = 0
        for buf in bufs:
            busy = sorted(
                (off, off + other.size)
                for other, off in placement.arena
                if not self._can_share(buf, other, order)
            )
            offset = _lowest_gap(busy, buf.size)
            if hosts is not None and offset + buf.size > top:
                spot = self._in_output(buf, hosts, placement, order)
                if spot is not None:
                    placement.scratch.append((buf, *spot))
                    continue
            placement.arena.append((buf, offset))
            top = max(top, offset + buf.size)
        return placement

    def _in_output(
        self, buf: _Buffer, hosts: _Hosts, placement: _Placement, order: _Order
    ) -> tuple[_Output, int] | None:
        """The first output, and the offset in it, where `buf` may live (`_Hosts.admits`) beside the
        buffers placed there already, or None."""
        for output in hosts.outputs:
            in_place = hosts.admits(buf, output, order if self.parallel else None)
            if in_place is None:
                continue
            busy = sorted(
                (off, off + other.size)
                for other, host, off in placement.scratch
                if host is output and not self._can_share(buf, other, order)
            )
            if in_place and any(start < buf.size for start, _ in busy):
                continue  # (in place means on the output's own first bytes, which must be free)
            offset = 0 if in_place else _lowest_gap(busy, buf.size)
            if offset + buf.nbytes <= output.nbytes:
                return output, offset
        return None

    def _write_in_place(
        self, kernel: Any, at: int, buffers: dict[ir.Value, _Buffer], order: _Order, gathered: set[int]
    ) -> None:
        """Gives each output of `kernel` written first here the bytes of an input that dies here with
        the same layout (merging their buffers), unless a gather reads that input (by position: `gathered`)."""
        args = list(kernel.args)
        taken: list[_Buffer] = []  # inputs given to an output already (two outputs never share bytes)
        for j, out in enumerate(args):
            target = buffers.get(out)
            if target is None or target.first != at:
                continue
            for k, arg in enumerate(args):
                source = buffers.get(arg)
                if (
                    source is not None
                    and source is not target
                    and source not in taken
                    and source.last == at
                    and _reads_in_place(kernel, k, j, gathered)
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
    size: int  # bytes it takes, aligned
    touched: set[int]  # positions of the ops that touch them
    nbytes: int  # bytes its storage spans
    first: int = dataclasses.field(init=False)  # (kept, not computed: placing asks a million times)
    last: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.first, self.last = min(self.touched), max(self.touched)

    def absorb(self, other: _Buffer) -> None:
        self.allocs += other.allocs
        self.touched |= other.touched
        self.first, self.last = min(self.first, other.first), max(self.last, other.last)
        self.size = max(self.size, other.size)
        self.nbytes = max(self.nbytes, other.nbytes)


@dataclasses.dataclass
class _Placement:
    arena: list[tuple[_Buffer, int]]  # buffer, byte offset in the arena
    scratch: list[tuple[_Buffer, _Output, int]]  # buffer, the output whose bytes it uses, byte offset there

    @property
    def arena_bytes(self) -> int:
        return max((off + b.size for b, off in self.arena), default=0)


@dataclasses.dataclass(eq=False)
class _Output:
    """A `pygraph.output` whose bytes buffers may use before `first`, the position that first touches it."""

    op: Any
    layout: Layout
    nbytes: int
    first: int
    patched: bool  # the runtime patches its address into nodes (else kernels read it through the table)


class _Hosts:
    """The outputs whose bytes serve as scratch, and which buffers may live there."""

    def __init__(
        self,
        main: Any,
        ops: list[Any],
        position: dict[Any, int],
        templates: set[str],
        gathered: dict[str, set[int]],
    ) -> None:
        self.ops, self.templates, self.gathered = ops, templates, gathered
        self.fused = set(gathered)  # the fused functions codegen-triton turns into kernels
        self.block = main.regions[0].blocks[0]
        self.outputs: list[_Output] = []
        for op in self.block.operations:
            if isinstance(op, d.OutputOp):
                touched = [position[u.operation] for u in touching(op.buf)]
                layout = Layout.from_attr(op.layout)
                nbytes = layout.storage_elements() * layout.dtype.itemsize
                if touched and not layout.is_dynamic:
                    self.outputs.append(_Output(op, layout, nbytes, min(touched), patched(op.buf)))

    def admits(self, buf: _Buffer, output: _Output, order: _Order | None) -> bool | None:
        """None where `buf` may not live in `output`'s bytes; True where only in place (the node that first
        writes the output reads `buf` last, element for element: `buf` must take the output's own bytes);
        False where anywhere that fits. `order` (parallel planning): the output's first writer must be
        ordered after every node touching `buf` already."""
        if buf.layout.dtype != output.layout.dtype or buf.layout.is_dynamic:
            return None
        if not all(self._may_touch(self.ops[at], output) for at in buf.touched if at < len(self.ops)):
            return None
        if buf.last >= len(self.ops) or buf.last > output.first:
            return None
        if order is not None and not all(order.before(at, output.first) for at in buf.touched):
            return None
        if buf.last < output.first:
            return False
        return True if self._overwrites(buf, output) else None

    def _may_touch(self, op: Any, output: _Output) -> bool:
        """Whether a node may touch a buffer in `output`'s bytes: in a patched output, a generated kernel or a
        vendor call (both patched); in one the table reaches, a kernel that codegen-triton has yet to write
        (whose signature will load the address from the slot; kernels written earlier take plain pointers)."""
        if output.patched:
            return isinstance(op, (d.KernelOp, d.LibraryOp))
        return isinstance(op, d.KernelOp) and ir.FlatSymbolRefAttr(op.kernel).value in self.fused

    def _overwrites(self, buf: _Buffer, output: _Output) -> bool:
        """Whether the node that first touches `output` is a generated kernel (no template) writing the
        output over `buf` as it may write an arena buffer over another (`_reads_in_place`)."""
        kernel = self.ops[output.first]
        if not isinstance(kernel, d.KernelOp):
            return False
        callee = ir.FlatSymbolRefAttr(kernel.kernel).value
        args = list(kernel.args)
        sources = [k for k, a in enumerate(args) if any(a == alloc.buf for alloc in buf.allocs)]
        targets = [k for k, a in enumerate(args) if a == output.op.buf]
        return (
            callee not in self.templates
            and len(sources) == len(targets) == 1
            and _reads_in_place(kernel, sources[0], targets[0], self.gathered.get(callee, set()))
        )

    def patched_sites(self) -> int:
        """Nodes that the runtime patches each call already: those touching patched inputs and outputs."""
        return sum(
            isinstance(op, (d.KernelOp, d.LibraryOp)) and any(patched(v) for v in op.operands)
            for op in self.ops
        )

    def extra_sites(self, scratch: list[tuple[_Buffer, _Output, int]]) -> int:
        """Nodes that buffers in patched outputs add to the patched ones."""
        added = set()
        for buf, output, _ in scratch:
            if output.patched:
                added |= {
                    at for at in buf.touched if output.op.buf not in map(buffer_root, self.ops[at].operands)
                }
        return len(added)

    def move_into(self, buf: _Buffer, output: _Output, offset: int) -> None:
        """Replaces `buf`'s allocs by views of `output` starting `offset` bytes into its storage; the views
        already taken of them move by as much (a layout's offset counts from its storage's start)."""
        output.op.operation.move_before(self.block.operations[0].operation)  # (no operands) before every use
        for alloc in buf.allocs:
            shift = offset // Layout.from_attr(alloc.layout).dtype.itemsize
            for op in [alloc, *views(alloc.buf)]:
                layout = Layout.from_attr(op.layout)
                op.attributes["layout"] = dataclasses.replace(layout, offset=layout.offset + shift).to_attr()
            with ir.InsertionPoint(alloc), alloc.location:
                view = d.create(d.ViewOp, [output.op.buf], {"layout": alloc.layout}, 1).buf
            alloc.buf.replace_all_uses_with(view)
            alloc.operation.erase()


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


def _reads_in_place(kernel: Any, source: int, target: int, gathered: set[int]) -> bool:
    """Whether generated `kernel` (no template: callers check) may write its argument `target` over the
    bytes of its argument `source`: it reads `source` only there and writes `target` only there (no other
    argument reaches either's storage), in the same layout, and no gather reads `source` at its indices
    (by position: `gathered`), so each element is read before it is written, by the same program."""
    args, modes = list(kernel.args), [ir.StringAttr(m).value for m in kernel.access]
    roots = [buffer_root(a) for a in args]
    return (
        modes[source] == "r"
        and modes[target] == "w"
        and source not in gathered
        and roots.count(roots[source]) == roots.count(roots[target]) == 1
        and buffer_layout(args[source]) == buffer_layout(args[target])
    )


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
