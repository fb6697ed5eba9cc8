"""codegen-triton: write a Triton kernel for every `pygraph.kernel` launch of a fused function.

A kernel is specialized to the layouts of the launch's buffers: sizes, strides and the element count are
constants in its source, and each pointer argument points at its buffer's first element. So one fused
function launched on buffers of different layouts gets one kernel per layout, and launches whose kernels
come out identical share one `pygraph.triton_kernel`.

The kernel is 1-D over the iteration space (the fused function's result shape), in row-major order:
program p handles elements [p * BLOCK, (p + 1) * BLOCK), masked when BLOCK does not divide the count
(or the count is 0: an empty tensor still gets one program).
Each buffer is read or written at its own strides (a broadcast input has stride 0), computed from the
linear index by division and remainder by the sizes of the iteration space's dims, after merging the
dims every buffer walks contiguously: a buffer laid out like the iteration space is addressed by the
linear index itself, which lets Triton vectorize. Indices are 32-bit unless an offset can exceed 2**31-1.
Values are computed by the `pointwise` table, one op at a time; inputs are loaded where first used. A
concatenation takes each element from the piece whose range along its dim holds the element's index
there: every piece is loaded at its own strides, shifted by its start and masked to its range; a piece
that ops of the kernel compute (their shape is the piece's, which does not broadcast to the kernel's) is
computed there from its inputs loaded the same way. A gather (`gathers.py`) loads its index (at its own
strides over the result's dims it spans, or computed like any operand), checks it against the source's
size in the indexed dim (negatives counted from the end for `index`), stops the kernel where a lane is out
of range (`trap_unless`, defined in the kernel's source) and loads the source at its strides in the other
dims plus the index times its stride, masked to the lanes in range.

A pointwise kernel in which some buffer is transposed against the first output (its stride-1 dim is not
the output's innermost, as in an NCHW to NHWC conversion of an activation or a convolution weight) gets
2-D tiles instead (`TileWriter`): a program takes a tile over the output's innermost merged dim and that
buffer's contiguous one, a scalar index in the others, so that its loads and its stores both run along
contiguous memory; Triton exchanges the tile between the two orders through shared memory. In 1-D
blocks one side reads or writes a float per 32-byte sector: resnet18's 9 MB weight conversions ran 12.6
us each on an H200, where Inductor's tiled kernel takes 3.6.

A fused function with reductions (`reductions` table) gets a 2-D kernel instead: rows (the dims its
reductions keep) by columns (the dims they reduce). Program p handles rows [p * XBLOCK, (p + 1) * XBLOCK)
as an [XBLOCK, RBLOCK] block; row and column indices address every buffer at its strides, merged as
above, so reductions over any dims work. Values are per element or, computed from reduced values, per
row ([XBLOCK, 1]), and outputs of either kind are stored. When the row fits in RBLOCK (up to `max-rblock`
columns), the kernel is *persistent*: it loads each row once and keeps it in registers through every
reduction and the stores. Longer rows loop over column blocks, once per reduction and once for the
stores, recomputing the per-element values each loop needs from the inputs. Reductions accumulate in
float32 (the opmath dtype). Block sizes and warps follow the shape (`_row_blocks`): a persistent
program covers about 1024 elements with a warp per 128 of them, a looping one blocks of 2048 columns
with 16 warps, and reductions over strided columns take many rows at a time so loads coalesce along them.

A fused function holding an attention routed to the generated kernel (`pygraph.attention_kernel`) gets a
flash-attention kernel instead (`attention_kernel.py`), one holding a product of one row (class `matvec`)
a matrix-vector kernel (`matvec_kernel.py`), one holding a product with its pointwise consumers (class
`matmul`), or half-precision products of a few rows (class `matvec` too), a tiled matmul with those
consumers as its epilogue (`matmul_kernel.py`), one holding an in-place
`index_put` (class `scatter`, made by write-in-place) a scatter kernel (`scatter_kernel.py`); all build on
`Writer`. The two launches of an attention split-keys split (`pygraph.split_keys`) get its parts and
combining kernels (`attention_kernel.SplitAttentionWriter`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from typing import Any

from ..ir import aten, attrs, dtypes
from ..ir import dialect as d
from ..ir._mlir import func, ir
from ..ir.buffers import buffer_layout, indirection_offset, reached_through_table
from ..ir.dtypes import DType
from ..ir.layout import Layout, contiguous_strides
from ..ir.torch_types import tensor_info
from . import gathers, pointwise, reductions
from .base import Pass, PassError, main_function, walk

INT32, INT64 = dtypes.BY_NAME["int32"], dtypes.BY_NAME["int64"]
INT32_MAX = 2**31 - 1
_TL_TYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64", "i64": "int64",
             "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8", "i1": "int1"}  # fmt: skip
_IMPORTS = "import triton\nimport triton.language as tl\nfrom triton.language.extra import libdevice\n\n\n"
_ROW_ELEMENTS = 1024  # elements a program of a persistent reduction kernel works on (XBLOCK * RBLOCK)
_LOOP_BLOCK = 2048  # columns per iteration of a looping reduction kernel
# A pointwise kernel of more ops than this runs one element per thread in programs of _HEAVY_BLOCK: long
# chains of dependent arithmetic need the warps to hide their latency more than wide loads
# (pointwise_1m's 15 rounds of tanh, exp and log1p: 47 -> 32 us on the H200 against 8 elements per
# thread; bench/results/probe-pointwise-blocks-h200.log).
_HEAVY_OPS = 64
_HEAVY_BLOCK = 256
_COALESCED_ROWS = 16  # contiguous rows (64 bytes of float32) a persistent program loads per column, at least
# Reductions as `tl.reduce` with the combine functions of tl.sum/tl.max/tl.min: Triton's interpreter
# runs those natively, but cannot call the @jit wrappers themselves from an interpreted kernel.
COMBINE = {"sum": "tl.standard._sum_combine", "max": "tl.standard._elementwise_max", "min": "tl.standard._elementwise_min"}  # fmt: skip
_IDENTITY = {"sum": "0.0", "max": 'float("-inf")', "min": 'float("inf")'}
_ACCUMULATE = {"sum": "{acc} + {x}", "max": "tl.maximum({acc}, {x})", "min": "tl.minimum({acc}, {x})"}
_NAMES = re.compile(r"\b(?:[a-z]+[0-9]+|lin)\b")  # names a kernel line may read


@dataclasses.dataclass
class CodegenTriton(Pass):
    """Generates the Triton kernels of a plan and erases the fused functions they replace."""

    name = "codegen-triton"
    summary = "generate a Triton kernel for each launch of a fused function, specialized to its buffers"
    max_block: int = 1024  # elements per program (a power of two, at least 128)
    max_rblock: int = 4096  # the longest row a reduction kernel keeps in registers (a power of two)

    def run(self, module: ir.Module) -> None:
        if self.max_block < 128 or self.max_block & (self.max_block - 1):
            raise ValueError(f"max-block must be a power of two of at least 128, got {self.max_block}")
        if self.max_rblock < 2 or self.max_rblock & (self.max_rblock - 1):
            raise ValueError(f"max-rblock must be a power of two of at least 2, got {self.max_rblock}")
        main = main_function(module)
        symbols = {
            ir.StringAttr(op.attributes["sym_name"]).value: op
            for op in module.body.operations
            if "sym_name" in op.attributes
        }
        generated: dict[tuple[str, ...], str] = {}  # kernel text, less its name -> kernel symbol
        errors: list[tuple[ir.Location, str]] = []
        with module.context:
            for op in walk(main):
                if not isinstance(op, d.KernelOp):
                    continue
                name = ir.FlatSymbolRefAttr(op.kernel).value
                callee = symbols.get(name)
                if isinstance(callee, d.TritonKernelOp):
                    continue
                if not isinstance(callee, func.FuncOp) or d.FUSED not in callee.attributes:
                    errors.append((op.location, f"kernel @{name} is not a fused function"))
                    continue
                indirect = [indirection_offset(a) if reached_through_table(a) else None for a in op.args]
                layouts = [buffer_layout(a) for a in op.args]
                body = callee.regions[0].blocks[0]
                try:
                    classes = {
                        ir.StringAttr(o.attributes[d.CLASS]).value for o in body if d.CLASS in o.attributes
                    }
                    if d.SPLIT_KEYS in op.attributes:
                        from .attention_kernel import SplitAttentionWriter  # (which builds on Writer)

                        stage = ir.StringAttr(op.attributes[d.SPLIT_KEYS]).value
                        kernel = SplitAttentionWriter(callee, stage, layouts, indirect).write()
                    elif "attention" in classes:
                        from .attention_kernel import AttentionWriter  # (which builds on Writer)

                        kernel = AttentionWriter(callee, layouts, indirect).write()
                    elif "matvec" in classes or "matmul" in classes:
                        from .matmul_kernel import MatmulWriter  # (both build on Writer)
                        from .matvec_kernel import MatvecWriter, few_rows

                        one_row = "matvec" in classes and not few_rows(callee)
                        kernel = (MatvecWriter if one_row else MatmulWriter)(
                            callee, layouts, indirect
                        ).write()
                    elif "scatter" in classes:
                        from .scatter_kernel import ScatterWriter  # (which builds on Writer)

                        kernel = ScatterWriter(callee, layouts, self.max_block, indirect).write()
                    elif any(aten.aten_name(o) in reductions.REDUCTIONS for o in body):
                        kernel = RowWriter(callee, layouts, self.max_rblock, indirect).write()
                    elif (tile := transposing_tile(callee, layouts)) is not None:
                        kernel = TileWriter(callee, layouts, tile, indirect).write()
                    else:
                        kernel = Writer(callee, layouts, self.max_block, indirect).write()
                except PassError as exc:
                    errors.extend(exc.errors)
                    continue
                except ValueError as exc:
                    errors.append((op.location, f"cannot generate @{name}: {exc}"))
                    continue
                key = (
                    *kernel.params,
                    *kernel.signature,
                    str(kernel.num_warps),
                    str(kernel.num_stages),
                    kernel.body,
                )
                if key not in generated:
                    generated[key] = _add_kernel(kernel, symbols, main)
                op.attributes["kernel"] = ir.FlatSymbolRefAttr.get(generated[key])
                op.attributes["grid"] = attrs.i64_array([kernel.grid, 1, 1])
            if errors:
                raise PassError(errors)
            used = {ir.FlatSymbolRefAttr(op.kernel).value for op in walk(main) if isinstance(op, d.KernelOp)}
            for name, op in symbols.items():
                if isinstance(op, func.FuncOp) and d.FUSED in op.attributes and name not in used:
                    op.operation.erase()


@dataclasses.dataclass(frozen=True)
class Kernel:
    params: list[str]
    body: str  # the source after the `def` line
    signature: list[str]
    grid: int
    num_warps: int
    ops: list[str]  # short names of the ops it computes, for its symbol
    num_stages: int = 1  # software pipelining of loops (the attention kernel's); the other kernels have none


def _add_kernel(kernel: Kernel, symbols: dict[str, Any], main: Any) -> str:
    """Adds a `pygraph.triton_kernel` (before @main, in generation order) and returns its symbol."""
    stem = "_".join(dict.fromkeys(kernel.ops)) if kernel.ops else "copy"
    name = next(n for i in itertools.count() if (n := f"k{i}_{stem}") not in symbols)
    helper = gathers.TRAP_HELPER if f"{gathers.TRAP}(" in kernel.body else ""  # (a kernel that gathers)
    source = f"{_IMPORTS}{helper}@triton.jit\ndef {name}({', '.join(kernel.params)}):\n{kernel.body}"
    fields = {
        "sym_name": attrs.string(name),
        "source": attrs.string(source),
        "entry": attrs.string(name),
        "signature": attrs.str_array(kernel.signature),
        "num_warps": attrs.i64(kernel.num_warps),
        "num_stages": attrs.i64(kernel.num_stages),
    }
    with ir.InsertionPoint(main), main.location:
        symbols[name] = d.create(d.TritonKernelOp, [], fields)
    return name


@dataclasses.dataclass(frozen=True)
class _Load:
    """A load of input `arg`, rendered once the offsets are known (they depend on which inputs are read)."""

    arg: int


@dataclasses.dataclass(frozen=True)
class _Piece:
    """A load of input `arg` as the piece [start, stop) along `dim` of a concatenation, named `name`:
    at `strides` (its own, broadcast to the piece's shape), shifted by `start` along `dim`, masked to its
    range."""

    arg: int
    dim: int
    start: int
    stop: int
    name: str
    strides: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class _Strided:
    """A load of input `arg`, named `name`, at `strides` over the iteration space that are not its own
    broadcast: an index spanning some of its gather's result dims (gathers.py)."""

    arg: int
    name: str
    strides: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class _Gather:
    """`name`: input `arg` at `strides` over the iteration space plus `index` (a value of the kernel, of
    `index_dtype`) times `step`; an index outside [0, bound) (or [-bound, bound), negatives counting from
    the end, when `wrap`) loads nothing and stops the kernel (gathers.py)."""

    arg: int
    name: str
    strides: tuple[int, ...]
    index: str
    index_dtype: DType
    step: int
    bound: int
    wrap: bool

    @property
    def deps(self) -> frozenset[str]:
        return frozenset({self.index})


@dataclasses.dataclass(frozen=True)
class _DimIndex:
    """`k<dim>`, the index along `dim` of the iteration space (known once the iteration order is)."""

    dim: int


class Writer:
    """Writes one kernel: a fused function specialized to the layouts of its launch's buffers."""

    num_stages = 1  # software pipelining of loops (the template kernels'); the pointwise kernels have none

    def __init__(self, fn: Any, layouts: list[Layout], max_block: int, indirect: list[int | None]) -> None:
        self._read(fn, layouts, indirect)
        types = [tensor_info(v.type) for v in self.results]
        self.shape = tuple(types[0][0])
        if any(tuple(info[0]) != self.shape for info in types):
            raise ValueError("the outputs of a fused function must share one shape")
        self._blocks(max_block)

    def _blocks(self, max_block: int) -> None:
        """Elements per program, warps, programs and index width for the iteration space `self.shape`."""
        self.numel = math.prod(self.shape)
        self.block = max(128, min(max_block, 1 << max(self.numel - 1, 0).bit_length()))
        computed = [op for op in self.body_ops if not op.operation.name.startswith("torch.constant.")]
        if len(computed) > _HEAVY_OPS:  # bound by arithmetic latency: one element per thread
            self.block = min(self.block, _HEAVY_BLOCK)
            self.num_warps = self.block // 32
        else:  # bound by memory: 8 elements per thread, loaded in vectors of 4
            self.num_warps = min(8, max(1, self.block // 256))
        self.grid = max(1, -(-self.numel // self.block))
        # 64-bit indices only when the linear index or an offset (at most a buffer's span) can overflow.
        self.wide = self.grid * self.block > INT32_MAX or spans_overflow(self.layouts)
        self.index = pointwise.Value("i", INT64 if self.wide else INT32, 1)

    def _read(self, fn: Any, layouts: list[Layout], indirect: list[int | None]) -> None:
        """The fused function's body, arguments and results, checked against the launch's buffers."""
        block = fn.regions[0].blocks[0]
        self.body_ops = list(block.operations)[:-1]
        self.args = list(block.arguments)
        self.results = list(block.operations[len(self.body_ops)].operands)
        if len(layouts) != len(self.args) + len(self.results):
            raise ValueError(
                f"the launch passes {len(layouts)} buffers for {len(self.args)} inputs and {len(self.results)} outputs"
            )
        if not self.results:
            raise ValueError("the fused function has no results")
        values = self.args + self.results
        types = [tensor_info(v.type) for v in values]
        for i, (layout, info) in enumerate(zip(layouts, types, strict=True)):
            if info is None or list(layout.shape) != info[0] or layout.dtype != info[1]:
                raise ValueError(f"buffer {i} is {layout}, the fused function expects {values[i].type}")
        self.layouts = layouts
        self.indirect = indirect  # per buffer: None, or the element offset from the address in its table slot
        self.lines: list[Any] = []  # source lines, and markers rendered once the offsets are known
        self.values: dict[ir.Value, Any] = {}
        self.loaded: dict[int, pointwise.Value] = {}
        self.counter = itertools.count()
        self.known: dict[Any, str] = {}  # expressions (and reductions) computed already, by their names
        self.pieces: list[_Piece] = []  # loads of concatenations' pieces
        self.named: dict[str, tuple[int, ...]] = {}  # strides of the loads that gathers add, by name
        # Ops computing a piece of a concatenation (their shape is the piece's, which does not broadcast to
        # the kernel's): evaluated within the piece's range, their inputs loaded as pieces (`_in_piece`).
        self.deferred: dict[ir.Value, Any] = {}
        self.piece: tuple[int, int, int] | None = None  # (dim, start, stop) while evaluating in a piece
        self.piece_values: dict[tuple[ir.Value, tuple[int, int, int]], Any] = {}

    def write(self) -> Kernel:
        ops = self._emit_ops(self.body_ops)
        n_in = len(self.args)
        stores = [(n_in + j, self._operand(result).expr) for j, result in enumerate(self.results)]
        return Kernel(
            params=[f"in{a}" for a in range(n_in)] + [f"out{j}" for j in range(len(self.results))],
            body=self._render(stores),
            signature=[
                self._signature(x, off is not None)
                for x, off in zip(self.layouts, self.indirect, strict=True)
            ],
            grid=self.grid,
            num_warps=self.num_warps,
            ops=ops,
            num_stages=self.num_stages,
        )

    def _emit_ops(self, body: list[Any]) -> list[str]:
        """Emits the pointwise ops (and gathers, concatenations) of `body`; returns their short names. The
        ops computing a concatenation's pieces are deferred: each piece is computed within its range."""
        ops = []
        concatenates = any(aten.aten_name(op) == pointwise.CONCAT for op in body)
        for op in body:
            if self._constant(op):
                continue
            name = aten.aten_name(op)
            ops.append(name.split(".")[1].strip("_"))
            if concatenates and self._computes_a_piece(op):
                self.deferred[op.results[0]] = op
                continue
            self._emit(op, name)
        return ops

    # ------------------------------------------------------------------------------------ values

    def _constant(self, op: Any) -> bool:
        """Records the value of a constant op of the body; False for compute ops."""
        name = op.operation.name
        if name == "torch.prim.NumToTensor.Scalar":
            _, dtype = tensor_info(op.results[0].type)
            self.values[op.results[0]] = pointwise.Value(
                "", dtype, 0, pointwise.constant_value(op.operands[0])
            )
            return True
        if name.startswith("torch.constant.") or name == "torch.prim.ListConstruct":
            self.values[op.results[0]] = pointwise.constant_value(op.results[0])
            return True
        return False

    def _emit(self, op: Any, name: str) -> None:
        if name == pointwise.CONCAT:
            self._emit_concat(op)
            return
        if name in gathers.GATHERS:
            self._emit_gather(op)
            return
        if name not in pointwise.POINTWISE:
            raise PassError.at(op, f"'{op.operation.name}' has no kernel template (not a pointwise op)")
        shape, dtype = tensor_info(op.results[0].type)
        operands = [lambda v=v: self._operand(v) for v in op.operands]
        try:
            expr = pointwise.emit(
                name, pointwise.OpEmitter(operands, dtype, self.index, self._block_shape(), self._let)
            )
        except ValueError as exc:
            raise PassError.at(op, f"{name}: {exc}") from None
        var = expr if expr.isidentifier() else self._let(expr, "v")
        self._define_value(op.results[0], pointwise.Value(var, dtype, len(shape)))

    def _emit_gather(self, op: Any) -> None:
        """A gather (gathers.py): the index per lane (loaded at its strides over the result's dims it spans,
        or computed like any operand), then the source, an input of the kernel, at its strides in the
        other dims plus the index times its stride in the indexed one."""
        try:
            if self.piece is not None:
                raise ValueError("a gather cannot compute a concatenation's piece")
            gather = gathers.read_gather(op)
            if not isinstance(gather.source, ir.BlockArgument):
                raise ValueError("its source must be an input of the kernel (it is read at the indices)")
            shape, dtype = tensor_info(op.results[0].type)
            if gather.span is None:
                index = self._operand(gather.index)
            elif isinstance(gather.index, ir.BlockArgument):
                a = gather.index.arg_number
                layout = self.layouts[a]
                strides = self._over_space(gather.index_strides(layout, len(shape)), shape)
                key = ("index", a, strides)
                if key not in self.known:
                    self.known[key] = self._access(_Strided(a, f"ix{next(self.counter)}", strides))
                index = pointwise.Value(self.known[key], layout.dtype, layout.rank)
            else:
                raise ValueError(
                    "its index must be an input of the kernel (it spans some of the result's dims)"
                )
        except ValueError as exc:
            raise PassError.at(op, f"{aten.aten_name(op)}: {exc}") from None
        source = self.layouts[gather.source.arg_number]
        strides = self._source_strides(op)
        step, bound = source.strides[gather.dim], source.shape[gather.dim]
        key = ("gather", gather.source.arg_number, strides, index.expr, step, bound, gather.wrap)
        if key not in self.known:
            item = _Gather(
                key[1], f"g{next(self.counter)}", strides, index.expr, index.dtype, step, bound, gather.wrap
            )
            self.known[key] = self._access(item)
        self._define_value(op.results[0], pointwise.Value(self.known[key], dtype, len(shape)))

    def _source_strides(self, op: Any) -> tuple[int, ...]:
        """The strides of gather `op`'s source over the iteration space, 0 along the dims it selects in."""
        gather = gathers.read_gather(op)
        strides = gather.source_strides(self.layouts[gather.source.arg_number])
        return self._over_space(strides, tensor_info(op.results[0].type)[0])

    def _over_space(self, strides: tuple[int, ...], shape: list[int]) -> tuple[int, ...]:
        """`strides` over `shape` (a gather's result), broadcast to the iteration space."""
        return Layout(tuple(shape), strides, 0, INT32).expand(self.shape).strides

    def _access(self, item: _Strided | _Gather) -> str:
        """Adds a load that a gather needs (rendered once the offsets are known); returns its name."""
        self.lines.append(item)
        self.named[item.name] = item.strides
        return item.name

    def _define_value(self, value: ir.Value, computed: Any) -> None:
        if self.piece is None:
            self.values[value] = computed
        else:
            self.piece_values[value, self.piece] = computed

    def _computes_a_piece(self, op: Any) -> bool:
        """Whether `op` computes (part of) a concatenation's piece: a shape that does not broadcast to the
        kernel's (fuse-pointwise puts such ops in a group only to feed a `cat`)."""
        if len(op.results) != 1 or tensor_info(op.results[0].type) is None:
            return False
        shape = tuple(tensor_info(op.results[0].type)[0])
        return len(shape) > len(self.shape) or any(
            n not in (1, m) for n, m in zip(shape[::-1], self.shape[::-1], strict=False)
        )

    def _in_piece(self, value: ir.Value, piece: tuple[int, int, int]) -> Any:
        """`value`, computed by deferred ops, within `piece` (dim, start, stop): their inputs are loaded as
        pieces of that range, so the kernel never writes the piece."""
        outer, self.piece = self.piece, piece
        try:
            return self._operand(value)
        finally:
            self.piece = outer

    def _emit_concat(self, op: Any) -> None:
        """`cat` along dim k: each lane takes the piece whose range holds its index along k (`tl.where`
        from the last piece in), each piece loaded only where it is taken."""
        shape, dtype = tensor_info(op.results[0].type)
        if tuple(shape) != self.shape:
            raise PassError.at(op, "a concatenation must compute the kernel's whole iteration space")
        pieces = list(op.operands[0].owner.operands)
        if len(pieces) == 1:  # a copy: the piece is the value
            piece = self._operand(pieces[0])
            expr = pointwise.convert(piece.expr, piece.dtype, dtype)
            var = expr if expr.isidentifier() else self._let(expr, "v")
            self.values[op.results[0]] = pointwise.Value(var, dtype, len(shape))
            return
        dim = pointwise.constant_value(op.operands[1]) % len(shape)
        if ("dim", dim) not in self.known:
            self.known["dim", dim] = f"k{dim}"
            self.lines.append(_DimIndex(dim))
        choices, start = [], 0
        for value in pieces:
            # A piece computed in the kernel at full size is one of size 1 along `dim` (its shape broadcasts
            # to the kernel's, so fuse-pointwise may recompute it there): its value at any index along
            # `dim` is the piece's one element, so it serves as is (an RNN's last step in `cat(steps)`).
            if (
                not isinstance(value, ir.BlockArgument)
                and value not in self.deferred
                and value not in self.values
            ):
                raise PassError.at(
                    op, "the pieces of a concatenation must be inputs of the kernel or computed in it"
                )
            piece_shape, piece_dtype = tensor_info(value.type)
            computed = self._in_piece(value, (dim, start, start + piece_shape[dim]))
            choices.append((start + piece_shape[dim], pointwise.convert(computed.expr, piece_dtype, dtype)))
            start += piece_shape[dim]
        expr = choices[-1][1]
        for stop, choice in reversed(choices[:-1]):
            expr = f"tl.where(k{dim} < {stop}, {choice}, {expr})"
        self.values[op.results[0]] = pointwise.Value(self._let(expr, "v"), dtype, len(shape))

    def _operand(self, value: ir.Value) -> Any:
        if self.piece is not None and value not in self.values:
            return self._piece_operand(value)
        if value in self.values:
            return self.values[value]
        a = value.arg_number
        if a not in self.loaded:
            shape, dtype = tensor_info(value.type)
            self.lines.append(_Load(a))
            self.loaded[a] = pointwise.Value(f"x{a}", dtype, len(shape))
        return self.loaded[a]

    def _piece_operand(self, value: ir.Value) -> Any:
        """`value` within the current piece: an input loaded as the piece, or a deferred op's result."""
        key = (value, self.piece)
        if key not in self.piece_values:
            if isinstance(value, ir.BlockArgument):
                dim, start, stop = self.piece
                piece_shape = [*self.shape[:dim], stop - start, *self.shape[dim + 1 :]]
                strides = self.layouts[value.arg_number].expand(tuple(piece_shape)).strides
                piece = _Piece(value.arg_number, dim, start, stop, f"p{next(self.counter)}", strides)
                self.lines.append(piece)
                self.pieces.append(piece)
                shape, dtype = tensor_info(value.type)
                self.piece_values[key] = pointwise.Value(piece.name, dtype, len(shape))
            else:
                op = self.deferred[value]
                if aten.aten_name(op).startswith("aten.arange"):  # (its values come from the kernel's index)
                    raise PassError.at(op, "an arange cannot compute a concatenation's piece in its kernel")
                self._emit(op, aten.aten_name(op))
        return self.piece_values[key]

    def _let(self, expr: str, prefix: str = "t") -> str:
        """A name for `expr`, the one it has already when computed before (expressions are pure)."""
        if expr not in self.known:
            self.known[expr] = name = f"{prefix}{next(self.counter)}"
            self.lines.append(f"{name} = {expr}")
        return self.known[expr]

    def _block_shape(self) -> str:
        """The shape of a block of values, as Triton source (for literals made into blocks)."""
        return str(self.block)

    # ------------------------------------------------------------------------------------ layout

    def _strides(self, a: int) -> tuple[int, ...]:
        """Buffer `a`'s strides over the iteration space (0 along the dims it broadcasts in)."""
        layout = self.layouts[a]
        try:
            strides = layout.expand(self.shape).strides
        except ValueError:
            raise ValueError(f"buffer {a} ({layout}) does not broadcast to {list(self.shape)}") from None
        if a >= len(self.args) and any(s == 0 for n, s in zip(self.shape, strides, strict=True) if n > 1):
            raise ValueError(f"output buffer {layout} overlaps itself")
        return strides

    def _render(self, stores: list[tuple[int, str]]) -> str:
        used = sorted(self.loaded) + [a for a, _ in stores]
        # Iterate in the memory order of the first output, so that neighbouring lanes store (and, for
        # inputs in the same layout, load) neighbouring elements whatever the logical order of dims.
        order = memory_order(self.shape, self._order_strides(stores[0][0]))
        per_access: dict[Any, tuple[int, ...]] = {a: self._strides(a) for a in used}
        per_access |= {p.name: p.strides for p in self.pieces}  # at the piece's strides
        per_access |= self.named
        dims, strides = merge_dims(
            [self.shape[d] for d in order], {k: tuple(s[d] for d in order) for k, s in per_access.items()}
        )
        pid = "tl.program_id(0).to(tl.int64)" if self.wide else "tl.program_id(0)"
        masked = needs_mask(self.numel, self.block)
        lines = [f"# {list(self.shape)}: {self.numel} elements, {self.grid} programs of {self.block}"]
        lines += self._dereference()
        lines.append(f"i = {pid} * {self.block} + tl.arange(0, {self.block})")
        if masked:
            lines.append(f"mask = i < {self.numel}")
        mask = "mask" if masked else ""
        index_lines, offset = indices("i", "d", dims, strides)
        lines += index_lines
        for line in self.lines:
            if isinstance(line, (_Load, _Strided, _Gather)):
                lines += load_lines(line, offset, mask, str(self.block), self.wide, mask)
            elif isinstance(line, _DimIndex):
                position = order.index(line.dim)
                inner = math.prod(self.shape[d] for d in order[position + 1 :])
                quotient = "i" if inner == 1 else f"i // {inner}"  # // and % bind left to right
                index = quotient if position == 0 else f"{quotient} % {self.shape[line.dim]}"
                lines.append(f"k{line.dim} = {index}")
            elif isinstance(line, _Piece):
                lines.append(self._load_piece(line, offset(line.name), masked))
            else:
                lines.append(line)
        return self._stored(lines, stores, offset, "mask" if masked else "")

    def _order_strides(self, a: int) -> tuple[int, ...]:
        """The strides whose memory order the lanes follow: those of output `a`, the first."""
        return self._strides(a)

    def _stored(self, lines: list[str], stores: list[tuple[int, str]], offset: Any, mask: str) -> str:
        """The kernel's body: `lines`, then each output stored at `offset(buffer)` under `mask`."""
        n_in = len(self.args)
        for a, value in stores:
            lines.append(f"tl.store(out{a - n_in} + {offset(a)}, {value}{f', mask={mask}' if mask else ''})")
        return "".join(f"    {line}\n" for line in lines)

    def _load_piece(self, piece: _Piece, offset: str, masked: bool) -> str:
        """The load of a concatenation's piece: its own offset less `start` along its dim, masked to the
        lanes whose index along that dim falls in its range."""
        shift = piece.start * piece.strides[piece.dim]
        # `i * 0`: a piece whose address does not vary (one element) still loads a block, under its mask
        address = f"in{piece.arg} + {offset if offset != '0' else 'i * 0'}{f' - {shift}' if shift else ''}"
        within = [f"k{piece.dim} >= {piece.start}"] if piece.start else []
        if piece.stop < self.shape[piece.dim]:
            within.append(f"k{piece.dim} < {piece.stop}")
        mask = " & ".join([*(f"({c})" for c in within), *(["mask"] if masked else [])])
        return f"{piece.name} = tl.load({address}{f', mask={mask}' if mask else ''})"

    def _template_kernel(
        self, lines: list[str], grid: int, num_warps: int, op: str, num_stages: int = 1
    ) -> Kernel:
        """The kernel of a template writer (attention_kernel.py, matvec_kernel.py): outputs `out0`, ..., and
        source `lines` written whole."""
        inputs = len(self.layouts) - len(self.results)
        return Kernel(
            params=[f"in{b}" for b in range(inputs)] + [f"out{j}" for j in range(len(self.results))],
            body="".join(f"    {line}\n" for line in lines),
            signature=[
                self._signature(x, off is not None)
                for x, off in zip(self.layouts, self.indirect, strict=True)
            ],
            grid=grid,
            num_warps=num_warps,
            ops=[op],
            num_stages=num_stages,
        )

    def _dereference(self) -> list[str]:
        """Buffers reached through the per-call table: the parameter points at the slot holding the address."""
        lines = []
        n_in = len(self.layouts) - len(self.results)
        for a, (layout, offset) in enumerate(zip(self.layouts, self.indirect, strict=True)):
            if offset is None:
                continue
            name = f"in{a}" if a < n_in else f"out{a - n_in}"
            pointer = f"tl.load({name}).to(tl.pointer_type(tl.{_TL_TYPES[layout.dtype.triton]}))"
            lines.append(f"{name} = {pointer}{f' + {offset}' if offset else ''}")
            if self._aligned(layout):
                lines.append(f"{name} = tl.multiple_of({name}, 16)")
        return lines

    @staticmethod
    def _aligned(layout: Layout) -> bool:
        """Buffers start 256-byte aligned (arena, results, constants) or are checked by the runtime
        (arguments, outputs), so only the layout's offset decides whether the first element is 16-aligned."""
        return layout.offset * layout.dtype.itemsize % 16 == 0

    @classmethod
    def _signature(cls, layout: Layout, indirect: bool) -> str:
        """`*fp32:16`: a pointer to the first element, 16-byte aligned; `**fp32:16`: a pointer to the table
        slot holding the address of the buffer's storage (the alignment promise is the buffer's)."""
        return f"{'**' if indirect else '*'}{layout.dtype.triton}{':16' if cls._aligned(layout) else ''}"


@dataclasses.dataclass(frozen=True)
class _Tile:
    """The merged dims of a transposing kernel (in the first output's memory order), every buffer's strides
    over them, and `dim`, the dim tiled against the innermost."""

    dims: list[int]
    strides: dict[int, list[int]]
    dim: int


_TILE_MIN = 8  # both tiled dims at least this long: shorter runs gain little from coalescing
_TILE_SIDE = 32  # elements of a tile along the transposed dim, at most (128 bytes of float32)
_TILE_ELEMENTS = 1024


def transposing_tile(fn: Any, layouts: list[Layout]) -> _Tile | None:
    """The tiling of a pointwise kernel in which some buffer steps with stride 1 along a merged dim other
    than the innermost of the first output's memory order; None for kernels that do not transpose, or
    that index by position (gathers, concatenations, aranges: they read the 1-D kernel's linear index)."""
    block = fn.regions[0].blocks[0]
    ops = list(block.operations)[:-1]
    names = [aten.aten_name(op) or "" for op in ops]
    if any(n in gathers.GATHERS or n == pointwise.CONCAT or n.startswith("aten.arange") for n in names):
        return None
    shape = tuple(tensor_info(block.operations[len(ops)].operands[0].type)[0])
    try:
        strides = {a: layout.expand(shape).strides for a, layout in enumerate(layouts)}
    except ValueError:
        return None  # (the 1-D writer reports it)
    first = strides[len(block.arguments)]
    order = memory_order(shape, first)
    dims, merged = merge_dims(
        [shape[k] for k in order], {a: tuple(s[k] for k in order) for a, s in strides.items()}
    )
    inner = len(dims) - 1
    for s in merged.values():
        dim = next((k for k in range(inner) if s[k] == 1), None)
        if dim is not None and s[inner] > 1 and min(dims[dim], dims[inner]) >= _TILE_MIN:
            return _Tile(dims, merged, dim)
    return None


class TileWriter(Writer):
    """Writes a transposing pointwise kernel in 2-D tiles (module docstring): program p takes a tile of
    `rows` along the tiled dim by `cols` along the innermost, at one index of every other dim."""

    def __init__(self, fn: Any, layouts: list[Layout], tile: _Tile, indirect: list[int | None]) -> None:
        super().__init__(fn, layouts, _TILE_ELEMENTS, indirect)
        self.tile = tile
        dims = tile.dims
        self.rows = min(pow2(dims[tile.dim]), _TILE_SIDE)
        self.cols = min(pow2(dims[-1]), _TILE_ELEMENTS // self.rows)
        self.num_warps = max(1, self.rows * self.cols // 256)
        # programs in row-major order over the other dims, then the row blocks, then the column blocks
        self.programs = [
            *(n for k, n in enumerate(dims[:-1]) if k != tile.dim),
            -(-dims[tile.dim] // self.rows),
            -(-dims[-1] // self.cols),
        ]
        self.grid = math.prod(self.programs)

    def _block_shape(self) -> str:
        return f"{self.rows}, {self.cols}"

    def _render(self, stores: list[tuple[int, str]]) -> str:
        for a, _ in stores:
            self._strides(a)  # (refuses an output that overlaps itself)
        dims, dim, inner = self.tile.dims, self.tile.dim, len(self.tile.dims) - 1
        lines = [
            f"# {list(self.shape)} as {dims}: tiles of {self.rows} x {self.cols} along dims {dim} and {inner}"
        ]
        lines += self._dereference()
        lines.append(f"p = {'tl.program_id(0).to(tl.int64)' if self.wide else 'tl.program_id(0)'}")
        names = [f"d{k}" for k in range(inner) if k != dim] + ["r", "c"]
        for j, (name, count) in enumerate(zip(names, self.programs, strict=True)):
            after = math.prod(self.programs[j + 1 :])
            quotient = "p" if after == 1 else f"p // {after}"
            if count > 1:
                lines.append(f"{name} = {quotient if j == 0 else f'{quotient} % {count}'}")
            else:
                lines.append(f"{name} = 0")
        lines.append(f"d{dim} = r * {self.rows} + tl.arange(0, {self.rows})[:, None]")
        lines.append(f"d{inner} = c * {self.cols} + tl.arange(0, {self.cols})[None, :]")
        bounds = [
            f"(d{k} < {dims[k]})" for k, side in ((dim, self.rows), (inner, self.cols)) if dims[k] % side
        ]
        mask = "mask" if bounds else ""
        if bounds:
            lines.append(f"mask = {' & '.join(bounds)}")

        def offset(a: int) -> str:
            return " + ".join(term(f"d{k}", s) for k, s in enumerate(self.tile.strides[a]) if s) or "0"

        for line in self.lines:
            if isinstance(line, _Load):
                lanes = any(self.tile.strides[line.arg][k] for k in (dim, inner))
                lines += load_lines(line, offset, mask, self._block_shape(), self.wide, lanes=lanes)
            else:
                lines.append(line)
        return self._stored(lines, stores, offset, mask)


def memory_order(shape: tuple[int, ...], strides: tuple[int, ...]) -> list[int]:
    """The dims of `shape`, outermost first in memory at `strides` (size-1 dims first: they never move)."""
    return sorted(range(len(shape)), key=lambda k: -strides[k] if shape[k] > 1 else -math.inf)


def spans_overflow(layouts: list[Layout]) -> bool:
    """Whether an offset within some buffer (at most its span) can exceed 32 bits."""
    return any(sum((n - 1) * s for n, s in zip(x.shape, x.strides, strict=True)) > INT32_MAX for x in layouts)


def load_lines(
    item: _Load | _Strided | _Gather,
    offset: Any,
    mask: str,
    block: str,
    wide: bool,
    index_mask: str = "",
    lanes: bool = True,
) -> list[str]:
    """The lines loading `item` at `offset(key)` under `mask` (source, "" for none) in blocks of `block`
    (source of a shape); an input read at one element for all lanes (at offset 0, or where `lanes` says
    the offset varies along no lane: a tile's operand indexed by the program's dims alone) is loaded once,
    unmasked (its address is in range whatever the lanes; Triton refuses a block mask on one pointer), and
    broadcast (the interpreter mishandles 0-d tensors). A gather checks its index (gathers.py) under
    `index_mask`, the mask of the index's lanes: negatives counted from the end where they may be, lanes
    out of range stop the kernel and load nothing."""
    if isinstance(item, _Load):
        name, off = f"x{item.arg}", offset(item.arg)
    else:
        name, off = item.name, offset(item.name)
    if not isinstance(item, _Gather):
        if off == "0" or not lanes:
            address = f"in{item.arg}" if off == "0" else f"in{item.arg} + {off}"
            return [f"{name} = tl.broadcast_to(tl.load({address}), [{block}])"]
        return [f"{name} = tl.load(in{item.arg} + {off}{f', mask={mask}' if mask else ''})"]
    n = name[1:]
    lines = checked_index(n, item.index, item.index_dtype, item.bound, item.wrap, wide, index_mask)
    address = f"in{item.arg} + {'' if off == '0' else f'{off} + '}{term(f'at{n}', item.step)}"
    return [*lines, f"{name} = tl.load({address}, mask={conjunction(mask, f'ok{n}')})"]


def checked_index(
    n: str, index: str, dtype: DType, bound: int, wrap: bool, wide: bool, index_mask: str
) -> list[str]:
    """The lines defining `ok<n>` (whether the lane's `index` lies in [0, bound), after counting negatives
    from the end where `wrap`) and `at<n>`, the index to address with, which stops the kernel where a lane
    under `index_mask` is out of range (gathers.py)."""
    lines = []
    if wrap or dtype.itemsize < INT32.itemsize:  # (narrow indices are compared in int32)
        wider = dtypes.promote(dtype, INT32)
        value = pointwise.convert(index, dtype, wider)
        wrapped = f"tl.where({value} < 0, {value} + {bound}, {value})" if wrap else value
        index, dtype = f"j{n}", wider
        lines.append(f"{index} = {wrapped}")
    at = pointwise.convert(index, dtype, INT64 if wide else INT32)
    return [
        *lines,
        f"ok{n} = ({index} >= 0) & ({index} < {bound})",
        f"at{n} = {gathers.TRAP}({f'ok{n} | ~{index_mask}' if index_mask else f'ok{n}'}, {at})",
    ]


def merge_dims(
    sizes: list[int], per_buffer: dict[Any, tuple[int, ...]]
) -> tuple[list[int], dict[Any, list[int]]]:
    """`sizes` with size-1 dims dropped and neighbours merged where every buffer steps through them
    contiguously; each buffer's stride per merged dim."""
    dims: list[int] = []
    strides: dict[int, list[int]] = {a: [] for a in per_buffer}
    for k, size in enumerate(sizes):
        if size == 1:
            continue
        if dims and all(strides[a][-1] == per_buffer[a][k] * size for a in per_buffer):
            dims[-1] *= size
            for a in per_buffer:
                strides[a][-1] = per_buffer[a][k]
            continue
        dims.append(size)
        for a in per_buffer:
            strides[a].append(per_buffer[a][k])
    return dims, strides


def indices(var: str, prefix: str, dims: list[int], strides: dict[Any, list[int]]) -> tuple[list[str], Any]:
    """Lines computing the index along each merged dim that some buffer moves along, from `var`, the
    row-major index over `dims`; and each buffer's offset (a buffer laid out like `dims` uses `var`)."""
    inner = [math.prod(dims[j + 1 :]) for j in range(len(dims))]
    linear = {a for a in strides if strides[a] == inner}
    names, lines = {}, []
    for j, size in enumerate(dims):
        if not any(strides[a][j] for a in strides if a not in linear):
            continue
        quotient = var if inner[j] == 1 else f"{var} // {inner[j]}"
        names[j] = quotient if j == 0 else f"{quotient} % {size}"
        if names[j] != var:
            lines.append(f"{prefix}{j} = {names[j]}")
            names[j] = f"{prefix}{j}"

    def offset(a: int) -> str:
        if a in linear:
            return var
        terms = [names[j] if s == 1 else f"{names[j]} * {s}" for j, s in enumerate(strides[a]) if s]
        return " + ".join(terms) or "0"

    return lines, offset


def term(index: str, stride: int) -> str:
    """`index` times `stride`, as source."""
    return index if stride == 1 else f"{index} * {stride}"


def conjunction(*conditions: str | bool) -> str:
    """The conditions that are not empty (or False) joined by `&`, as source; "" if none."""
    kept = [c for c in conditions if c]
    return " & ".join(f"({c})" for c in kept) if len(kept) > 1 else "".join(kept)


def needs_mask(count: int, block: int) -> bool:
    """Whether blocks of `block` lanes covering `count` items need a mask: when `block` does not divide
    `count`, and when there are none (an empty tensor still gets one program, whose lanes must not
    touch memory)."""
    return count % block != 0 or count == 0


def zero_masked(mask: str) -> str:
    """The keyword arguments of a load under `mask` (none if empty), zero where masked off."""
    return f", mask={mask}, other=0.0" if mask else ""


def pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _row_blocks(rows: int, cols: int, inner: bool, max_rblock: int) -> tuple[int, int, int]:
    """(XBLOCK, RBLOCK, num_warps) for a reduction kernel. When the columns are contiguous (inner), a
    program takes whole rows if they fit in `max_rblock` (persistent), as many as keep it near
    `_ROW_ELEMENTS`, else loops over blocks of `_LOOP_BLOCK` columns. When the rows are contiguous, each
    load should coalesce along the rows: a program takes whole rows if 16 of them fit in `_ROW_ELEMENTS`
    (persistent: one pass over memory, where a loop pays a memory round trip per step; a squeeze-excitation
    mean over 56 columns of 896 rows ran 9.4 us looping over blocks of 64 x 16 on an H200), else 64 rows
    and fewer columns, looping. Warps, measured on an H200: a warp per 128 elements for whole rows (BERT's
    and GPT-2's layer norms and softmax run 5-25% faster with 8 warps than with 4 for blocks of 1024), 16
    when looping (twice as fast as 4 and 8: a few programs walk long rows)."""
    if inner:
        persistent = pow2(cols) <= max_rblock
        rblock = pow2(cols) if persistent else min(_LOOP_BLOCK, max_rblock)
        xblock = min(pow2(rows), max(1, _ROW_ELEMENTS // rblock)) if persistent else 1
    elif pow2(cols) <= min(max_rblock, _ROW_ELEMENTS // _COALESCED_ROWS):
        rblock = pow2(cols)
        xblock = min(pow2(rows), _ROW_ELEMENTS // rblock)
        persistent = True
    else:
        xblock = min(pow2(rows), 64)
        rblock = min(pow2(cols), max(1, _ROW_ELEMENTS // xblock), max_rblock)
        persistent = rblock >= cols
    warps = min(8, max(1, xblock * rblock // 128)) if persistent else 16
    return xblock, rblock, warps


@dataclasses.dataclass(frozen=True)
class _Line:
    """`name = expr`; `deps` are the names it reads."""

    name: str
    expr: str
    deps: frozenset[str]


@dataclasses.dataclass(frozen=True)
class _Reduce:
    """`name` = the `kind` reduction ("sum", "max", "min") of `arg` over each row's columns."""

    name: str
    kind: str
    arg: str
    dtype: DType


class RowWriter(Writer):
    """Writes a reduction kernel: a fused function with reductions, rows by columns (module docstring)."""

    def __init__(self, fn: Any, layouts: list[Layout], max_rblock: int, indirect: list[int | None]) -> None:
        self._read(fn, layouts, indirect)
        spaces = set()
        for op in self.body_ops:
            name = aten.aten_name(op)
            if name in reductions.REDUCTIONS:
                shape = tuple(tensor_info(op.operands[0].type)[0])
                args = [pointwise.constant_value(v) for v in op.operands]
                spaces.add((shape, reductions.reduced_dims(name, args, len(shape))))
        if len(spaces) != 1 or None in next(iter(spaces)):
            raise ValueError(
                f"the reductions of a fused function must share one iteration space, not {spaces}"
            )
        self.shape, self.reduced = spaces.pop()
        self.row_shape = tuple(1 if d in self.reduced else n for d, n in enumerate(self.shape))
        self.rows = math.prod(self.row_shape)
        self.cols = math.prod(self.shape[d] for d in self.reduced)
        # The columns are contiguous if an input steps through a reduced dim with stride 1 (with no
        # input along them, if the last dim is reduced); a gather's source counts at its strides there.
        gathered = [op for op in self.body_ops if aten.aten_name(op) in gathers.GATHERS]
        indirect = {v.arg_number for op in gathered for v in gathers.read_gather(op).in_memory}
        along = [self._strides(a) for a in range(len(self.args)) if a not in indirect]
        along = [s for s in along + [self._source_strides(op) for op in gathered] if self._varies(s)]
        inner = any(s[d] == 1 for s in along for d in self.reduced)
        inner = inner or (not along and len(self.shape) - 1 in self.reduced)
        self.xblock, self.rblock, self.num_warps = _row_blocks(self.rows, self.cols, inner, max_rblock)
        self.persistent = self.rblock >= self.cols
        self.grid = max(1, -(-self.rows // self.xblock))
        self.wide = self.grid * self.xblock * self.cols > INT32_MAX or spans_overflow(layouts)
        self.index = pointwise.Value("lin", INT64 if self.wide else INT32, 1)
        self.defined: set[str] = set()
        self.per_element: set[str] = set()  # names of values that vary along the columns
        self.level = "element"  # of the op being emitted: "element" or "row"

    # ------------------------------------------------------------------------------------ values

    def _emit(self, op: Any, name: str) -> None:
        if name in reductions.REDUCTIONS:
            self.level = "row"
            self._emit_reduction(op, name)
            return
        if name not in pointwise.POINTWISE and name not in gathers.GATHERS:
            raise PassError.at(
                op, f"'{op.operation.name}' has no kernel template (not a pointwise op, gather or reduction)"
            )
        self.level = "row" if tuple(tensor_info(op.results[0].type)[0]) == self.row_shape else "element"
        super()._emit(op, name)

    def _emit_reduction(self, op: Any, name: str) -> None:
        results = [tensor_info(r.type) for r in op.results]
        operands = [lambda v=v: self._operand(v) for v in op.operands]

        def reduce(kind: str, expr: str) -> str:
            return self._reduce(kind, expr, k.dtype)

        k = reductions.ReductionEmitter(
            operands, results[0][1], self.index, self._block_shape(), self._let, reduce, self.cols
        )
        try:
            exprs = reductions.emit(name, k)
        except ValueError as exc:
            raise PassError.at(op, f"{name}: {exc}") from None
        for result, (shape, dtype), expr in zip(op.results, results, exprs, strict=True):
            expr = pointwise.convert(expr, k.dtype, dtype)
            var = expr if expr.isidentifier() else self._let(expr, "v")
            self.values[result] = pointwise.Value(var, dtype, len(shape))

    def _operand(self, value: ir.Value) -> Any:
        first = value not in self.values and value.arg_number not in self.loaded
        operand = super()._operand(value)
        if first:
            self._define(operand.expr, self._per_element(value.arg_number))
        return operand

    def _let(self, expr: str, prefix: str = "t") -> str:
        names = set(_NAMES.findall(expr))
        if "lin" in names and "lin" not in self.defined:  # arange reads the linear index
            self.lines.append(_Load(-1))
            self._define("lin", True)
        deps = frozenset(names & self.defined)
        if expr in self.known:  # computed already (the mean that var and std of x share)
            return self.known[expr]
        name = f"{prefix}{next(self.counter)}"
        self.lines.append(_Line(name, expr, deps))
        self._define(name, bool(deps & self.per_element) or (not deps and self.level == "element"))
        self.known[expr] = name
        return name

    def _reduce(self, kind: str, expr: str, dtype: DType) -> str:
        arg = expr if expr.isidentifier() else self._let(expr)
        if kind != "sum":
            self._round_product(arg, dtype)
        if (kind, arg) not in self.known:
            self.known[kind, arg] = name = f"r{next(self.counter)}"
            self.lines.append(_Reduce(name, kind, arg, dtype))
            self._define(name, False)
        return self.known[kind, arg]

    def _round_product(self, name: str, dtype: DType) -> None:
        """Makes the value `name`, if a product, rounded before any use (`mul_rn`). A maximum or minimum is
        subtracted from the values it reduces (softmax: `exp(x - max(x))`), and contraction would fuse
        the product into that subtraction (`fma(a, b, -max)`), which then yields the product's rounding
        error instead of eager's 0 at the maximum: `exp` of up to half an ulp of x, inf for a row of
        `finfo.min` masks scaled after they were added (CodeGen's attention in transformers 5.17 on
        the H200: every logit of a padded position NaN)."""
        for i, item in enumerate(self.lines):
            if isinstance(item, _Line) and item.name == name:
                if rounded := pointwise.rounded_product(item.expr, dtype):
                    self.lines[i] = dataclasses.replace(item, expr=rounded)
                return

    def _access(self, item: _Strided | _Gather) -> str:
        name = super()._access(item)
        index = item.deps if isinstance(item, _Gather) else frozenset()
        self._define(name, self._varies(item.strides) or bool(index & self.per_element))
        return name

    def _define(self, name: str, per_element: bool) -> None:
        self.defined.add(name)
        if per_element:
            self.per_element.add(name)

    def _block_shape(self) -> str:
        return f"{self.xblock}, {self.rblock if self.level == 'element' else 1}"

    # ------------------------------------------------------------------------------------ layout

    def _strides(self, a: int) -> tuple[int, ...]:
        """Buffer `a`'s strides over the iteration space (-1: the linear index); a per-row output has
        stride 0 along the reduced dims."""
        if a < 0:
            return contiguous_strides(self.shape)
        layout = self.layouts[a]
        if a < len(self.args) or layout.shape == self.shape:
            return super()._strides(a)
        if layout.rank < len(self.shape):  # a reduction's result without the reduced dims
            for dim in self.reduced:
                layout = layout.unsqueeze(dim)
        strides = layout.expand(self.row_shape).strides
        if any(s == 0 for n, s in zip(self.row_shape, strides, strict=True) if n > 1):
            raise ValueError(f"output buffer {self.layouts[a]} overlaps itself")
        return tuple(0 if d in self.reduced else s for d, s in enumerate(strides))

    def _per_element(self, a: int | str) -> bool:
        """Whether buffer `a` (or the load a gather added, by name) varies along the columns."""
        return self._varies(self.named[a] if isinstance(a, str) else self._strides(a))

    def _varies(self, strides: tuple[int, ...]) -> bool:
        """Whether an access at `strides` varies along the columns (an empty reduced dim counts: its loads
        need the column mask, which masks every lane)."""
        return any(strides[d] for d in self.reduced if self.shape[d] != 1)

    # ------------------------------------------------------------------------------------ source

    def _render(self, stores: list[tuple[int, str]]) -> str:
        row_lines = self._index([a for a, _ in stores])
        pid = "tl.program_id(0).to(tl.int64)" if self.wide else "tl.program_id(0)"
        mode = "whole rows" if self.persistent else "looping over columns"
        lines = [
            f"# {list(self.shape)} reduced over {list(self.reduced)}: {self.rows} rows of {self.cols}, "
            f"{self.grid} programs of {self.xblock} x {self.rblock}, {mode}",
            *self._dereference(),
            f"row = {pid} * {self.xblock} + tl.arange(0, {self.xblock})[:, None]",
        ]
        if self.row_mask:
            lines.append(f"xmask = row < {self.rows}")
        lines += row_lines
        n_in = len(self.args)
        element = [(a, v) for a, v in stores if self.layouts[a].shape == self.shape]
        element_stores = [
            f"tl.store(out{a - n_in} + {self._offset(a)}, {v}{self._mask(True)})" for a, v in element
        ]
        if self.persistent:
            lines += self._whole_rows()
            lines += element_stores
        else:
            for item in self.lines:
                if isinstance(item, _Reduce):
                    lines += self._looped(item)
                elif self._name(item) not in self.per_element:
                    lines += self._source(item)
            if element:
                lines += self._loop([v for _, v in element], element_stores)
        for a, value in stores:
            if (a, value) not in element:
                lines.append(f"tl.store(out{a - n_in} + {self._offset(a)}, {value}{self._mask(False)})")
        return "".join(f"    {line}\n" for line in lines)

    def _index(self, outputs: list[int]) -> list[str]:
        """Sets each buffer's row and column offsets and the masks; returns the lines computing the row indices."""
        used = sorted(self.loaded) + ([-1] if "lin" in self.defined else []) + outputs
        strides = {a: self._strides(a) for a in used} | self.named
        keep = [d for d in range(len(self.shape)) if d not in self.reduced]
        row_lines, self.row_offset = indices(
            "row",
            "rd",
            *merge_dims(
                [self.shape[d] for d in keep], {a: tuple(s[d] for d in keep) for a, s in strides.items()}
            ),
        )
        self.col_lines, self.col_offset = indices(
            "col",
            "cd",
            *merge_dims(
                [self.shape[d] for d in self.reduced],
                {a: tuple(s[d] for d in self.reduced) for a, s in strides.items()},
            ),
        )
        self.row_mask = needs_mask(self.rows, self.xblock)
        self.col_mask = needs_mask(self.cols, self.rblock)
        return row_lines

    def _whole_rows(self) -> list[str]:
        """The lines of a persistent kernel computing every value of its rows: columns, loads, the rest."""
        lines = self._columns("0")
        # Loads first, so their latencies overlap instead of one following each reduction (a layer norm's
        # weight and bias loaded after its statistics: 1.75 against 1.62 us on the H200,
        # bench/probes/probe_vendor_params.py).
        for item in sorted(self.lines, key=lambda item: not isinstance(item, (_Load, _Strided))):
            lines += self._source(item)
        return lines

    def _columns(self, start: str) -> list[str]:
        """The column index (from `start`), masks and per-dim column indices of a block of columns."""
        lines = [f"col = {'' if start == '0' else f'{start} + '}tl.arange(0, {self.rblock})[None, :]"]
        if self.wide:
            lines.append("col = col.to(tl.int64)")
        if self.col_mask:
            lines.append(f"cmask = col < {self.cols}")
        if self.row_mask and self.col_mask:
            lines.append("mask = xmask & cmask")
        return lines + self.col_lines

    def _mask(self, per_element: bool) -> str:
        mask = self._mask_name(per_element)
        return f", mask={mask}" if mask else ""

    def _mask_name(self, per_element: bool) -> str:
        if per_element and self.col_mask:
            return "mask" if self.row_mask else "cmask"
        return "xmask" if self.row_mask else ""

    def _offset(self, a: int | str) -> str:
        terms = [self.row_offset(a), self.col_offset(a) if self._per_element(a) else "0"]
        return " + ".join(t for t in terms if t != "0") or "0"

    @staticmethod
    def _name(item: Any) -> str:
        if isinstance(item, _Load):
            return "lin" if item.arg < 0 else f"x{item.arg}"
        return item.name

    def _source(self, item: Any) -> list[str]:
        """The source of one line, load or (persistent) reduction."""
        if isinstance(item, _Line):
            return [f"{item.name} = {item.expr}"]
        if isinstance(item, _Reduce):
            return [f"{item.name} = tl.reduce({self._masked(item)}, 1, {COMBINE[item.kind]}, keep_dims=True)"]
        if isinstance(item, _Load) and item.arg < 0:
            return [f"lin = {self._offset(-1)}"]
        mask = self._mask_name(self._name(item) in self.per_element)
        index_mask = self._mask_name(isinstance(item, _Gather) and item.index in self.per_element)
        return load_lines(item, self._offset, mask, f"{self.xblock}, 1", self.wide, index_mask)

    def _masked(self, item: _Reduce) -> str:
        """The reduction's argument over a whole block, the identity where columns are masked off."""
        if self.col_mask:
            return f"tl.where(cmask, {item.arg}, {_IDENTITY[item.kind]})"
        if item.arg in self.per_element:
            return item.arg
        return f"tl.broadcast_to({item.arg}, [{self.xblock}, {self.rblock}])"

    def _looped(self, item: _Reduce) -> list[str]:
        """A reduction over longer rows: accumulate block by block, then reduce the accumulator."""
        acc = f"acc{item.name[1:]}"
        full = f"tl.full([{self.xblock}, {self.rblock}], {_IDENTITY[item.kind]}, {pointwise.tl_type(item.dtype)})"
        step = _ACCUMULATE[item.kind].format(acc=acc, x=self._masked(item))
        return [
            f"{acc} = {full}",
            *self._loop([item.arg], [f"{acc} = {step}"]),
            f"{item.name} = tl.reduce({acc}, 1, {COMBINE[item.kind]}, keep_dims=True)",
        ]

    def _loop(self, names: list[str], tail: list[str]) -> list[str]:
        """A loop over the column blocks computing the per-element values `names` need, then `tail`."""
        needed, chosen = set(names), []
        for item in reversed(self.lines):
            name = self._name(item)
            if name in needed and name in self.per_element:
                chosen.append(item)
                needed |= item.deps if isinstance(item, (_Line, _Gather)) else set()
        body = self._columns("c0")
        for item in reversed(chosen):
            body += self._source(item)
        header = f"for c0 in range(0, {self.cols}, {self.rblock}):"
        return [header, *(f"    {line}" for line in body + tail)]
