"""fuse-pointwise: group the pointwise ops of `@main`, with the reductions they feed and consume, and outline
each group into a function, one kernel each.

A group becomes `func.func private @fused_N(inputs) -> outputs attributes {pygraph.fused}` holding the
group's torch ops (and copies of the constants they read), called from `@main` by a `func.call` with
`pygraph.class = "kernel"` and the outputs' eager layouts in `pygraph.layouts`. Every pointwise op the
kernel generator can emit ends in exactly one group (a lone op is a group of one); those it cannot emit
(a device other than the model's, dropout in training) become `library` ops.

Grouping is greedy in program order. The ops of a group share one iteration space, the kernel's: a shape
(inputs may broadcast) and, once a reduction joins, the dims it reduces. Pointwise ops of the group
compute either that shape or the reduced one (the reduced dims kept as 1: one value per row of the
kernel); reductions (`reductions.REDUCTIONS`) read that shape, so layer norm after a residual and bias
add, or softmax after a scale, is one kernel. A value of another shape (a reduction without keepdim)
leaves the group. Reductions the generator cannot compute (integer results, dims known only at run
time) or should not (rows longer than `max-row`) become `library` ops. An op joins the groups that
produce its operands or read the same inputs, merging them. A group's outputs are its values used outside it
(a value that only export's metadata checks, class `nop`, read there is none: the checks go), and its call must define them before
their first outside use: once an op outside the group (other than a no-op) uses one of its values, the
group is *sealed*, its call goes no later than just before that op, and a later op joins it only if all
of the op's inputs exist there (it moves up into the call). No other op moves, so groups form no cycles.
A gather (class `gather`: embedding, index_select, gather, `index` by one tensor; `gathers.py`) joins like
a pointwise op computing its result's shape, except that what it reads at other elements than the lane's
(its source, and an index spanning only some of its result's dims) is never computed in its group: every
join and merge below keeps a gather apart from the ops computing those (`_can_share`), which seals their
group before the gather, so they are in memory when its kernel reads them. A token embedding, the add of
the position embedding and the layer norm after them are one kernel.
A concatenation (`cat`, class `concat`) joins like a pointwise op computing its result's shape; its
pieces are kernel inputs, each loaded in its own range (codegen-triton), so the concatenated tensor is
never written (DenseNet's growing feature lists are read by the batch norm kernel after each `cat`).
Groups holding one take no reduction, and a reduction's group takes none. A small pointwise group whose
values only a `cat`'s pieces read joins the cat's group (after the broadcast merge below): the kernel
computes those pieces within their ranges (rotary embedding's `cat([-x2, x1])` is one kernel).
Last, a small pointwise group whose values only one other group reads, at a larger shape they broadcast
to (a squeeze-excitation gate in `x * gate`), joins that group: its ops are recomputed per element. Its
values may reach that group's pointwise ops (or a `gather`'s index, which has the result's shape: DeBERTa's
clamped relative positions) through views that only broadcast them (an attention mask's
`(a & b).expand(B, H, S, S)` read by `where`): the views join the group too, but its function has none,
its ops reading the viewed values themselves (a kernel computing them per element broadcasts them).
No-ops checking the recomputed values (export's metadata asserts after `.to(dtype)`) are dropped with them.
An op of a kernel template (`d.KERNEL_TEMPLATES`: an attention routed to the generated kernel, a product
of one row) is a group of its own that no op joins: its kernel (`attention_kernel.py`, `matvec_kernel.py`)
computes that op alone, with three exceptions for products of one row. Those that multiply the same row
are one group (the q, k and v projections of a decoding step: one launch, each product in programs of its
own). Such a group joins the one pointwise group that alone reads its products, if they share a shape and
that group computes it (a gated MLP's `silu(g) * u`: each program computes the same outputs of the gate
and the up projection and applies the ops to them, so neither product is stored). Half-precision products
of a few rows (class `matvec` too: a decoding step of several sequences) group the same way. Last, a
group of one row takes the group computing its row when that group's reductions (if any) reduce the row and whatever else reads its
values comes after the products (the kernel stores those values too): the matrix-vector kernel computes
the row first, whole in every program (an MLP's GELU and layer norm before the next linear, a decoder's
residual add and RMS norm before q, k and v).
A product of class `matmul` joins, last, the one group that reads its result (directly or through reshapes
that nothing else reads, which join with it) if that group is pointwise (no reduction, no concatenation)
and computes the result's shape: the generated matmul computes it and applies the group's ops as its
epilogue (`matmul_kernel.py`). A product that no such group reads stays a vendor call (class `library`):
alone, or before a reduction, the kernel would save no launch; but for few rows whose width cuBLAS writes
slowly (unaligned rows, `matmul_kernel.computes_alone`) it is a kernel of its own.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterator
from typing import Any

from ..ir import aten, attrs
from ..ir import dialect as d
from ..ir._mlir import func, ir
from ..ir.torch_types import contiguous_layout, is_tensor, tensor_info
from . import gathers, pointwise, reductions
from .base import Pass, PassError, main_function
from .matmul_kernel import computes_alone
from .matvec_kernel import MAX_PROLOGUE_K, read_matvec
from .products import read_product

# Ops that make the scalars (and scalar tensors) a fused body reads; cloned into it.
_CONSTANTS = ("torch.constant.", "torch.prim.ListConstruct", "torch.prim.NumToTensor.Scalar")
# Users that do not need a value materialized at their position (they move after the call instead).
_TRANSPARENT = ("torch.bind_symbolic_shape",)
# Views that may only broadcast their source (`_broadcast_view`), which a kernel computing it per element does.
_BROADCAST_VIEWS = aten.RESHAPES | {"aten.expand.default", "aten.unsqueeze.default"}
# The classes fused into kernels, and the tables that say how a kernel computes each op.
_TABLES: dict[str, Any] = {
    "pointwise": pointwise.POINTWISE,
    "reduction": reductions.REDUCTIONS,
    "concat": {pointwise.CONCAT},
    "gather": gathers.GATHERS,
}


@dataclasses.dataclass(eq=False)
class _Group:
    members: list[int]  # indices in @main's block, ascending
    shape: tuple[int, ...]
    order: int  # creation order, to break ties deterministically
    seal: int | None = None  # index of the first op outside the group using one of its values
    no_ops: dict[int, Any] = dataclasses.field(default_factory=dict)  # no-op users by index
    reduced: tuple[int, ...] | None = None  # the dims its reductions reduce, once one has joined
    concatenates: bool = False  # holds a `cat` (whose pieces only a pointwise kernel loads)
    alone: bool = False  # an op of a kernel template: no other op joins
    product: bool = False  # holds a `matmul` product, which its kernel computes before the other ops
    # Members its function leaves out: views broadcasting recomputed values (their readers read the values)
    # and no-ops checking them (lower-to-plan drops no-ops).
    left_out: set[int] = dataclasses.field(default_factory=set)

    @property
    def row_shape(self) -> tuple[int, ...] | None:
        """The shape of per-row values: `shape` with the reduced dims kept as 1."""
        if self.reduced is None:
            return None
        return tuple(1 if d in self.reduced else n for d, n in enumerate(self.shape))

    def accepts(self, shape: tuple[int, ...], reduced: tuple[int, ...] | None, concat: bool = False) -> bool:
        """Whether an op of this space fits: a reduction (`reduced` given) of the group's shape over its
        dims, a pointwise op computing the group's shape or one value per row, or a concatenation
        computing the shape of a group without reductions (and then no reduction joins)."""
        if self.alone:
            return False
        if reduced is not None:
            return shape == self.shape and self.reduced in (None, reduced) and not self.concatenates
        if concat:
            return shape == self.shape and self.reduced is None
        return shape in (self.shape, self.row_shape)

    @property
    def position(self) -> float:
        """The latest place for the call: before the sealing op (members that come later move up to it)."""
        return self.members[-1] if self.seal is None else self.seal - 0.5

    @property
    def anchor(self) -> tuple[int, int]:
        """Where the call goes: (index of the op it precedes, 0 if that is the sealing op, 1 if the last
        member, which it replaces), so calls before the same op come in dependence order."""
        last = self.members[-1]
        return (self.seal, 0) if self.seal is not None and self.seal < last else (last, 1)


@dataclasses.dataclass
class FusePointwise(Pass):
    """Groups pointwise ops and outlines each group into a `@fused_N` function (see module docstring)."""

    name = "fuse-pointwise"
    summary = "group pointwise ops and outline each group into a private @fused_N function"
    max_ops: int = 256  # most torch ops in one group (bounds compile time, not speed)
    # Longest row a reduction kernel reduces; a longer one is left to ATen, whose reductions split rows
    # across thread blocks: on an H200 a generated softmax over 32 rows of 50257 takes 47 us, ATen's
    # 22 us, while the mean over 16 rows of 12544 (squeeze-excitation) takes 5.2 us against 8.9.
    max_row: int = 16384
    # Most ops of a group recomputed per element of the one group that reads its values at a larger
    # shape (a squeeze-excitation gate read by `x * gate`), instead of being a kernel of their own.
    max_recompute: int = 8

    def run(self, module: ir.Module) -> None:
        main = main_function(module)
        with module.context:
            ops = list(main.regions[0].blocks[0].operations)
            grouping = _Grouping(ops, self.max_ops, self.max_row, self.max_recompute, _model_device(main))
            groups = grouping.run()
            constants = {
                grouping.made_by[c.results[0]]
                for g in groups
                for i in g.members
                for v in ops[i].operands
                for c in _constant_ops(v) or _tensor_list(v) or _index_list(v) or []
            }
            names = _fresh_names(module)
            for group in sorted(groups, key=lambda g: (g.anchor, g.order)):
                _outline(group, ops, main, names)
            # Last use first: the members, and the constants (and lists of pieces) the groups read, which were
            # cloned into their bodies and may be unused now (a list of computed pieces reads members).
            members = {i for g in groups for i in g.members}
            for i in sorted(members | constants, reverse=True):
                if i in members or all(not list(r.uses) for r in ops[i].results):
                    ops[i].operation.erase()


class _Grouping:
    """Assigns ops to groups. Ops are known by their index in the block, values by themselves: an
    ir.Operation's hash changes with its attributes and operands, so it is no dictionary key."""

    def __init__(
        self, ops: list[Any], max_ops: int, max_row: int, max_recompute: int, device: str | None
    ) -> None:
        self.ops, self.max_ops, self.max_row, self.device = ops, max_ops, max_row, device
        self.max_recompute = max_recompute
        self.made_by = {r: i for i, op in enumerate(ops) for r in op.results}
        self.owner: dict[int, _Group] = {}
        self.readers: dict[ir.Value, list[int]] = {}  # grouped ops by the kernel inputs they read
        self.users: dict[ir.Value, list[int]] = {}  # ops by the values they read
        self.groups: list[_Group] = []
        self.created = itertools.count()
        # Values each gather reads at other elements than its lanes' (gathers.py), by the gather's index.
        self.in_memory = {i: _gather(op).in_memory for i, op in enumerate(ops) if _class(op) == "gather"}

    def run(self) -> list[_Group]:
        for i, op in enumerate(self.ops):
            group = None
            cls = _class(op)
            if cls == "matmul":
                pass  # joins the group of its consumers last (_fuse_products)
            elif cls in d.KERNEL_TEMPLATES:
                group = _Group([], tuple(tensor_info(op.results[0].type)[0]), next(self.created), alone=True)
                self.groups.append(group)
                self._add(group, op, i, None)
            elif cls in _TABLES:
                if aten.aten_name(op) not in _TABLES[cls]:
                    raise PassError.at(
                        op, f"{aten.aten_name(op)} is classified {cls} but has no kernel template"
                    )
                group = self._place(op, i)
            for value in op.operands:
                self.users.setdefault(value, []).append(i)
                producer = self._group_of(value)
                if producer is None or producer is group:
                    continue
                if _transparent(op):
                    producer.no_ops[i] = op
                elif producer.seal is None:
                    producer.seal = i
        self._recompute_broadcasts()
        self._compute_pieces()
        self._fuse_siblings()
        self._fuse_epilogues()
        self._fuse_prologues()
        self._fuse_products()
        return self.groups

    def _outside_readers(self, group: _Group) -> set[int]:
        """The ops outside `group` that read its values (no-ops aside)."""
        return {
            j
            for m in group.members
            for result in self.ops[m].results
            for j in self.users.get(result, [])
            if self.owner.get(j) is not group and not _transparent(self.ops[j])
        }

    def _compute_pieces(self) -> None:
        """Merges each small pointwise group whose values only a concatenation's pieces read into the
        concatenation's group: its kernel computes them within each piece's range (`cat([-x2, x1])`)."""
        for cat_group in [g for g in self.groups if g.concatenates]:
            cats = {i for i in cat_group.members if _class(self.ops[i]) == "concat"}
            # the lists of pieces that only this group's cats read
            lists = {self.made_by.get(self.ops[i].operands[0]) for i in cats} - {None}
            lists = {j for j in lists if set(self.users.get(self.ops[j].results[0], [])) <= cats}
            producers = {self._group_of(v) for i in cats for v in _tensor_inputs(self.ops[i])}
            for piece in sorted(producers - {None, cat_group}, key=lambda g: g.order):
                readers = self._outside_readers(piece)
                if (
                    readers <= lists
                    and piece.reduced is None
                    and not (piece.concatenates or piece.alone or piece.product)
                    and len(piece.members) <= self.max_recompute
                    and len(piece.members) + len(cat_group.members) <= self.max_ops
                    and not any(_from_index(self.ops[m]) or m in self.in_memory for m in piece.members)
                ):
                    self._merge(cat_group, piece)

    def _matvec_groups(self) -> list[_Group]:
        return [g for g in self.groups if g.alone and self._products(g)]

    def _products(self, group: _Group) -> list[int]:
        """The members of `group` that are products of one row (class `matvec`)."""
        return [i for i in group.members if _class(self.ops[i]) == "matvec"]

    def _weights(self, products: list[int]) -> list[ir.Value]:
        """The weights and biases of the matvec ops `products`: a matvec kernel reads them as its inputs, so
        the group computing them cannot be its prologue (`t @ t`)."""
        return [self.ops[i].operands[r] for i in products for r in read_matvec(self.ops[i]).weight_and_bias]

    def _row(self, i: int) -> ir.Value:
        """The row that the matvec op `i` multiplies."""
        return self.ops[i].operands[read_matvec(self.ops[i]).rows]

    def _fuse_siblings(self) -> None:
        """Merges the matvec groups that multiply one row into one group (module docstring): each later
        product moves up to the first one's call, which its inputs (the row, weights) precede."""
        by_row: dict[ir.Value, _Group] = {}
        for group in self._matvec_groups():
            (i,) = group.members
            first = by_row.setdefault(self._row(i), group)
            if first is group:
                continue
            seals = [s for s in (first.seal, group.seal) if s is not None]
            merged = dataclasses.replace(first, seal=min(seals) if seals else None)
            if not self._hoistable(self.ops[i], i, merged):
                continue
            self._merge(first, group)
            first.seal = merged.seal

    def _fuse_epilogues(self) -> None:
        """Merges each matvec group into the one pointwise group that alone reads its products, when they
        all have one shape and that group computes it (module docstring): the kernel computes the same
        outputs of every product in one program and applies the group's ops to them (a gated MLP's
        `silu(g) * u` after its gate and up projections), so the products are never stored."""
        for group in self._matvec_groups():
            products = self._products(group)
            shapes = {tuple(tensor_info(self.ops[i].results[0].type)[0]) for i in products}
            readers = {self.owner.get(j) for j in self._outside_readers(group)}
            if len(shapes) != 1 or len(readers) != 1 or None in readers:
                continue
            (epilogue,) = readers
            if (
                epilogue.alone
                or epilogue.reduced is not None
                or epilogue.concatenates
                or epilogue.product
                or epilogue.shape != shapes.pop()
                or epilogue.anchor[0] < group.members[-1]  # (its call must follow the products' inputs)
                or len(epilogue.members) + len(group.members) > self.max_ops
                or any(_from_index(self.ops[m]) or m in self.in_memory for m in epilogue.members)
            ):
                continue
            self._merge(epilogue, group)
            epilogue.alone = True

    def _fuse_prologues(self) -> None:
        """Moves the group computing a matvec's row, if the row is at most MAX_PROLOGUE_K long and what else
        reads its values comes after the products, into the matvec's group, as the prologue of its kernel
        (module docstring): the kernel stores those values too, its call staying before their readers."""
        for group in self._matvec_groups():
            products = self._products(group)
            first = products[0]
            product = read_matvec(self.ops[first])
            row = self._row(first)
            producer = self._group_of(row)
            if (
                product.k > MAX_PROLOGUE_K
                or product.m > 1  # (the dots of a few rows loop over K: no program holds a whole row)
                or producer is None
                or producer.alone
                or producer.concatenates
                or producer.shape != tuple(tensor_info(row.type)[0])
                or producer.reduced not in (None, (len(producer.shape) - 1,))
                or producer.members[-1] > first
                or any(self._group_of(v) is producer for v in self._weights(products))
            ):
                continue
            later = self._outside_readers(producer) - set(products)
            # (an epilogue reads only the products' values; the others' readers follow the kernel)
            if later & set(group.members) or any(j < group.members[-1] for j in later):
                continue
            producer.members = sorted(producer.members + group.members)
            for i in group.members:
                self.owner[i] = producer
            seals = [*later, *([group.seal] if group.seal is not None else [])]
            producer.alone, producer.seal = True, min(seals, default=None)
            producer.no_ops |= group.no_ops
            producer.left_out |= group.left_out
            self.groups.remove(group)

    def _fuse_products(self) -> None:
        """Moves each `matmul` product into the pointwise group reading its result (module docstring), or
        makes it a library op. The group's call follows every op that reads the product, so the product's
        inputs exist there."""
        for i, op in enumerate(self.ops):
            if _class(op) != "matmul":
                continue
            reshapes, value = self._reshapes(op.results[0])
            readers = {self.owner.get(j) for j in self.users.get(value, [])}
            group = readers.pop() if len(readers) == 1 else None
            if (
                group is None
                or group.shape != tuple(tensor_info(value.type)[0])
                or group.reduced is not None
                or group.concatenates
                or group.alone
                or group.product
                or len(group.members) >= self.max_ops
                or not self._can_share(group.members, [i, *reshapes])
            ):
                product = read_product(op)
                if computes_alone(product.m, product.n):
                    group = _Group([i], tuple(tensor_info(op.results[0].type)[0]), next(self.created))
                    group.alone = group.product = True
                    self.groups.append(group)
                    self.owner[i] = group
                else:
                    op.attributes[d.CLASS] = attrs.string("library")
                    del op.attributes[d.MATMUL_KERNEL]
                continue
            group.members = sorted([*group.members, i, *reshapes])
            group.product = True
            for j in (i, *reshapes):
                self.owner[j] = group

    def _reshapes(self, value: ir.Value) -> tuple[list[int], ir.Value]:
        """The chain of reshapes that alone read `value` (GPT-2's `view(addmm(...))`), and the value at its
        end: a kernel computing `value` in row-major order computes the end's elements in the same order."""
        chain = []
        while (
            len(users := self.users.get(value, [])) == 1
            and aten.aten_name(self.ops[users[0]]) in aten.RESHAPES
        ):
            chain.append(users[0])
            value = self.ops[users[0]].results[0]
        return chain, value

    def _recompute_broadcasts(self) -> None:
        """Merges each small pointwise group whose values only one other group reads, at a shape they
        broadcast to, into that group: the kernel recomputes them per element (a group's call comes
        after the calls whose values it reads, so the merged ops still find their inputs). Values read
        through broadcast views must be read by pointwise ops (a reduction's or cat's operand sets the
        shape it walks; a gather's index is read per element, its source is not); the views, and no-ops
        reading the values, join the group `left_out`."""
        for small in list(self.groups):
            if (
                small.reduced is not None
                or small.concatenates
                or small.alone
                or len(small.members) > self.max_recompute
                or any(_from_index(self.ops[m]) for m in small.members)
            ):
                continue
            passed: list[int] = []
            readers = {
                self.owner.get(j)
                for i in small.members
                for result in self.ops[i].results
                for j in self._through_broadcasts(result, passed)
            } - {small}
            if len(readers) != 1 or None in readers:
                continue
            (big,) = readers
            if (
                not big.alone
                and _broadcasts(small.shape, big.shape)
                and all(
                    j in passed or self._per_lane(j, result)
                    for k in passed
                    for result in self.ops[k].results
                    for j in self.users.get(result, [])
                )
                and len(small.members) + len(big.members) + len(passed) <= self.max_ops
                and self._can_share(big.members, small.members)
            ):
                self._merge(big, small)
                for j in passed:
                    self.owner[j] = big
                    big.no_ops.pop(j, None)
                big.members = sorted(big.members + passed)
                big.left_out.update(passed)

    def _through_broadcasts(self, value: ir.Value, passed: list[int]) -> Iterator[int]:
        """The ops reading `value`, directly or through broadcast views, less no-ops (it adds the views and
        no-ops to `passed`)."""
        for j in self.users.get(value, []):
            if j in passed:
                continue
            if _class(self.ops[j]) == "nop" or _broadcast_view(self.ops[j]):
                passed.append(j)
                for result in self.ops[j].results:
                    yield from self._through_broadcasts(result, passed)
            else:
                yield j

    def _group_of(self, value: ir.Value) -> _Group | None:
        return self.owner.get(self.made_by.get(value, -1))

    def _place(self, op: Any, i: int) -> _Group | None:
        space = self._space(op)
        if space is None:
            op.attributes[d.CLASS] = attrs.string("library")
            return None
        shape, reduced = space
        concat = _class(op) == "concat"
        inputs = _tensor_inputs(op)
        producers = [self._group_of(v) for v in inputs]
        siblings = [self.owner[reader] for v in inputs for reader in self.readers.get(v, [])]
        candidates = []
        for group in producers + siblings:
            if (
                group is not None
                and group not in candidates
                and group.accepts(shape, reduced, concat)
                and self._per_element_or_row(inputs, group)
                and self._can_share(group.members, [i])
            ):
                candidates.append(group)
        open_groups = [g for g in candidates if g.seal is None]
        if open_groups and len(open_groups[0].members) < self.max_ops:
            target = open_groups[0]
            for other in open_groups[1:]:
                fits = len(target.members) + len(other.members) < self.max_ops
                if (
                    fits
                    and _compatible(target, other, reduced)
                    and self._can_share(target.members + [i], other.members)
                ):
                    self._merge(target, other)
            return self._add(target, op, i, reduced, concat)
        for group in candidates:
            if group.seal is not None and len(group.members) < self.max_ops and self._hoistable(op, i, group):
                return self._add(group, op, i, reduced, concat)
        group = _Group([], shape, next(self.created))
        self.groups.append(group)
        return self._add(group, op, i, reduced, concat)

    def _space(self, op: Any) -> tuple[tuple[int, ...], tuple[int, ...] | None] | None:
        """The op's iteration space, (shape, reduced dims or None for a pointwise op); None if no kernel
        can compute it: a dynamic or non-float shape, a scalar computed at run time, or arguments its
        template rejects."""
        results = [tensor_info(r.type) for r in op.results]
        scalars = [v for v in op.operands if not is_tensor(v.type)]
        args = [pointwise.constant_value(v) for v in op.operands]
        if any(info is None or -1 in info[0] for info in results):
            return None
        if _class(op) == "concat":
            return concat_space(op)
        if _class(op) == "gather":  # (classify-ops checked it; an index.Tensor's list is no constant)
            return tuple(results[0][0]), None
        if any(_constant_ops(v) is None for v in scalars):
            return None
        name = aten.aten_name(op)
        if _class(op) == "pointwise":
            if len(results) != 1 or pointwise.unsupported(name, args, results[0][1], self.device) is not None:
                return None
            return tuple(results[0][0]), None
        source = tensor_info(op.operands[0].type)
        if source is None or -1 in source[0] or not all(info[1].is_float for info in results):
            return None
        reduced = reductions.reduced_dims(name, args, len(source[0]))
        if not reduced or math.prod(source[0][d] for d in reduced) > self.max_row:
            return None
        return tuple(source[0]), reduced

    def _per_element_or_row(self, inputs: list[ir.Value], group: _Group) -> bool:
        """Whether the values of `group` among `inputs` are per element or per row of its space (a
        reduction's result without the reduced dims is neither: it leaves the group)."""
        shapes = (group.shape, group.row_shape)
        return all(tuple(tensor_info(v.type)[0]) in shapes for v in inputs if self._group_of(v) is group)

    def _per_lane(self, j: int, value: ir.Value) -> bool:
        """Whether op `j` reads `value` at each lane's own element: a pointwise op, or a gather reading it
        as an index that broadcasts to its result."""
        return _class(self.ops[j]) == "pointwise" or (j in self.in_memory and value not in self.in_memory[j])

    def _can_share(self, members: list[int], others: list[int]) -> bool:
        """Whether two sets of ops can share a kernel: no gather among them reads in memory (its source, an
        index spanning some dims of its result) what another of them computes."""
        ops = {*members, *others}
        return not any(
            self.made_by.get(v) in ops for j in ops & self.in_memory.keys() for v in self.in_memory[j]
        )

    def _hoistable(self, op: Any, i: int, group: _Group) -> bool:
        """Whether `op` can move up to `group`'s call: all its other inputs are defined before it."""
        for value in _tensor_inputs(op):
            other = self._group_of(value)
            if other is group or value not in self.made_by:
                continue
            defined = (
                self.made_by[value] if other is None else other.position if other.seal is not None else i
            )
            if defined >= group.position:
                return False
        return True

    def _add(
        self, group: _Group, op: Any, i: int, reduced: tuple[int, ...] | None, concat: bool = False
    ) -> _Group:
        group.members.append(i)
        if reduced is not None:
            group.reduced = reduced
        group.concatenates |= concat
        self.owner[i] = group
        for value in _tensor_inputs(op):
            if self._group_of(value) is not group:
                self.readers.setdefault(value, []).append(i)
        return group

    def _merge(self, target: _Group, other: _Group) -> None:
        for i in other.members:
            self.owner[i] = target
        target.members = sorted(target.members + other.members)
        target.no_ops |= other.no_ops
        target.concatenates |= other.concatenates
        target.left_out |= other.left_out
        if other.reduced is not None:
            target.reduced = other.reduced
        self.groups.remove(other)


def _from_index(op: Any) -> bool:
    """Whether the op's values are its kernel's element index (`arange`: pointwise._arange), so that it
    computes them only in a kernel of its own shape, never recomputed in a larger one (an `arange(W)`
    in a [R, W] kernel would count on across rows: MPNet's and T5's relative positions were wrong)."""
    return aten.aten_name(op).startswith("aten.arange")


def _broadcasts(small: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether `small` is smaller than `shape` and broadcasts to it."""
    if small == shape or len(small) > len(shape):
        return False
    return all(a in (1, b) for a, b in zip(small, shape[len(shape) - len(small) :], strict=True))


def _broadcast_view(op: Any) -> bool:
    """Whether `op` is a view of its source broadcast to its shape: an `expand`, or a reshape adding or
    dropping leading 1s (not of a 0-d source, which promotes as a number where the view does not)."""
    name = aten.aten_name(op)
    if name not in _BROADCAST_VIEWS:
        return False
    (source, _), (result, _) = (tensor_info(v.type) for v in (op.operands[0], op.results[0]))
    if not source:
        return False
    if name == "aten.expand.default":
        return source == result or _broadcasts(tuple(source), tuple(result))
    return _without_leading_ones(source) == _without_leading_ones(result)


def _without_leading_ones(shape: list[int]) -> list[int]:
    return shape[next((k for k, n in enumerate(shape) if n != 1), len(shape)) :]


def _compatible(target: _Group, other: _Group, reduced: tuple[int, ...] | None) -> bool:
    """Whether two groups (and an op reducing `reduced`) can share one iteration space."""
    found = {r for r in (target.reduced, other.reduced, reduced) if r is not None}
    concatenates = target.concatenates or other.concatenates
    return target.shape == other.shape and len(found) <= 1 and not (concatenates and found)


def _outline(group: _Group, ops: list[Any], main: Any, names: Iterator[str]) -> None:
    """Creates a function holding the group's ops and a call to it (unless nothing uses the group's
    values); the members stay until the caller erases them."""
    members = [ops[i] for i in group.members]
    made = {r for op in members for r in op.results}
    inputs: list[ir.Value] = []
    outputs: list[ir.Value] = []
    for op in members:
        for value in _tensor_inputs(op):
            if value not in made and value not in inputs:
                inputs.append(value)
        outputs += [
            r for r in op.results if any(_outside(u.owner, members) and not _check(u.owner) for u in r.uses)
        ]
    checks: list[Any] = []
    for user in [u.owner for v in made if v not in outputs for u in v.uses]:
        # (a check the group holds, `left_out` of its function, goes with its members)
        if _check(user) and not _among(user, checks) and not _among(user, members):
            checks.append(user)
    for check in checks:
        if any(check.operation == op.operation for op in group.no_ops.values()):
            group.no_ops = {i: op for i, op in group.no_ops.items() if op.operation != check.operation}
        check.operation.erase()
    if not outputs:
        return
    name = next(names)
    loc = ir.Location.fused([op.location for op in members])
    with ir.InsertionPoint(main), loc:
        types = ir.FunctionType.get([v.type for v in inputs], [v.type for v in outputs])
        fn = func.FuncOp(name, types, visibility="private")
        fn.attributes[d.FUSED] = ir.UnitAttr.get()
        block = fn.add_entry_block()
    mapping: dict[ir.Value, ir.Value] = dict(zip(inputs, block.arguments, strict=True))
    with ir.InsertionPoint(block):
        for i, op in zip(group.members, members, strict=True):
            if i in group.left_out:  # a no-op, or a view whose readers read its source (broadcast)
                mapping.update((r, mapping[op.operands[0]]) for r in op.results)
                continue
            for value in op.operands:
                for constant in _constant_ops(value) or _tensor_list(value) or _index_list(value) or []:
                    if constant.results[0] not in mapping:
                        clone_op(constant, mapping)
            clone_op(op, mapping)
        func.ReturnOp([mapping[v] for v in outputs], loc=loc)
    with ir.InsertionPoint(ops[group.anchor[0]]), loc:
        call = func.CallOp([v.type for v in outputs], ir.FlatSymbolRefAttr.get(name), inputs)
    call.attributes[d.CLASS] = attrs.string("kernel")
    call.attributes[d.LAYOUTS] = ir.ArrayAttr.get([_eager_layout(v) for v in outputs])
    for old, new in zip(outputs, call.results, strict=True):
        old.replace_all_uses_with(new)
    after = call.operation
    for i, op in sorted(group.no_ops.items()):
        if i < group.anchor[0]:  # no-ops that used a value before the call now follow it
            op.operation.move_after(after)
            after = op.operation


def clone_op(op: Any, mapping: dict[ir.Value, ir.Value]) -> None:
    """Clones `op` at the insertion point, its operands mapped by `mapping`, which gains its results."""
    clone = op.operation.clone()
    for i, value in enumerate(op.operands):
        clone.operands[i] = mapping[value]
    for old, new in zip(op.results, clone.results, strict=True):
        mapping[old] = new


def _constant_ops(value: ir.Value) -> list[Any] | None:
    """The ops (defs before uses) that make `value` from constants alone, or None if it has other inputs."""
    producer = value.owner if isinstance(value, ir.OpResult) else None
    if producer is None or not producer.operation.name.startswith(_CONSTANTS):
        return None
    found: list[Any] = []
    for operand in producer.operands:
        inner = _constant_ops(operand)
        if inner is None:
            return None
        found += inner
    return [*found, producer]


def _tensor_inputs(op: Any) -> list[ir.Value]:
    """Tensor operands that are inputs of a kernel (tensors made from constants are cloned instead); a
    concatenation's are its pieces, a gather's its source and index."""
    if _class(op) == "gather":
        gather = _gather(op)
        return [v for v in (gather.source, gather.index) if _constant_ops(v) is None]
    operands = list(op.operands)
    for value in op.operands[:1]:
        for made in _tensor_list(value) or []:
            operands = list(made.operands)
    return [v for v in operands if is_tensor(v.type) and _constant_ops(v) is None]


def _tensor_list(value: ir.Value) -> list[Any] | None:
    """[the `ListConstruct` making `value`] if it is a list of tensors built in place (a `cat`'s pieces)."""
    producer = value.owner if isinstance(value, ir.OpResult) else None
    if producer is None or producer.operation.name != "torch.prim.ListConstruct":
        return None
    return [producer] if producer.operands and all(is_tensor(v.type) for v in producer.operands) else None


def _gather(op: Any) -> gathers.Gather:
    """The gather `op` computes (an error at the op if classify-ops was wrong to call it one)."""
    try:
        return gathers.read_gather(op)
    except ValueError as exc:
        raise PassError.at(
            op, f"{aten.aten_name(op)} is classified gather, but no kernel computes it: {exc}"
        ) from None


def _index_list(value: ir.Value) -> list[Any] | None:
    """The ops (defs before uses) making an `index.Tensor`'s list of indices in place, its Nones among them,
    or None."""
    producer = value.owner if isinstance(value, ir.OpResult) else None
    if producer is None or producer.operation.name != "torch.prim.ListConstruct":
        return None
    if not str(value.type).startswith("!torch.list<optional<"):
        return None
    nones = [c for v in producer.operands if not is_tensor(v.type) for c in _constant_ops(v) or []]
    return [*nones, producer]


def concat_space(op: Any) -> tuple[tuple[int, ...], None] | None:
    """A `cat`'s iteration space (its result's shape) when a kernel can compute it: pieces (one is a
    copy, as in DenseNet's first layer) that are none empty, all of the result's rank and static, along
    a constant dim."""
    made = _tensor_list(op.operands[0])
    shape = tuple(tensor_info(op.results[0].type)[0])
    dim = pointwise.constant_value(op.operands[1])
    if made is None or not isinstance(dim, int) or 0 in shape:
        return None
    infos = [tensor_info(v.type) for v in made[0].operands]
    if any(info is None or len(info[0]) != len(shape) or -1 in info[0] or 0 in info[0] for info in infos):
        return None
    return shape, None


def _eager_layout(value: ir.OpResult) -> ir.Attribute:
    op = value.owner
    if d.LAYOUTS in op.attributes:
        return ir.ArrayAttr(op.attributes[d.LAYOUTS])[value.result_number]
    return contiguous_layout(value.type).to_attr()


def _outside(user: Any, members: list[Any]) -> bool:
    """Whether `user` reads a value outside the group: it is no member, nor a list of pieces only members
    read (cloned into the body with them)."""
    if _among(user, members):
        return False
    if user.operation.name == "torch.prim.ListConstruct" and _tensor_list(user.results[0]):
        return not all(_among(u.owner, members) for u in user.results[0].uses)
    return True


def _check(op: Any) -> bool:
    """Whether `op` is a no-op that nothing reads (export's checks of metadata, `_assert_tensor_metadata`):
    a value that only such ops read outside its group is no output of the kernel (writing it would cost
    memory traffic, and a computed piece of a `cat` or a matrix-vector kernel's row cannot be one); the
    checks go instead."""
    return _class(op) == "nop" and all(not list(r.uses) for r in op.results)


def _among(op: Any, ops: list[Any]) -> bool:
    return any(op.operation == o.operation for o in ops)  # == compares identity, unlike hash()


def _transparent(op: Any) -> bool:
    return _class(op) == "nop" or op.operation.name in _TRANSPARENT


def _class(op: Any) -> str | None:
    return ir.StringAttr(op.attributes[d.CLASS]).value if d.CLASS in op.attributes else None


def _model_device(main: Any) -> str | None:
    """The device type of @main's arguments ("cuda", "cpu"), if they state one and agree."""
    if "arg_attrs" not in main.attributes:
        return None
    found = {
        ir.StringAttr(a[d.DEVICE]).value.split(":")[0]
        for a in map(ir.DictAttr, ir.ArrayAttr(main.attributes["arg_attrs"]))
        if d.DEVICE in a
    }
    return found.pop() if len(found) == 1 else None


def _fresh_names(module: ir.Module) -> Iterator[str]:
    taken = {
        ir.StringAttr(op.attributes["sym_name"]).value
        for op in module.body.operations
        if "sym_name" in op.attributes
    }
    n = 0
    while True:
        if f"fused_{n}" not in taken:
            yield f"fused_{n}"
        n += 1
