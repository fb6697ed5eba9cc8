"""codegen-triton: write a Triton kernel for every `pygraph.kernel` launch of a fused function.

A kernel is specialized to the layouts of the launch's buffers: sizes, strides and the element count are
constants in its source, and each pointer argument points at its buffer's first element. So one fused
function launched on buffers of different layouts gets one kernel per layout, and launches whose kernels
come out identical share one `pygraph.triton_kernel`.

The kernel is 1-D over the iteration space (the fused function's result shape), in row-major order:
program p handles elements [p * BLOCK, (p + 1) * BLOCK), masked when BLOCK does not divide the count.
Each buffer is read or written at its own strides (a broadcast input has stride 0), computed from the
linear index by division and remainder by the sizes of the iteration space's dims, after merging the
dims every buffer walks contiguously: a buffer laid out like the iteration space is addressed by the
linear index itself, which lets Triton vectorize. Indices are 32-bit unless an offset can exceed 2**31-1.
Values are computed by the `pointwise` table, one op at a time; inputs are loaded where first used.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

from ..ir import aten, attrs, dtypes
from ..ir import dialect as d
from ..ir._mlir import func, ir
from ..ir.buffers import buffer_layout, indirection_offset, reached_through_table
from ..ir.layout import Layout
from ..ir.torch_types import tensor_info
from . import pointwise
from .base import Pass, PassError, main_function, walk

INT32, INT64 = dtypes.BY_NAME["int32"], dtypes.BY_NAME["int64"]
_INT32_MAX = 2**31 - 1
_TL_TYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64", "i64": "int64",
             "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8", "i1": "int1"}  # fmt: skip
_HEADER = "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"


@dataclasses.dataclass
class CodegenTriton(Pass):
    """Generates the Triton kernels of a plan and erases the fused functions they replace."""

    name = "codegen-triton"
    summary = "generate a Triton kernel for each launch of a fused function, specialized to its buffers"
    max_block: int = 1024  # elements per program (a power of two, at least 128)

    def run(self, module: ir.Module) -> None:
        if self.max_block < 128 or self.max_block & (self.max_block - 1):
            raise ValueError(f"max-block must be a power of two of at least 128, got {self.max_block}")
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
                try:
                    kernel = _Writer(
                        callee, [buffer_layout(a) for a in op.args], self.max_block, indirect
                    ).write()
                except PassError as exc:
                    errors.extend(exc.errors)
                    continue
                except ValueError as exc:
                    errors.append((op.location, f"cannot generate @{name}: {exc}"))
                    continue
                key = (*kernel.params, *kernel.signature, str(kernel.num_warps), kernel.body)
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
class _Kernel:
    params: list[str]
    body: str  # the source after the `def` line
    signature: list[str]
    grid: int
    num_warps: int
    ops: list[str]  # short names of the ops it computes, for its symbol


def _add_kernel(kernel: _Kernel, symbols: dict[str, Any], main: Any) -> str:
    """Adds a `pygraph.triton_kernel` (before @main, in generation order) and returns its symbol."""
    stem = "_".join(dict.fromkeys(kernel.ops)) if kernel.ops else "copy"
    name = next(n for i in itertools.count() if (n := f"k{i}_{stem}") not in symbols)
    source = f"{_HEADER}def {name}({', '.join(kernel.params)}):\n{kernel.body}"
    fields = {
        "sym_name": attrs.string(name),
        "source": attrs.string(source),
        "entry": attrs.string(name),
        "signature": attrs.str_array(kernel.signature),
        "num_warps": attrs.i64(kernel.num_warps),
        "num_stages": attrs.i64(1),
    }
    with ir.InsertionPoint(main), main.location:
        symbols[name] = d.create(d.TritonKernelOp, [], fields)
    return name


@dataclasses.dataclass(frozen=True)
class _Load:
    """A load of input `arg`, rendered once the offsets are known (they depend on which inputs are read)."""

    arg: int


class _Writer:
    """Writes one kernel: a fused function specialized to the layouts of its launch's buffers."""

    def __init__(self, fn: Any, layouts: list[Layout], max_block: int, indirect: list[int | None]) -> None:
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
        self.shape = tuple(types[len(self.args)][0])
        if any(tuple(info[0]) != self.shape for info in types[len(self.args) :]):
            raise ValueError("the outputs of a fused function must share one shape")
        self.layouts = layouts
        self.indirect = indirect  # per buffer: None, or the element offset from the address in its table slot
        self.numel = math.prod(self.shape)
        self.block = max(128, min(max_block, 1 << max(self.numel - 1, 0).bit_length()))
        self.grid = max(1, -(-self.numel // self.block))
        self.lines: list[str | _Load] = []
        self.values: dict[ir.Value, Any] = {}
        self.loaded: dict[int, pointwise.Value] = {}
        self.counter = itertools.count()
        # 64-bit indices only when the linear index or an offset (at most a buffer's span) can overflow.
        self.wide = self.grid * self.block > _INT32_MAX or any(
            sum((n - 1) * s for n, s in zip(x.shape, x.strides, strict=True)) > _INT32_MAX for x in layouts
        )
        self.index = pointwise.Value("i", INT64 if self.wide else INT32, 1)

    def write(self) -> _Kernel:
        ops = []
        for op in self.body_ops:
            if self._constant(op):
                continue
            name = aten.aten_name(op)
            if name not in pointwise.POINTWISE:
                raise PassError.at(op, f"'{op.operation.name}' has no kernel template (not a pointwise op)")
            self._emit(op, name)
            ops.append(name.split(".")[1].strip("_"))
        n_in = len(self.args)
        stores = [(n_in + j, self._operand(result).expr) for j, result in enumerate(self.results)]
        dims, strides = self._dims(sorted(self.loaded) + [a for a, _ in stores])
        return _Kernel(
            params=[f"in{a}" for a in range(n_in)] + [f"out{j}" for j in range(len(self.results))],
            body=self._render(dims, strides, stores),
            signature=[
                self._signature(x, off is not None)
                for x, off in zip(self.layouts, self.indirect, strict=True)
            ],
            grid=self.grid,
            num_warps=min(8, max(1, self.block // 256)),
            ops=ops,
        )

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
        shape, dtype = tensor_info(op.results[0].type)
        operands = [lambda v=v: self._operand(v) for v in op.operands]
        try:
            expr = pointwise.emit(
                name, pointwise.OpEmitter(operands, dtype, self.index, self.block, self._let)
            )
        except ValueError as exc:
            raise PassError.at(op, f"{name}: {exc}") from None
        var = expr if expr.isidentifier() else self._let(expr, "v")
        self.values[op.results[0]] = pointwise.Value(var, dtype, len(shape))

    def _operand(self, value: ir.Value) -> Any:
        if value in self.values:
            return self.values[value]
        a = value.arg_number
        if a not in self.loaded:
            shape, dtype = tensor_info(value.type)
            self.lines.append(_Load(a))
            self.loaded[a] = pointwise.Value(f"x{a}", dtype, len(shape))
        return self.loaded[a]

    def _let(self, expr: str, prefix: str = "t") -> str:
        name = f"{prefix}{next(self.counter)}"
        self.lines.append(f"{name} = {expr}")
        return name

    # ------------------------------------------------------------------------------------ layout

    def _dims(self, used: list[int]) -> tuple[list[int], dict[int, list[int]]]:
        """The iteration space's dims, size-1 dims dropped and neighbours merged where every used buffer
        steps through them contiguously; each used buffer's stride per merged dim."""
        per_buffer = {}
        for a in used:
            layout = self.layouts[a]
            try:
                per_buffer[a] = layout.expand(self.shape).strides
            except ValueError:
                raise ValueError(f"buffer {a} ({layout}) does not broadcast to {list(self.shape)}") from None
            if a >= len(self.args) and any(
                s == 0 for n, s in zip(self.shape, per_buffer[a], strict=True) if n > 1
            ):
                raise ValueError(f"output buffer {layout} overlaps itself")
        dims: list[int] = []
        strides: dict[int, list[int]] = {a: [] for a in used}
        for k, size in enumerate(self.shape):
            if size == 1:
                continue
            if dims and all(strides[a][-1] == per_buffer[a][k] * size for a in used):
                dims[-1] *= size
                for a in used:
                    strides[a][-1] = per_buffer[a][k]
                continue
            dims.append(size)
            for a in used:
                strides[a].append(per_buffer[a][k])
        return dims, strides

    def _render(self, dims: list[int], strides: dict[int, list[int]], stores: list[tuple[int, str]]) -> str:
        pid = "tl.program_id(0).to(tl.int64)" if self.wide else "tl.program_id(0)"
        masked = self.numel % self.block != 0
        lines = [f"# {list(self.shape)}: {self.numel} elements, {self.grid} programs of {self.block}"]
        lines += self._dereference()
        lines.append(f"i = {pid} * {self.block} + tl.arange(0, {self.block})")
        if masked:
            lines.append(f"mask = i < {self.numel}")
        mask = ", mask=mask" if masked else ""
        inner = [math.prod(dims[j + 1 :]) for j in range(len(dims))]
        linear = {a for a in strides if strides[a] == inner}  # laid out like the iteration space
        names = {}  # the index along each merged dim that another buffer moves along
        for j, size in enumerate(dims):
            if not any(strides[a][j] for a in strides if a not in linear):
                continue
            quotient = "i" if inner[j] == 1 else f"i // {inner[j]}"
            names[j] = quotient if j == 0 else f"{quotient} % {size}"
            if names[j] != "i":
                lines.append(f"d{j} = {names[j]}")
                names[j] = f"d{j}"

        def offset(a: int) -> str:
            if a in linear:
                return "i"
            terms = [names[j] if s == 1 else f"{names[j]} * {s}" for j, s in enumerate(strides[a]) if s]
            return " + ".join(terms) or "0"

        for line in self.lines:
            if isinstance(line, _Load):
                off = offset(line.arg)
                load = f"tl.load(in{line.arg} + {off}{mask})"
                if off == "0":  # one element for all: a block (the interpreter mishandles 0-d tensors)
                    load = f"tl.broadcast_to(tl.load(in{line.arg}), [{self.block}])"
                lines.append(f"x{line.arg} = {load}")
            else:
                lines.append(line)
        n_in = len(self.args)
        for a, value in stores:
            lines.append(f"tl.store(out{a - n_in} + {offset(a)}, {value}{mask})")
        return "".join(f"    {line}\n" for line in lines)

    def _dereference(self) -> list[str]:
        """Buffers reached through the per-call table: the parameter points at the slot holding the address."""
        lines = []
        n_in = len(self.args)
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
