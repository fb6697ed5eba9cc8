"""seed-random: random numbers drawn by generated kernels from a seed and an offset fed to each call.

A CUDA graph replays its kernels with the arguments it was built with, so a vendor random kernel
recorded into a graph would draw the same numbers on every replay (PyTorch re-seeds its own graphs
before each replay; pygraph builds its graphs itself). Instead, each random op (`rand`, `rand_like`,
`randn`, `randn_like`; training-mode dropout and `bernoulli` decompose into them) becomes a launch of a
generated Philox kernel that reads a seed and an offset from two value slots of the per-call table:
arguments of role `rng`, which the runtime fills on every call from torch's default generator of the
device and advances it by the numbers a call draws (`pygraph.random_numbers` on @main). Each op draws
from its own counters (offset + the op's base + the element's index), so no two ops and no two calls
share numbers, and the same `torch.manual_seed` gives the same numbers. A result is a fresh dense
tensor, filled in storage order. Philox4x32-10 is written out in the source exactly as Triton's
`tl.rand`/`tl.randn` compute it (same numbers), so that Triton's interpreter runs it too.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import attrs, dtypes
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.layout import Layout
from .base import Pass, PassError, main_function, record_transform
from .copies import launch_kernel

# Random ATen ops: the distribution each one draws from.
RANDOM = {
    "aten.rand.default": "uniform",
    "aten.rand_like.default": "uniform",
    "aten.randn.default": "normal",
    "aten.randn_like.default": "normal",
}
_BLOCK = 1024
_PHILOX = """    i = tl.program_id(0) * {block} + tl.arange(0, {block})
    mask = i < {numel}
    key = tl.broadcast_to(tl.load(seed), [{block}])
    counter = tl.load(offset) + {base} + i
    k0 = key.to(tl.uint32)
    k1 = (key >> 32).to(tl.uint32)
    c0 = counter.to(tl.uint32)
    c1 = (counter >> 32).to(tl.uint32)
    c2 = c0 * 0
    c3 = c0 * 0
    for _ in tl.static_range(10):
        a0 = c0
        a2 = c2
        c0 = tl.umulhi(0xCD9E8D57, a2) ^ c1 ^ k0
        c2 = tl.umulhi(0xD2511F53, a0) ^ c3 ^ k1
        c1 = a2 * 0xCD9E8D57
        c3 = a0 * 0xD2511F53
        k0 = k0 + 0x9E3779B9
        k1 = k1 + 0xBB67AE85
"""
_UNIFORM = "tl.where({x} < 0, -{x} - 1, {x}).to(tl.float32) * 4.6566127342e-10"  # as uint_to_uniform_float
_DRAW = {
    "uniform": f"""    x0 = c0.to(tl.int32, bitcast=True)
    value = {_UNIFORM.format(x="x0")}
""",
    "normal": f"""    x0 = c0.to(tl.int32, bitcast=True)
    x1 = c1.to(tl.int32, bitcast=True)
    u1 = tl.maximum(1.0e-7, {_UNIFORM.format(x="x0")})
    u2 = {_UNIFORM.format(x="x1")}
    value = tl.sqrt(-2.0 * tl.log(u1)) * tl.cos(6.283185307179586 * u2)
""",
}
_TL = {"float32": "tl.float32", "float16": "tl.float16", "bfloat16": "tl.bfloat16", "float64": "tl.float64"}
INT64 = dtypes.BY_NAME["int64"]


@dataclasses.dataclass
class SeedRandom(Pass):
    """Replaces random library calls with Philox kernels reading a per-call seed and offset (role `rng`)."""

    name = "seed-random"
    summary = "draw random numbers in generated kernels from a seed and an offset the runtime feeds each call"

    def run(self, module: ir.Module) -> None:
        main = main_function(module)
        block = main.regions[0].blocks[0]
        ops = [op for op in block.operations if isinstance(op, d.LibraryOp) and op.op.value in RANDOM]
        if not ops or d.RANDOM_NUMBERS in main.attributes:
            return
        errors = [
            (
                op.location,
                f"{op.op.value} gives {layout}: pygraph draws random numbers into dense float tensors",
            )
            for op in ops
            if not (layout := Layout.from_attr(op.layouts[0])).is_dense() or layout.dtype.name not in _TL
        ]
        if errors:
            raise PassError(errors)
        with module.context:
            seed, offset = _rng_arguments(main)
            base = 0
            for op in ops:
                name, layout = op.op.value, Layout.from_attr(op.layouts[0])
                with ir.InsertionPoint(op), op.location:
                    out = d.create(d.AllocOp, [], {"layout": op.layouts[0], "arena_offset": attrs.i64(-1)}, 1)
                    kernel, grid = _kernel(module, main, RANDOM[name], layout, base)
                    launch = launch_kernel(kernel, [seed, offset], [out.buf])
                    launch.attributes["grid"] = attrs.i64_array([grid, 1, 1])
                op.results_[0].replace_all_uses_with(out.buf)
                op.operation.erase()
                what = (
                    f"{name} draws {layout.numel} numbers in kernel @{kernel} from the seed and offset the "
                    f"runtime feeds each call (numbers {base} to {base + layout.numel - 1})"
                )
                record_transform(module, self.name, what, launch.location)
                base += layout.numel
            main.attributes[d.RANDOM_NUMBERS] = attrs.i64(base)


def _rng_arguments(main: Any) -> tuple[ir.Value, ir.Value]:
    """Appends the `rng` arguments `seed` and `offset` (0-d int64 on the host, filled by the runtime)."""
    block = main.regions[0].blocks[0]
    arg_attrs = list(ir.ArrayAttr(main.attributes["arg_attrs"]))
    values = []
    for name in ("seed", "offset"):
        values.append(block.add_argument(d.BufType.get(), ir.Location.name(name)))
        fields = {
            d.ROLE: attrs.string("rng"),
            d.NAME: attrs.string(name),
            d.LAYOUT: Layout.contiguous((), INT64).to_attr(),
            d.DEVICE: attrs.string("cpu"),
            d.IO: attrs.string("direct"),
        }
        arg_attrs.append(ir.DictAttr.get(fields))
    main.attributes["arg_attrs"] = ir.ArrayAttr.get(arg_attrs)
    results = ir.FunctionType(main.type).results
    main.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([a.type for a in block.arguments], results)
    )
    return values[0], values[1]


def _kernel(module: ir.Module, main: Any, distribution: str, layout: Layout, base: int) -> tuple[str, int]:
    """Adds a `pygraph.triton_kernel` that fills `layout` from counters `base`, `base + 1`, ...; returns its
    name and grid."""
    symbols = {
        ir.StringAttr(op.attributes["sym_name"]).value for op in module.body if "sym_name" in op.attributes
    }
    name = next(n for i in range(len(symbols) + 1) if (n := f"{distribution}_{i}") not in symbols)
    block = min(_BLOCK, max(128, 1 << max(layout.numel - 1, 0).bit_length()))
    aligned = ":16" if layout.offset * layout.dtype.itemsize % 16 == 0 else ""
    body = _PHILOX.format(block=block, numel=layout.numel, base=base) + _DRAW[distribution]
    body += f"    tl.store(out + i, value.to({_TL[layout.dtype.name]}), mask=mask)\n"
    source = f"import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef {name}(seed, offset, out):\n{body}"
    fields = {
        "sym_name": attrs.string(name),
        "source": attrs.string(source),
        "entry": attrs.string(name),
        "signature": attrs.str_array(["*i64", "*i64", f"*{layout.dtype.triton}{aligned}"]),
        "num_warps": attrs.i64(4),
        "num_stages": attrs.i64(1),
    }
    with ir.InsertionPoint(main), main.location:
        d.create(d.TritonKernelOp, [], fields)
    return name, max(1, -(-layout.numel // block))
