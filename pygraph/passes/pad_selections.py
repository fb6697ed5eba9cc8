"""pad-selections: keep in the graphs the rows a selection by the data picks, padded to their bound.

`nonzero(mask)` and `x[mask]` have as many rows as the data decide, so isolate-data-dependent runs them,
and every op computing from the rows they pick, between graphs: each launched eagerly after a
synchronisation (a top-1 mixture of experts routing by `nonzero(choice == e)`, `x[rows]` and `index_add`
had 20% of its ops in graphs). Where every op reading the rows computes each row from that row alone
(gathers by the rows, products with weights, pointwise ops, softmax, norms and reductions along other
dims, views that keep the rows) and the rows end in scatters that add them (`index_add`, `index_put` with
accumulate), assign them where the mask took them (`out[mask] = f(x[mask])`, `out[rows] = ...` with
`rows` nonzero's own coordinates), or in sums and means over them, the selection may as well compute all
N rows of its bound, the mask's elements. The selections by one mask (its nonzeros and `x[mask]`s) become one `nonzero_static(mask, N,
-1)`: nonzero's rows in nonzero's order, then rows of -1. Each index a padded row carries is read as 0
(every gather and scatter in bounds), and each padded row scatters -0.0, which adds nothing (x + -0.0 is
x for every x, -0.0 and NaN included); an assignment becomes a sum into negative zeros, kept where the
mask is true (`where(mask, zeros.index_put(rows, v, accumulate=True), out)`: each place the mask took is
written by one row); a sum over the rows sums -0.0 in the padded ones, and a mean (float32 and float64,
where dividing the sum rounds as eager's mean does) divides that sum by the count of selected rows. No shape is left to the data and no value is read back: the whole selection stays
in the graphs.

Padding computes N rows where eager computes the selected ones, so it is taken where the cost model says
the padded ops' GPU work at N rows (bytes moved and products, weights included) is below the host time the
padding saves (an eager launch per op and one for each selection, and a graph split): decoding sizes,
small experts. A selection of a few rows of a prefill's thousands from large experts keeps the data's
size. Left to isolate-data-dependent as well: a selection whose rows reach any other op, the program's
results, a maximum over them (which eager refuses for no rows) or an assignment elsewhere (`out[perm[rows]]
= v`, whose padded rows would write), whose row count
is used other than as a view's size or in export's range checks, or whose mask's shape is not static.
Each padding is recorded.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..ir import aten, costs, dtypes
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.layout import Layout
from ..ir.torch_types import is_tensor, tensor_info, vtensor_type
from . import builders
from .base import Pass, main_function, record_transform
from .estimates import flops
from .layouts import eager_layout, set_layouts
from .pointwise import NO_VALUE, POINTWISE, constant_value

_NONZERO = "torch.aten.nonzero"
_LIST = "torch.prim.ListConstruct"
# ops whose result is their operand's rows, unchanged or converted
_SAME_ROWS = frozenset(
    f"aten.{n}"
    for n in (
        "clone.default",
        "contiguous.default",
        "alias.default",
        "detach.default",
        "to.dtype",
        "_to_copy.default",
        "lift_fresh_copy.default",
    )
)
# operand positions of (dims, keepdim) of reductions; dims None: the op keeps every dim (softmax)
_ALONG_DIMS: dict[str, tuple[int, int | None]] = {
    "aten.sum.dim_IntList": (1, 2),
    "aten.mean.dim": (1, 2),
    "aten.amax.default": (1, 2),
    "aten.amin.default": (1, 2),
    "aten.max.dim": (1, 2),
    "aten.min.dim": (1, 2),
    "aten.argmax.default": (1, 2),
    "aten.argmin.default": (1, 2),
    "aten.var.correction": (1, 3),
    "aten.softmax.int": (1, None),
    "aten._softmax.default": (1, None),
    "aten.log_softmax.int": (1, None),
    "aten._log_softmax.default": (1, None),
    "aten.cumsum.default": (1, None),
}
# sums and means that may reduce over the rows: the operand position of their dims (None: every dim)
_SUMS: dict[str, int | None] = {
    "aten.sum.dim_IntList": 1,
    "aten.mean.dim": 1,
    "aten.sum.default": None,
    "aten.mean.default": None,
}
_NORMS = frozenset({"aten.layer_norm.default", "aten.native_layer_norm.default", "aten.rms_norm.default"})
_PRODUCTS = frozenset({"aten.linear.default", "aten.mm.default", "aten.matmul.default"})
_VIEWS = aten.RESHAPES


class _Refused(Exception):
    """The selection keeps the data's size; the message says which op reads it otherwise."""


@dataclasses.dataclass
class PadSelections(Pass):
    """Pads selections by the data (`nonzero`, `x[mask]`) to their bound where every op reading the rows
    computes row by row into scatters back or sums, and the cost model says the padded work is cheaper."""

    name = "pad-selections"
    summary = "pad a selection by the data to its bound where row-wise ops take its rows to scatters or sums"
    costs: str = "default"  # the cost cache key (device and versions) to read

    def run(self, module: ir.Module) -> None:
        main = main_function(module)
        model = costs.load(self.costs)
        with module.context:
            by_mask: dict[ir.Value, list[Any]] = {}
            for op in main.regions[0].blocks[0].operations:
                mask = _selecting_mask(op)
                if mask is not None:
                    by_mask.setdefault(mask, []).append(op)
            for mask, sources in by_mask.items():
                try:
                    selection = _Selection.of(mask, sources)
                except _Refused:
                    continue  # isolate-data-dependent runs it between graphs and says why
                padded_us, saved_us = selection.padded_us(model), selection.saved_us(model)
                if padded_us > saved_us:
                    continue
                location = sources[0].location
                selection.pad()
                record_transform(
                    module,
                    self.name,
                    f"a selection of up to {selection.rows} rows by the data padded to {selection.rows}: its "
                    f"{selection.op_count()} ops stay in graphs (estimated {padded_us:.1f} us of GPU work at "
                    f"{selection.rows} rows against {saved_us:.1f} us of host work saved)",
                    location,
                )


@dataclasses.dataclass
class _Selection:
    """The selections by one mask (its `nonzero`s and `x[mask]`s) and every op reading their rows, each
    padded value with the dim of its rows."""

    mask: ir.Value
    sources: list[Any]  # the nonzero and `x[mask]` ops, in program order
    rows: int  # the bound: the mask's elements
    dims: dict[ir.Value, int] = dataclasses.field(default_factory=dict)  # padded values -> their rows' dim
    ops: list[Any] = dataclasses.field(default_factory=list)  # the ops computing padded values, in order
    lists: list[Any] = dataclasses.field(default_factory=list)  # index lists of padded indices
    sinks: list[Any] = dataclasses.field(default_factory=list)  # the index_put ops that end the rows
    assigned: list[Any] = dataclasses.field(default_factory=list)  # those that assign (where the mask took)
    sums: list[Any] = dataclasses.field(default_factory=list)  # sums and means over the rows that end them
    columns: dict[ir.Value, int] = dataclasses.field(default_factory=dict)  # nonzero's columns, unchanged
    counts: list[Any] = dataclasses.field(default_factory=list)  # `size.int` ops reading the row count

    @staticmethod
    def of(mask: ir.Value, sources: list[Any]) -> _Selection:
        shape = _shape(mask)
        if shape is None or -1 in shape or math.prod(shape) == 0 or not shape:
            raise _Refused("the mask's shape is not static, or it has no elements or no dims")
        selection = _Selection(mask, sources, math.prod(shape))
        for op in _ops_from(sources[0]):
            if op in sources:
                if op.operands[0] in selection.dims or -1 in _shape(op.operands[0]):
                    raise _Refused("a selection from a tensor of data-dependent shape")
                selection._enter(op.results[0], _leading_nones(op))
            else:
                selection._follow(op)
        for count in selection.counts:  # a view of another tensor sized by the count would get the bound
            for listed in count.results[0].uses:
                if listed.owner.name == _LIST and any(
                    u.owner.operands[0] not in selection.dims for u in listed.owner.results[0].uses
                ):
                    raise _Refused("the row count sizes a view of a tensor that is not the rows")
        return selection

    def _enter(self, value: ir.Value, dim: int) -> None:
        shape = _shape(value)
        if shape is None or [i for i, n in enumerate(shape) if n == -1] != [dim]:
            raise _Refused(f"{value.owner.name} has sizes the data decide besides its rows")
        self.dims[value] = dim

    def _follow(self, op: Any) -> None:
        """Adds `op` to the selection where it reads padded values; refuses it where it reads them other
        than row by row."""
        padded = [v for v in op.operands if v in self.dims]
        listed = [v for v in op.operands if isinstance(v, ir.OpResult) and v.owner in self.lists]
        if not (padded or listed):
            return  # (the count's uses are checked where it is read: views' sizes, range checks)
        name = op.operation.name
        if name == _LIST:
            self._index_list(op)
            return
        if name == "torch.aten.size.int":
            if _dim(constant_value(op.operands[1]), _rank(op.operands[0])) == self.dims[op.operands[0]]:
                self.counts.append(op)
                self._check_counts_use(op)
            return  # (another dim's size is a constant)
        aname = aten.aten_name(op)
        if aname == "aten.index_put.default":
            self._sink(op)
            return
        if aname in _SUMS and self._sums_rows(op, padded):
            self.sums.append(op)
            return
        if aname == "aten._assert_tensor_metadata.default" and all(
            constant_value(v) is None for v in op.operands[1:3]
        ):
            return  # (`.to(dtype)`'s check of the dtype and device, not of the sizes or strides)
        dims = self._result_dims(op, aname, padded[0] if padded else None)
        for result, dim in zip(op.results, dims, strict=True):
            self._enter(result, dim)
        self.ops.append(op)
        column = self._column(op, aname)
        if column is not None:
            self.columns[op.results[0]] = column

    def _sums_rows(self, op: Any, padded: list[ir.Value]) -> bool:
        """Whether `op` sums or averages over the rows (and maybe other dims) of its one padded operand; a
        mean only in float32 or float64, where dividing the sum by the count rounds as eager's mean does."""
        value = op.operands[0]
        if padded != [value]:
            return False
        dims_at = _SUMS[aten.aten_name(op)]
        along = None if dims_at is None else constant_value(op.operands[dims_at])
        if NO_VALUE is along or (isinstance(along, list) and NO_VALUE in along):
            return False
        if self.dims[value] not in self._averaged(op):
            return False
        return "mean" not in aten.aten_name(op) or _dtype(value).name in ("float32", "float64")

    def _column(self, op: Any, name: str) -> int | None:
        """Which of the mask's coordinates `op` takes, unchanged, from a nonzero's result: a select of
        column j, a squeeze of a 1-D mask's one column."""
        source = op.operands[0]
        if not (
            isinstance(source, ir.OpResult) and source.owner in self.sources and source.owner.name == _NONZERO
        ):
            return None
        args = [constant_value(v) for v in op.operands]
        if name == "aten.select.int" and _dim(args[1], 2) == 1 and isinstance(args[2], int):
            return _dim(args[2], _rank(self.mask))
        if name == "aten.squeeze.dim" and _dim(args[1], 2) == 1 and _rank(self.mask) == 1:
            return 0
        return None

    def _check_counts_use(self, count: Any) -> None:
        for use in count.results[0].uses:
            user = use.owner
            if user.name == _LIST and all(aten.aten_name(u.owner) in _VIEWS for u in user.results[0].uses):
                continue  # (`of` checks that each such view reshapes the rows)
            if user.name in ("torch.aten.le.int", "torch.aten.ge.int") and self._range_checked(user):
                continue
            raise _Refused(f"the row count is read by {user.name}")

    def _by_mask(self, op: Any) -> bool:
        """Whether `op` indexes by the mask itself (`x[mask]`, `x[mask] = v`)."""
        mask = _indexing_mask(op)
        return mask is not None and mask == self.mask

    def _range_checked(self, compare: Any) -> bool:
        """Whether a comparison of the count is one of export's range checks, which every count meets
        (`u >= 0`, `u <= n` for n at least the mask's elements), feeding only `_assert_scalar`s."""
        bound = constant_value(compare.operands[1])
        if not isinstance(bound, int) or bound < (0 if compare.name == "torch.aten.ge.int" else self.rows):
            return False
        if compare.name == "torch.aten.ge.int" and bound != 0:
            return False
        for use in compare.results[0].uses:
            if use.owner.name != "torch.aten.Int.bool":
                return False
            if any(aten.aten_name(check.owner) != aten.CHECK for check in use.owner.results[0].uses):
                return False
        return True

    def _index_list(self, op: Any) -> None:
        """An index list: leading Nones, then padded 1-D indices only."""
        kinds = [
            "none" if constant_value(v) is None else "padded" if v in self.dims else "other"
            for v in op.operands
        ]
        first = kinds.index("padded")
        if "other" in kinds or kinds[:first] != ["none"] * first or "none" in kinds[first:]:
            raise _Refused("an index list mixes the rows with other indices")
        if any(_rank(v) != 1 for v in op.operands[first:]):
            raise _Refused("an index of the rows is not 1-D")
        for use in op.results[0].uses:
            if (
                use.owner.name not in ("torch.aten.index.Tensor", "torch.aten.index_put")
                or use.operand_number != 1
            ):
                raise _Refused(f"an index list of the rows is read by {use.owner.name}")
        self.lists.append(op)

    def _indexed(self, op: Any) -> tuple[int, int, list[int]]:
        """(leading Nones, index tensors, the indexed tensor's shape) of an index op by a padded list, or by
        the mask itself (`x[mask] = v`: the mask's dims count as index tensors, one for each)."""
        base = op.operands[0]
        listed = op.operands[1]
        if base in self.dims or not isinstance(listed, ir.OpResult):
            raise _Refused("a tensor of the rows is indexed")
        entries = list(listed.owner.operands)
        leading = sum(constant_value(v) is None for v in entries)
        if listed.owner in self.lists:
            count = len(entries) - leading
        elif self._by_mask(op):
            count = _rank(self.mask)
        else:
            raise _Refused("a tensor of the rows is indexed by other indices")
        shape = _shape(base)
        if shape is None or -1 in shape or any(n == 0 for n in shape[leading : leading + count]):
            raise _Refused("an indexed tensor's shape is not static, or has an empty indexed dim")
        return leading, count, shape

    def _sink(self, op: Any) -> None:
        leading, count, shape = self._indexed(op)
        if constant_value(op.operands[3]) is not True:
            coordinates = list(op.operands[1].owner.operands)[leading:]
            at_coordinates = [self.columns.get(v) for v in coordinates] == list(range(_rank(self.mask)))
            if not (self._by_mask(op) or at_coordinates) or shape[leading : leading + count] != _shape(
                self.mask
            ):
                raise _Refused("the rows are assigned (`x[rows] = v`) at other places than the mask's")
            if _fill(op.operands[0]) is None:
                raise _Refused("the rows are assigned into a tensor of booleans")
            self.assigned.append(op)
        values = op.operands[2]
        rank = len(shape) - count + 1  # the rank of `base[indices]`, its rows at `leading`
        if values in self.dims and _rank(values) - self.dims[values] != rank - leading:
            raise _Refused("a scatter's values do not hold the rows where its indices do")
        if _fill(values) is None:
            raise _Refused("a scatter's values are neither floating-point nor integers")
        self.sinks.append(op)

    def _result_dims(self, op: Any, name: str | None, value: ir.Value | None) -> list[int]:
        """The dim of the rows in each result of `op`; refuses an op that mixes rows."""
        if name is None:
            raise _Refused(f"the rows are read by {op.operation.name}")
        if value is None:  # a gather by padded indices
            if name != "aten.index.Tensor":
                raise _Refused(f"padded indices are read by {name}")
            return [self._indexed(op)[0]]
        dim, rank = self.dims[value], _rank(value)
        args = [constant_value(v) for v in op.operands]
        padded = [v for v in op.operands if v in self.dims]
        if name in _SAME_ROWS:
            if name == "aten._to_copy.default" and aten.copy_device(op) is not None:
                raise _Refused("the rows move to another device")
            return [dim]
        if name in ("aten.squeeze.dim", "aten.select.int"):
            at = _dim(args[1], rank)
            if at == dim:
                raise _Refused(f"{name} takes the rows' dim")
            return [dim - (at < dim)]
        if name == "aten.unsqueeze.default":
            at = _dim(args[1], rank + 1)
            return [dim + (at <= dim)]
        if name == "aten.slice.Tensor":
            if _dim(args[1], rank) == dim:
                raise _Refused("a slice of the rows")
            return [dim]
        if name == "aten.transpose.int":
            a, b = _dim(args[1], rank), _dim(args[2], rank)
            return [b if dim == a else a if dim == b else dim]
        if name == "aten.permute.default":
            order = [_dim(a, rank) for a in args[1]]
            return [order.index(dim)]
        if name in _VIEWS:
            return [self._view_dim(op, value)]
        if name in _PRODUCTS:
            if op.operands[0] != value or len(padded) > 1 or dim >= rank - 1 or _rank(op.operands[1]) > 2:
                raise _Refused(f"{name} mixes the rows")
            return [dim]
        if name in _ALONG_DIMS:
            at, keep = _ALONG_DIMS[name]
            along = args[at] if isinstance(args[at], list) else [args[at]]
            if op.operands[0] != value or len(padded) > 1 or NO_VALUE in along or None in along:
                raise _Refused(f"{name} reduces the rows")
            reduced = {_dim(a, rank) for a in along}
            if dim in reduced:
                raise _Refused(f"{name} reduces the rows")
            kept = keep is None or args[keep] is True
            return [dim if kept else dim - sum(r < dim for r in reduced)] * len(op.results)
        if name in _NORMS:
            normalized = args[1]
            if op.operands[0] != value or not isinstance(normalized, list) or dim >= rank - len(normalized):
                raise _Refused(f"{name} normalizes the rows")
            return [dim] * len(op.results)
        if name in POINTWISE:
            return [self._pointwise_dim(op)]
        raise _Refused(f"the rows are read by {name}")

    def _pointwise_dim(self, op: Any) -> int:
        """Broadcasting aligns dims from the end: every padded operand holds its rows at the same distance
        from the end, and no other operand has more than one element there."""
        ends = {_rank(v) - self.dims[v] for v in op.operands if v in self.dims}
        if len(ends) != 1:
            raise _Refused("a pointwise op reads the rows at different dims")
        end = ends.pop()
        for v in op.operands:
            if is_tensor(v.type) and v not in self.dims:
                shape = _shape(v)
                if shape is None or -1 in shape or (len(shape) >= end and shape[len(shape) - end] != 1):
                    raise _Refused("a pointwise op broadcasts the rows against another tensor's dim")
        return _rank(op.results[0]) - end

    def _view_dim(self, op: Any, value: ir.Value) -> int:
        """A view keeps the rows where nothing but size-1 dims precede them and the rest of each row is
        the same number of elements."""
        before, dim = _shape(value), self.dims[value]
        after = _shape(op.results[0])
        dynamic = [i for i, n in enumerate(after or []) if n == -1]
        if after is None or len(dynamic) != 1:
            raise _Refused("a view of the rows without one dim for them")
        at = dynamic[0]
        if math.prod(before[:dim]) != 1 or math.prod(after[:at]) != 1:
            raise _Refused("a view moves the rows")
        if math.prod(before[dim + 1 :]) != math.prod(after[at + 1 :]):
            raise _Refused("a view changes the rows' length")
        return at

    # ------------------------------------------------------------------------------------------ costs

    def padded_us(self, model: costs.Costs) -> float:
        """GPU time of the padded ops at `rows` rows: each value read or written once, products' arithmetic,
        a graph node each."""
        total = 0.0
        for op in [*self.sources, *self.ops, *self.sinks, *self.sums]:
            values = [self._padded_layout(v) for v in [*op.operands, *op.results] if is_tensor(v.type)]
            total += sum(v.nbytes() for v in values) / (model.bandwidth_gb_s * 1e3) + model.kernel_node_us
            name = aten.aten_name(op)
            if name in _PRODUCTS:
                inputs = [self._padded_layout(v) for v in op.operands if is_tensor(v.type)]
                total += model.compute_us(flops(name, inputs, self._padded_layout(op.results[0])))
        for sink in self.assigned:  # the zeros, and the selection by the mask reading them and the base
            nbytes = self._padded_layout(sink.operands[0]).nbytes()
            total += 4 * nbytes / (model.bandwidth_gb_s * 1e3) + 2 * model.kernel_node_us
        return total

    def op_count(self) -> int:
        """The selections and the ops reading their rows."""
        return len(self.sources) + len(self.ops) + len(self.sinks) + len(self.sums)

    def saved_us(self, model: costs.Costs) -> float:
        """Host time of the selection run between graphs: an eager launch per op and for the selection
        (which synchronises), and the graph launch its split adds."""
        return self.op_count() * model.eager_launch_us + model.graph_launch_us

    def _padded_layout(self, value: ir.Value) -> Layout:
        shape, dtype = tensor_info(value.type)
        if value in self.dims:
            shape = [self.rows if n == -1 else n for n in shape]
        return Layout.contiguous(shape, dtype)

    # -------------------------------------------------------------------------------------- rewriting

    def pad(self) -> None:
        """nonzero_static in place of the first selection; each nonzero its result, each `x[mask]` a
        gather by its coordinates."""
        first = self.sources[0]
        with ir.InsertionPoint(first), first.location:
            padded = builders.value(
                "torch.aten.nonzero_static",
                [self.mask, builders.constant(self.rows), builders.constant(-1)],
                vtensor_type([self.rows, _rank(self.mask)], dtypes.BY_NAME["int64"]),
            )
            valid = builders.value(
                "torch.aten.ge.Scalar",
                [self._coordinate(padded, 0), builders.constant(0)],
                _bool_type([self.rows]),
            )
            by_mask = [op for op in [*self.sources, *self.sinks] if self._by_mask(op)]
            coordinates = [
                _where(valid, self._coordinate(padded, j), 0)
                for j in range(_rank(self.mask) if by_mask else 0)
            ]
        for value in self.dims:
            value.set_type(self._padded_type(value))
        indexed = [self._indexed(sink) for sink in self.sinks]  # (before their indices change)
        for source in self.sources:
            if source.name == _NONZERO:
                source.results[0].replace_all_uses_with(padded)
                source.erase()
        for op in by_mask:
            with ir.InsertionPoint(op), op.location:  # x[mask] as x[i, j, ...] at the mask's coordinates
                old = op.operands[1].owner
                nones = list(old.operands)[: _leading_nones(op)]
                op.operands[1] = builders.value(_LIST, [*nones, *coordinates], old.results[0].type)
            if not list(old.results[0].uses):
                old.erase()
        for op in self.ops:
            if d.LAYOUTS in op.attributes:
                del op.attributes[d.LAYOUTS]  # (dynamic); the padded ones follow as in lower-to-plan
        masked: dict[ir.Value, ir.Value] = {}
        for listed in self.lists:
            for i, index in enumerate(listed.operands):
                if constant_value(index) is None:
                    continue
                if index not in masked:  # each padded row's index read as 0
                    with ir.InsertionPoint(listed), listed.location:
                        masked[index] = _where(valid, index, 0)
                listed.operands[i] = masked[index]
        for sink, (leading, count, shape) in zip(self.sinks, indexed, strict=True):
            with ir.InsertionPoint(sink), sink.location:
                sink.operands[2] = self._scattered(sink, valid, leading, len(shape) - count + 1)
        for sink in self.assigned:
            self._assign_by_mask(sink)
        for op in self.sums:
            self._sum_selected(op, valid)
        for count in self.counts:
            for use in list(count.results[0].uses):
                if use.owner.name != _LIST:
                    _erase_check(use.owner)
            if list(count.results[0].uses):  # views' sizes
                with ir.InsertionPoint(count), count.location:
                    count.results[0].replace_all_uses_with(builders.constant(self.rows))
            count.erase()

    def _assign_by_mask(self, sink: Any) -> None:
        """`base[coordinates] = v` as `where(mask, zeros.index_put(coordinates, v, accumulate=True), base)`:
        the padded rows add nothing to the zeros (-0.0, which the values keep) and the mask takes the base
        where nothing was selected."""
        base, leading = sink.operands[0], _leading_nones(sink)
        with ir.InsertionPoint(sink), sink.location:
            none, false = builders.constant(None), builders.constant(False)
            fill = builders.constant(_fill(base))
            zeros = builders.value(
                "torch.aten.full_like", [base, fill, none, none, none, false, none], base.type
            )
            sink.operands[0] = zeros
            sink.operands[3] = builders.constant(True)
        with ir.InsertionPoint.after(sink), sink.location:
            mask = self.mask
            if _dtype(mask).name != "bool":
                mask = builders.value(
                    "torch.aten.ne.Scalar", [mask, builders.constant(0)], _bool_type(_shape(mask))
                )
            shape = [1] * leading + _shape(mask) + [1] * (_rank(base) - leading - _rank(mask))
            selected = builders.view(mask, shape)
            kept = builders.value("torch.aten.where.self", [selected, sink.results[0], base], base.type)
        _same_layouts(sink, kept.owner)  # (the views of the result are annotated with eager's layout)
        layout = eager_layout(base)
        if layout is not None:  # full_like keeps its operand's strides
            set_layouts(zeros.owner, [layout])
        sink.results[0].replace_all_uses_except(kept, kept.owner.operation)

    def _sum_selected(self, op: Any, valid: ir.Value) -> None:
        """A sum over the rows of their values with -0.0 in the padded rows (which adds nothing); a mean
        that sum divided by the selected rows' count (times the other dims it averages over)."""
        value = op.operands[0]
        with ir.InsertionPoint(op), op.location:
            shape = [1] * _rank(value)
            shape[self.dims[value]] = self.rows
            op.operands[0] = _where(builders.view(valid, shape), value, _fill(value))
        if "mean" not in op.name:
            return
        with ir.InsertionPoint(op), op.location:
            summed = builders.value(
                op.name.replace("mean", "sum").replace(".dim", ".dim_IntList"),
                list(op.operands),
                op.results[0].type,
            )
            count = builders.value(
                "torch.aten.sum", [valid, builders.constant(None)], vtensor_type([], dtypes.BY_NAME["int64"])
            )
            along = self._averaged(op)
            others = math.prod(_shape(value)[a] for a in along if a != self.dims[value])
            if others != 1:
                count = builders.value(
                    "torch.aten.mul.Scalar", [count, builders.constant(others)], count.type
                )
            mean = builders.value("torch.aten.div.Tensor", [summed, count], op.results[0].type)
        _same_layouts(op, summed.owner)
        _same_layouts(op, mean.owner)
        op.results[0].replace_all_uses_with(mean)
        op.erase()

    def _averaged(self, op: Any) -> list[int]:
        value = op.operands[0]
        dims_at = _SUMS[aten.aten_name(op)]
        along = None if dims_at is None else constant_value(op.operands[dims_at])
        return [_dim(a, _rank(value)) for a in along] if along else list(range(_rank(value)))

    def _coordinate(self, padded: ir.Value, j: int) -> ir.Value:
        """Column `j` of nonzero_static's result: the selected elements' index along the mask's dim `j`."""
        return builders.value(
            "torch.aten.select.int",
            [padded, builders.constant(1), builders.constant(j)],
            vtensor_type([self.rows], _dtype(padded)),
        )

    def _scattered(self, sink: Any, valid: ir.Value, leading: int, rank: int) -> ir.Value:
        """The sink's values with -0.0 (0 for integers) in the padded rows, placed as its indices place them
        (`base[indices]` has rank `rank`, its rows at `leading`)."""
        placed = [1] * rank
        placed[leading] = self.rows
        rows = builders.view(valid, placed)
        values = sink.operands[2]
        shape = self._padded_type_shape(values)
        width = max(len(shape), rank)
        padded = [1] * (width - len(shape)) + shape
        aligned = [1] * (width - rank) + placed
        result = [max(a, b) for a, b in zip(padded, aligned, strict=True)]
        return _where(rows, values, _fill(values), result)

    def _padded_type_shape(self, value: ir.Value) -> list[int]:
        shape, _ = tensor_info(value.type)
        return [self.rows if n == -1 else n for n in shape]

    def _padded_type(self, value: ir.Value) -> ir.Type:
        return vtensor_type(self._padded_type_shape(value), _dtype(value))


def _selecting_mask(op: Any) -> ir.Value | None:
    """The mask whose true elements `op` selects: nonzero's operand, or the boolean index of `x[mask]`."""
    if op.operation.name == _NONZERO:
        return op.operands[0]
    return _indexing_mask(op) if aten.aten_name(op) == "aten.index.Tensor" else None


def _indexing_mask(op: Any) -> ir.Value | None:
    """The boolean mask an index op (`x[mask]`, `x[mask] = v`) indexes by, after leading Nones and alone
    (`x[:, mask]`), or None."""
    if aten.aten_name(op) not in ("aten.index.Tensor", "aten.index_put.default"):
        return None
    listed = op.operands[1]
    if not isinstance(listed, ir.OpResult) or listed.owner.name != _LIST:
        return None
    indices = [v for v in listed.owner.operands if constant_value(v) is not None]
    if len(indices) != 1 or listed.owner.operands[len(listed.owner.operands) - 1] != indices[0]:
        return None
    info = tensor_info(indices[0].type)
    return indices[0] if info is not None and info[1].name == "bool" else None


def _leading_nones(op: Any) -> int:
    """Where a selection's rows are in its result: after the Nones leading its index list."""
    if op.operation.name == _NONZERO:
        return 0
    return sum(constant_value(v) is None for v in op.operands[1].owner.operands)


def _ops_from(first: Any) -> list[Any]:
    """The ops of `first`'s block from `first` on (the return refuses rows it reads)."""
    ops = list(first.operation.block.operations)
    return ops[next(i for i, op in enumerate(ops) if op.operation == first.operation) :]


def _erase_check(compare: Any) -> None:
    """Erases a range check of the count: its `_assert_scalar`s, their conversions, the comparison."""
    for use in list(compare.results[0].uses):
        converted = use.owner
        for check in list(converted.results[0].uses):
            message = check.owner.operands[1]
            check.owner.erase()
            if not list(message.uses) and message.owner.name == "torch.constant.str":
                message.owner.erase()
        converted.erase()
    compare.erase()


def _shape(value: ir.Value) -> list[int] | None:
    info = tensor_info(value.type)
    return None if info is None else info[0]


def _rank(value: ir.Value) -> int:
    return len(tensor_info(value.type)[0])


def _dtype(value: ir.Value) -> Any:
    return tensor_info(value.type)[1]


def _dim(dim: Any, rank: int) -> int:
    if not isinstance(dim, int):
        raise _Refused("a dim that is not a constant")
    return dim + rank if dim < 0 else dim


def _fill(value: ir.Value) -> float | int | None:
    """What adds nothing to a scatter's values: -0.0 for floating-point, 0 for integers; None otherwise."""
    dtype = _dtype(value)
    if dtype.is_float:
        return -0.0
    return None if dtype.name == "bool" else 0


def _bool_type(shape: list[int]) -> ir.Type:
    return ir.Type.parse(f"!torch.vtensor<[{','.join(map(str, shape))}],i1>")


def _same_layouts(source: Any, target: Any) -> None:
    """`target` computes what `source` did: it gets the eager layouts the frontend annotated on it."""
    if d.LAYOUTS in source.attributes:
        target.attributes[d.LAYOUTS] = source.attributes[d.LAYOUTS]


def _where(
    condition: ir.Value, value: ir.Value, other: float | int, shape: list[int] | None = None
) -> ir.Value:
    """`where(condition, value, other)` of a padded value (its own shape unless `shape` says otherwise)."""
    result = vtensor_type(shape if shape is not None else _shape(value), _dtype(value))
    return builders.value(
        "torch.aten.where.ScalarOther", [condition, value, builders.constant(other)], result
    )
