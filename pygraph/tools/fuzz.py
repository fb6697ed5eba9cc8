"""`pygraph fuzz`: random programs of tensor ops, compiled and compared with eager.

Why: fusion, view folding, layouts and memory planning rewrite index arithmetic and buffer lifetimes;
hand-written tests cover the patterns someone thought of, random programs the ones nobody did. Each seed
is one program, written out as a self-contained Python module (`Fuzzed` and `inputs(seed)`) that
reproduces it: a failure is a file to read, not a seed to regenerate.

A program is a chain of lines `tN = <op>(...)` over the model's inputs, parameters and earlier values.
Every candidate line is run eagerly while the program is built and kept only if it runs and its values
stay tame (finite, |x| <= 1e3, not all one value, at most `MAX_NUMEL` elements), so the shapes need no
rules of their own: whatever eager accepts is fair game, and what pygraph then gets wrong is its bug. Some
programs compute in float64, and some take inputs holding NaN, infinities or negative zeros in a tenth of
their elements (their values may then be non-finite in up to half of theirs): eager's answer there is as
defined as anywhere else.

Besides the ops, a program draws how it is called, as a user's model is: Python numbers among its
arguments, buffers it reads and updates (running statistics), plain attributes it reads that the caller
changes between calls (`between`), branches on values of its data or its numbers, results in lists and
dicts that may be its inputs or views of them, and a dim declared dynamic whose size one call changes
(`DYNAMIC`, `SIZES`).
"""

from __future__ import annotations

import argparse
import copy
import inspect
import linecache
import random
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from ..metrics import relative_error

MAX_NUMEL = 2048  # the emulator interprets generated kernels: small tensors keep a seed under seconds
TOLERANCE = {torch.float64: 1e-9, torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 2e-2}
DIMS = (1, 2, 3, 4, 5, 7, 8, 12, 16, 17, 32)

# (template, arity): {a} and {b} are tensors of the program, {d} a dim of {a}
UNARY = [
    "torch.tanh({a})",
    "torch.sigmoid({a})",
    "torch.relu({a})",
    "F.gelu({a})",
    "F.gelu({a}, approximate='tanh')",
    "F.silu({a})",
    "F.softplus({a})",
    "F.leaky_relu({a}, 0.1)",
    "F.hardswish({a})",
    "F.elu({a})",
    "{a}.abs()",
    "-{a}",
    "torch.sin({a})",
    "torch.cos({a})",
    "torch.exp(-{a}.abs())",
    "torch.sqrt({a}.abs() + 1)",
    "torch.log1p({a}.abs())",
    "torch.rsqrt({a} * {a} + 1)",
    "torch.erf({a})",
    "{a}.clamp(-0.5, 0.5)",
    "{a}.clamp(min=0.25)",
    "{a} * {a}",
    "{a} * 0.5 + 1.0",
    "2.0 - {a}",
    "1.0 / ({a}.abs() + 1)",
    "{a}.sign() * {a}",
    "torch.where({a} > 0, {a}, 0.1 * {a})",
    "{a}.pow(3)",
    "torch.floor({a} * 4)",
    "torch.ceil({a} * 4)",
    "torch.trunc({a} * 4)",
    "torch.round({a} * 4)",
    "torch.round(torch.floor({a} * 4) / 2)",  # exact halves: rounds to even, as eager
    "torch.fmod({a}, 0.7)",
    "torch.remainder({a}, 0.7)",
    "{a} % -0.7",
    "torch.fmod({a} * 4, -1.5)",
    "{a}.masked_fill({a} > 0.5, 0.25)",
    "({a} > 0).float()",
    "({a} > 0).to({a}.dtype) * {a}",
    "({a} * 8).long().to({a}.dtype)",
    "torch.div(({a} * 8).long(), 3, rounding_mode='floor').to({a}.dtype)",
    "torch.div(({a} * 8).long(), 3, rounding_mode='trunc').to({a}.dtype)",
    "(({a} * 8).long() % 3).to({a}.dtype)",
    "(({a} * 8).long() // -3).to({a}.dtype)",
    "(({a} > 0) & ({a} < 0.5)).to({a}.dtype)",
    "(({a} > 0.5) | ~({a} > -0.5)).to({a}.dtype)",
    "{a}.to(torch.float16).to({a}.dtype)",
    "{a}.to(torch.bfloat16).to({a}.dtype)",
    "torch.nan_to_num(torch.log({a}), nan=0.5, neginf=-3.0)",
    "F.relu6({a} * 4)",
    "F.hardtanh({a}, -0.3, 0.6)",
    "F.hardsigmoid({a})",
    "F.mish({a})",
    "F.threshold({a}, 0.2, -0.7)",
    "torch.expm1({a})",
    "torch.addcdiv({a}, {a}, {a}.abs() + 1, value=-0.5)",
    "torch.logical_xor({a} > 0, {a} < 0.5).to({a}.dtype)",
    "torch.isinf(1 / ({a} > 0).to({a}.dtype)).to({a}.dtype) - torch.isnan(torch.log({a})).to({a}.dtype)",
    "torch.full_like({a}, 0.3) + {a}",
    "{a} + torch.arange({a}.shape[-1], device={a}.device, dtype={a}.dtype)",
    "((({a} * 8).long() & 5) ^ 3).to({a}.dtype)",
    "({a} == 0.5).to({a}.dtype) + ({a} <= -0.7).to({a}.dtype)",
    "F.logsigmoid({a})",
    "F.selu({a})",
    "F.celu({a}, 0.7)",
    "F.softshrink({a}, 0.3) + F.hardshrink({a}, 0.4)",
    "F.tanhshrink({a}) + F.softsign({a})",
    "F.prelu({a}, {a}.new_tensor([0.25]))",
    "F.glu({a}, {d})",
    "torch.log2({a}.abs() + 1) + torch.exp2({a})",
    "torch.sinh({a}) + torch.asinh({a}) + torch.atan({a})",
    "torch.erfinv(torch.tanh({a}) * 0.9)",
    "torch.lgamma({a}.abs() + 0.5)",
    "torch.frac({a} * 3) + torch.sinc({a})",
    "torch.signbit({a}).to({a}.dtype) + torch.heaviside({a}, {a}.new_tensor(0.5))",
    "F.smooth_l1_loss({a}, torch.tanh({a}), beta=0.5)",
]
BINARY = [
    "{a} + {b}",
    "{a} - {b}",
    "{a} * {b}",
    "{a} / ({b}.abs() + 0.5)",
    "torch.maximum({a}, {b})",
    "torch.minimum({a}, {b})",
    "torch.where({a} > {b}, {a}, {b})",
    "torch.where({b} > 0, {a}, -{a})",
    "torch.atan2({a}, {b})",
    "{a}.clamp(min={b})",
    "torch.lerp({a}, {b}, 0.3)",
    "torch.addcmul({a}, {a}, {b}, value=0.5)",
    "({a} > {b}).to({a}.dtype)",
    "torch.hypot({a}, {b})",
    "torch.clamp({a}, min={b}, max={b} + 1)",
    "{a}.masked_fill({b} > 0, 0.5)",
    "torch.remainder({a}, {b}.abs() + 0.5)",
    "torch.fmod({a}, -{b}.abs() - 0.5)",
    "torch.pow({a}.abs() + 0.5, {b})",
    "{a} // ({b}.abs() + 0.5)",
    "torch.copysign({a}, {b})",
    "torch.xlogy({a}.abs(), {b}.abs() + 0.1)",
    "torch.logaddexp({a}, {b})",
    "torch.fmax({a}, {b})",
]
REDUCTION = [
    "{a}.sum({d})",
    "{a}.sum({d}, keepdim=True)",
    "{a}.mean({d})",
    "{a}.mean({d}, keepdim=True)",
    "{a}.amax({d})",
    "{a}.amin({d}, keepdim=True)",
    "{a}.max({d}).values",
    "{a}.sum()",
    "{a}.mean()",
    "{a}.var({d})",
    "{a}.var({d}, correction=0, keepdim=True)",
    "{a}.std({d})",
    "torch.logsumexp({a}, {d})",
    "torch.softmax({a}, {d})",
    "torch.softmax({a}.masked_fill({a} > 1, float('-inf')), -1)",  # (rows all -inf: NaN, as eager)
    "torch.log_softmax({a}, {d})",
    "F.normalize({a}, dim={d})",
    "torch.linalg.vector_norm({a}, dim={d})",
    "torch.cumsum({a}, {d})",
    "{a} - {a}.mean({d}, keepdim=True)",
    "{a} / {a}.abs().amax({d}, keepdim=True).clamp(min=1e-3)",
    "F.layer_norm({a}, {a}.shape[-1:])",
    "F.rms_norm({a}, {a}.shape[-1:], eps=1e-6)",
    "{a}.argmax({d}).to({a}.dtype)",
    "{a}.prod({d}).clamp(-10, 10)",
    "torch.cumprod({a} * 0.5 + 1, {d})",
    "torch.logcumsumexp({a}, {d})",
    "torch.cummax({a}, {d}).values",
    "{a}.argmin({d}).to({a}.dtype)",
    "{a}.min({d}).values",
    "({a} > 0).any({d}).to({a}.dtype) + ({a} > -1).all({d}).to({a}.dtype)",
    "torch.nansum(torch.where({a} > 1, float('nan'), {a}), {d})",
    "torch.linalg.vector_norm({a}, 3, dim={d}) + {a}.norm(float('inf'), {d})",
    "F.cross_entropy({a}, {a}.argmin(1), reduction='none')",
    "F.cross_entropy({a}, {a}.argmax(1), label_smoothing=0.1)",
    "torch.fft.irfft(torch.fft.rfft({a}, dim={d}) * 0.5, n={a}.shape[{d}], dim={d})",
    "torch.fft.fft({a}, dim={d}, norm='ortho').abs()",
]
VIEW = [
    "{a}.transpose({d}, {e})",
    "{a}.permute({perm})",
    "{a}.unsqueeze({d})",
    "{a}.unsqueeze(-1)",
    "{a}.squeeze({d})",
    "{a}.flatten()",
    "{a}.reshape({merged})",
    "{a}.reshape({split})",
    "{a}.narrow({d}, {start}, {length})",
    "{a}.select({d}, {start})",
    "{a}[{slices}]",
    "{a}.flip({d})",
    "{a}.roll({shift}, {d})",
    "{a}.chunk(2, {d})[-1]",
    "{a}.unbind({d})[{start}]",
    "{a}.expand({expanded})",
    "{a}.contiguous()",
    "{a}.clone()",
    "{a}.mT",
    "{a}.repeat({repeats})",
    "{a}.diagonal(0, {d}, {e})",
    "{a}.unfold({d}, 2, 1)",
    "{a}.view(INT[{a}.element_size()]).view({a}.dtype)",  # a bit-cast both ways is the identity
    "({a}.view(INT[{a}.element_size()]) ^ 5).view({a}.dtype)",
]
COMBINE = [
    "torch.cat([{a}, {b}], {d})",
    "torch.cat([{a}, {f}], {d})",
    "torch.stack([{a}, {f}], {d})",
    "{a} @ {b}",
    "{a} @ {a}.mT",
    "F.linear({a}, {w})",
    "F.linear({a}, {w}, {bias})",
    "{a} @ {m}",
]
INDEX = [
    "torch.gather({a}, {d}, {i})",
    "{a}.index_select({d}, {i1})",
    "{a}[{i1}]",
    "F.embedding({i}, {table})",
    "torch.zeros_like({a}).scatter_add({d}, {i}, {g})",
    "{a}.index_add({d}, {i1}, {g1})",
    "F.one_hot({a}.argmax(-1), {a}.shape[-1]).to({a}.dtype) * {a}",
    # rows the data pick, computed and added back (a mixture of experts' routing; pad-selections)
    "torch.zeros_like({a}).index_add(0, ({a}.flatten(1).sum(-1) > 0).nonzero().squeeze(1), torch.tanh({a}[{a}.flatten(1).sum(-1) > 0]).softmax(-1) * 2)",
    "{a}.clone().index_put_(({a} > 0.5,), {a}[{a} > 0.5].exp(), accumulate=True)",
]
IMAGE = [  # {a} of rank 4 read as [N, C, H, W]
    "F.conv2d({a}, {cw}, {cb}, padding={pad}, stride={stride}, groups={groups})",
    "F.conv2d({a}, {cw}, padding='same', dilation=2)",
    "F.max_pool2d({a}, 2)",
    "F.max_pool2d({a}, 3, stride=2, padding=1)",
    "F.avg_pool2d({a}, 2, ceil_mode=True)",
    "F.adaptive_avg_pool2d({a}, 1)",
    "F.adaptive_avg_pool2d({a}, (2, 3))",
    "{a}.mean((2, 3), keepdim=True) * {a}",
    "F.interpolate({a}, scale_factor=2, mode='nearest')",
    "F.interpolate({a}, scale_factor=2, mode='bilinear', align_corners=False)",
    "F.pad({a}, (1, 2, 0, 1))",
    "F.pad({a}, (1, 1, 1, 1), mode='reflect')",
    "F.batch_norm({a}, {bn_mean}, {bn_var}, {bn_w}, {bn_b})",
    "F.batch_norm({a}, {rm}, {rv}, training=True, momentum=0.25)",
    "F.group_norm({a}, 1)",
    "F.pixel_shuffle({a}, 2)",
    "F.pixel_unshuffle({a}, 2)",
    "F.instance_norm({a})",
    "F.local_response_norm({a}, 3)",
    "F.adaptive_max_pool2d({a}, (2, 3))",
    "F.avg_pool2d({a}, 3, stride=2, padding=1, count_include_pad=False)",
    "F.max_pool2d({a}, 2, return_indices=True)[1].to({a}.dtype)",
    "F.interpolate({a}, size=(5, 3), mode='bicubic', align_corners=True)",
    "F.interpolate({a}, scale_factor=1.5, mode='nearest-exact')",
    "F.interpolate({a}, size=int(({a} > 0).sum()) % 5 + 1)",  # to a size the data decide (ViLT)
    "F.scaled_dot_product_attention({a}, {a}, {a})",
    "F.scaled_dot_product_attention({a}, {a}.flip(-2), {a}, is_causal=True)",
    "F.scaled_dot_product_attention({a}, {a}, {a}.tanh(), attn_mask={a}.sum(-1, keepdim=True).mT > 0)",
    "F.scaled_dot_product_attention({a}, {a}, {a}, attn_mask={a}[..., :1] * {a}[..., :1].mT)",
]
SORT = [
    "torch.topk({a}, {k}, {d}).values",
    "torch.sort({a}, {d}, descending=True).values",
    "torch.tril({a})",
    "torch.triu({a}, 1)",
    "torch.einsum('...ij,...kj->...ik', {a}, {a})",
    "torch.kthvalue({a}, 1, {d}).values",
    "torch.sort({a}, dim={d}, stable=True).indices.to({a}.dtype)",
    "torch.searchsorted(torch.sort({a}).values, {a} * 0.5).to({a}.dtype)",
]
NUMBER = [  # {y} a float argument of forward, {yi} an int one, {attr} a plain attribute of the model
    "{a} * {y}",
    "{a} + {y}",
    "{a}.clamp(max={y})",
    "torch.where({a} > {y}, {a}, {a} * {y})",
    "{a} * {yi}",
    "{a} / ({y} * {y} + 1)",
    "{a} if {y} > 0 else -{a}",
    "{a} * {attr}",
    "{a} + {attr} * {y}",
    "{a} * {attr} if {attr} > 0 else {a}",
    "{a} % ({attr} * {attr} + 0.5)",
    "({a} < {y}).to({a}.dtype)",
]
CONTROL = [  # decisions on values of the data
    "{a} * 2 if {a}.sum() > 0 else {a}.tanh()",
    "{a}.relu() if {a}.amax() > 1 else {a} - 1",
    "{a} * {a}.abs().amax().item()",
    "{a}[{a}.argmax().item() % {a}.shape[0]]",
    "sum(({a}.round() == u).to({a}.dtype) * u for u in {a}.round().clamp(-2, 2).unique())",  # as many as the data
]
MUTATE = [  # an intermediate written in place (functionalized by export into *_scatter and copies)
    "{a}.clone(); {n}[{slices}] = {s}",
    "{a}.clone(); {n}.add_(1.5)",
    "{a}.clone(); {n}.mul_({b})",
    "{a}.clone(); {n}.select({d}, 0).fill_(0.5)",
    "{a}.clone(); {n}.masked_fill_({n} < 0, -0.5)",
    "{a}.clone(); {n}[{i1}] = 0.75",
    "{a}.clone(); {n}[{n} > 0] = {n}[{n} > 0].sqrt()",  # elements a mask picks, written back by it
    "{a}.clone(); {n}[{n}.sum(-1) > 0] = ({n}[{n}.sum(-1) > 0] * 2).tanh()",  # rows, as X-MOD's adapters
    "{x}.mul_(0.5)",  # the caller's input, written
    "{x}.narrow(0, 0, 1).fill_(0.5)",
    "{p}.add_(0.125)",  # the model's parameter, written in every call
    "{q}.mul_(0.75).add_({a}.mean() * 0.25)",  # a buffer, as running statistics are
    "{a} * {attr}; {attr} = -{attr}",  # a plain attribute forward changes
]
COMPLEX = [  # complex values inside a line, real ones around it (frontend/complex_as_real.py)
    "torch.view_as_real(torch.view_as_complex({a}.unflatten(-1, (-1, 2))) * torch.polar({b}[..., ::2].abs(), {b}[..., 1::2])).flatten(-2)",
    "torch.view_as_real(torch.view_as_complex({a}.unflatten(-1, (-1, 2)).contiguous()).transpose(0, -1) / (1 + 2j)).sum(-1)",
    "({a} * 1j + {b}).abs()",
    "torch.polar({a}.abs(), {b}).angle()",
    "(torch.complex({a}, {b}) / torch.complex({b}, {a}.abs() + 0.5)).real",
    "torch.view_as_real(torch.complex({a}, {b}).exp().conj()).sum(-1)",
    "torch.view_as_real(torch.complex({a}, {b}) @ torch.complex({b}, {a}).mT).select(-1, 1)",
    "torch.complex({a}, {b}).transpose({d}, {e}).reciprocal().imag",
    "torch.complex({a}, -{b}).sum({d}).real + torch.complex({a}, {b}).mean({d}).imag",
    "torch.where({a} > 0, torch.complex({a}, {b}), torch.complex({b}, {a})).imag",
    "(2.0 - torch.complex({a}, {b}).unsqueeze({d}) * {b}.unsqueeze({d})).real",
    "torch.view_as_real(torch.cat([torch.complex({a}, {b}), torch.complex({b}, {a})], {d})).select(-1, 0)",
    "torch.fft.ifft(torch.fft.fft(torch.complex({a}, {b}), dim={d}) * torch.complex({b}, {a}), dim={d}).real",
    "torch.roll(torch.complex({a}, {b}), 1, {d}).flip({d}).imag",
]
FAMILIES = [
    (UNARY, 6),
    (BINARY, 5),
    (REDUCTION, 4),
    (VIEW, 5),
    (COMBINE, 3),
    (INDEX, 2),
    (MUTATE, 2),
    (IMAGE, 3),
    (SORT, 1),
    (NUMBER, 2),
    (CONTROL, 1),
    (COMPLEX, 1),
]
DYNAMIC_SHARE = 0.35  # of programs that declare a dim dynamic and call it with another size once
# knobs a program is compiled under (reproduce with the environment variables `pygraph fuzz` prints)
SETTINGS = [
    {},
    {"gpu_layouts": "on"},
    {"gpu_layouts": "on", "matmul": "all"},
    {"graphs": "all"},  # (on a GPU: every segment a graph, however small the program)
    {"freeze": True},  # (export_and_compile's option: the parameters are constants of the program)
]
OPTIONS = ("freeze",)  # the keys of SETTINGS that are `export_and_compile`'s options, not knobs
INT = {2: torch.int16, 4: torch.int32, 8: torch.int64}
DTYPES = [torch.float32] * 8 + [torch.float16, torch.bfloat16]


@dataclass(frozen=True)
class Program:
    """One program: a module's source defining `Fuzzed`, `inputs(seed)` (seed 0: the example it was built
    on), `SETTINGS` (the knobs it compiles under), `DYNAMIC` and `SIZES` (dims declared dynamic, and the
    size one call gives them), maybe `between(model, call)` (what the caller changes before each call),
    and a name for it (`seed N` or a file's path)."""

    name: str
    source: str

    def build(self) -> Built:
        namespace: dict[str, Any] = {}
        filename = f"<pygraph-fuzz {self.name}>"
        # (torch.export reads forward's source: draft export's report, a branch's line)
        linecache.cache[filename] = (len(self.source), None, self.source.splitlines(True), filename)
        exec(compile(self.source, filename, "exec"), namespace)
        return Built(
            namespace["Fuzzed"](),
            namespace["inputs"],
            namespace["SETTINGS"],
            namespace.get("DYNAMIC", {}),
            namespace.get("SIZES", ()),
            namespace.get("between"),
        )

    @property
    def lines(self) -> int:
        """The lines of forward, its return left out."""
        body = self.source.split("    def forward(")[1].split("\n")[1:]
        return next(i for i, line in enumerate(body) if line.startswith("        return "))


@dataclass(frozen=True)
class Built:
    """A program's module executed: the model and what calls it."""

    model: torch.nn.Module
    inputs: Callable[..., tuple[Any, ...]]
    settings: dict[str, Any]
    dynamic: dict[str, tuple[int, ...]]
    sizes: tuple[int, ...]
    between: Callable[[torch.nn.Module, int], None] | None

    def calls(self) -> list[tuple[int, dict[str, int], bool]]:
        """(inputs' seed, their keyword arguments, transposed in memory) of each call: three of the
        example's shapes, the last transposed, then, where a dim is dynamic, one of the other size and one
        of the example's again."""
        calls = [(0, {}, False), (1, {}, False), (2, {}, True)]
        if self.dynamic:
            calls += [(3, {"n": self.sizes[1]}, False), (4, {}, False)]
        return calls

    def dynamic_shapes(self) -> dict[str, Any] | None:
        if not self.dynamic:
            return None
        dim = torch.export.Dim("n", min=min(self.sizes), max=2 * max(self.sizes))
        names = list(inspect.signature(self.model.forward).parameters)
        return {n: {d: dim for d in self.dynamic[n]} if n in self.dynamic else None for n in names}


@dataclass
class _Builder:
    seed: int
    rng: random.Random = field(init=False)
    values: dict[str, torch.Tensor] = field(default_factory=dict)  # every tensor a line may read
    floats: list[str] = field(default_factory=list)  # floating names, in the order they were made
    inputs: list[tuple[str, str]] = field(default_factory=list)  # (name, expression drawing it from `g`)
    shapes: dict[str, list[int]] = field(default_factory=dict)  # the tensor inputs' ({shape} in the above)
    numbers: dict[str, float | int] = field(default_factory=dict)  # forward's number arguments, as drawn
    attrs: dict[str, float | int] = field(default_factory=dict)  # the model's plain attributes
    init: list[str] = field(default_factory=list)  # __init__'s lines, in the order they draw from `g`
    body: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.dtype = self.rng.choice(DTYPES)
        # Draws of their own, so that other seeds' programs stay as they were: float64 programs, and inputs
        # holding NaN, infinities or negative zeros in some elements.
        self.specials = random.Random(f"{self.seed} specials")
        if self.specials.random() < 0.06:
            self.dtype = torch.float64
        self.special_inputs = self.specials.random() < 0.15
        self.settings = self.rng.choice(SETTINGS)
        self.param_gen = torch.Generator().manual_seed(self.seed)
        self.input_gen = torch.Generator().manual_seed(self.seed)

    # -------------------------------------------------------------- leaves
    def _shape(self) -> list[int]:
        rank = self.rng.choice((1, 2, 2, 3, 3, 3, 4, 4, 4))
        while True:
            shape = [self.rng.choice(DIMS) for _ in range(rank)]
            if _numel(shape) <= MAX_NUMEL // 2:
                return shape

    def new_input(self, shape: list[int]) -> str:
        name = f"x{len(self.inputs)}"
        draw = "torch.randn({shape}, generator=g)"
        if self.special_inputs and self.specials.random() < 0.6:
            value = self.specials.choice(("nan", "inf", "-inf", "-0.0"))
            draw += f".masked_fill(torch.rand({{shape}}, generator=g) < 0.1, float('{value}'))"
        self._draw(name, draw + self._cast, shape)
        self.floats.append(name)
        return name

    def new_index(self, shape: list[int], high: int) -> str:
        name = f"i{len(self.inputs)}"
        self._draw(name, f"torch.randint(0, {high}, {{shape}}, generator=g)", shape)
        return name

    def _draw(self, name: str, template: str, shape: list[int]) -> None:
        self.shapes[name] = shape
        self.values[name] = _eval(template.format(shape=shape), self.input_gen)
        self.inputs.append((name, template))

    def new_number(self, integer: bool) -> str:
        """A number argument of forward (a new one, or one that an earlier line reads)."""
        drawn = [n for n, v in self.numbers.items() if isinstance(v, int) == integer]
        if drawn and self.rng.random() < 0.5:
            return self.rng.choice(drawn)
        name = f"y{len(self.inputs)}"
        if integer:
            template = "int(torch.randint(1, 4, (), generator=g))"
        else:
            template = "round(float(torch.randn((), generator=g)), 3)"
        self.numbers[name] = _eval(template, self.input_gen)
        self.inputs.append((name, template))
        return name

    def new_param(self, shape: list[int]) -> str:
        name = f"self.p{sum(n.startswith('self.p') for n in self.floats)}"
        draw = f"nn.Parameter(torch.randn({shape}, generator=g){self._cast})"
        self._state(name, f"{name} = {draw}", draw)
        return name

    def new_buffer(self, shape: list[int], positive: bool = False) -> str:
        """A buffer (persistent in the state dict or not), of positive values for a running variance."""
        name = f"self.b{sum(n.startswith('self.b') for n in self.floats)}"
        draw = (
            f"torch.rand({shape}, generator=g){self._cast} + 0.5"
            if positive
            else f"torch.randn({shape}, generator=g){self._cast}"
        )
        persistent = self.rng.random() < 0.5
        self._state(name, f'self.register_buffer("{name[5:]}", {draw}, persistent={persistent})', draw)
        return name

    def _state(self, name: str, line: str, draw: str) -> None:
        """A parameter or buffer: `line` of __init__ makes it from `draw`."""
        self.values[name] = _eval(draw, self.param_gen)
        self.init.append(line)
        self.floats.append(name)

    def new_attr(self) -> str:
        if self.attrs and self.rng.random() < 0.5:
            return self.rng.choice(list(self.attrs))
        name = f"self.k{len(self.attrs)}"
        self.attrs[name] = self.rng.choice((0.5, 1.5, -0.75, 2, -3))
        self.init.append(f"{name} = {self.attrs[name]}")
        return name

    @property
    def _cast(self) -> str:
        return "" if self.dtype == torch.float32 else f".to({self.dtype})"

    # -------------------------------------------------------------- lines
    def pick(self) -> str:
        """A floating value, the recent ones likelier (chains), any of them possible (fan-out)."""
        recent = self.floats[-3:]
        return self.rng.choice(recent if self.rng.random() < 0.7 else self.floats)

    def step(self) -> bool:
        families, weights = zip(*FAMILIES, strict=True)
        family = self.rng.choices(families, weights)[0]
        a = self.pick()
        template = self.rng.choice(family)
        name = f"t{len(self.body)}"
        try:
            line = self._fill(template, a, name)
        except (IndexError, ValueError):  # a hole `a`'s shape cannot fill (a 0-d operand of a product)
            return False
        if line is None:
            return False
        return self._try(name, line)

    def _try(self, name: str, line: str) -> bool:
        scope = {"torch": torch, "F": torch.nn.functional, "INT": INT, **self.numbers}
        scope.update(_dotted({**self.values, **self.attrs}))
        first, _, rest = line.partition("; ")
        try:
            exec(f"{name} = {first}" + (f"\n{rest}" if rest else ""), scope)
        except Exception:
            return False
        value = scope[name]
        if not isinstance(value, torch.Tensor) or not _tame(value, self.special_inputs):
            return False
        self.values[name] = value
        if value.is_floating_point():
            self.floats.append(name)
        self.body.append(f"{name} = {first}" + "".join(f"\n        {s}" for s in rest.split("; ") if s))
        return True

    def _fill(self, template: str, a: str, name: str) -> str | None:
        """The template with its holes filled from `a`'s shape; None where a hole has no sensible value."""
        shape = list(self.values[a].shape)
        rank = len(shape)
        holes: dict[str, Any] = {"a": a, "n": name}
        if rank == 0 and any(h in template for h in ("{d}", "{e}", "{i", "{slices}", "{w}", "{m}", "{g")):
            return None
        if rank:
            d, e = self.rng.randrange(rank), self.rng.randrange(rank)
            holes.update(d=d - rank if self.rng.random() < 0.3 else d, e=e)
            size = shape[d]
            start = self.rng.randrange(size)
            holes.update(start=start, length=self.rng.randint(1, size - start), shift=self.rng.randint(-3, 3))
            holes["perm"] = ", ".join(map(str, self.rng.sample(range(rank), rank)))
            holes["slices"] = self._slices(shape)
            holes["merged"] = _merged(shape, self.rng)
            holes["split"] = _split(shape, self.rng)
            holes["expanded"] = [self.rng.choice((2, 3)) if s == 1 else s for s in shape]
            holes["repeats"] = [self.rng.choice((1, 1, 2)) for _ in shape]
        if "{x}" in template:
            holes["x"] = self.rng.choice([n for n in self.floats if n.startswith("x")])
        if "{p}" in template:
            params = [n for n in self.floats if n.startswith("self.")]
            if not params:
                return None
            holes["p"] = self.rng.choice(params)
        if "{b}" in template:
            holes["b"] = self._operand(shape, a, template)
        if "{f}" in template:  # a second piece of a's shape, computed from a (cat's pieces of one source)
            holes["f"] = f"torch.tanh({a}) * 0.5"
        if "{s}" in template:  # a value assigned into a slice: a scalar or a broadcast tensor
            holes["s"] = self.rng.choice(
                ("0.5", f"{a}[{holes['slices']}] * 2", "torch.tanh(" + a + ")[" + holes["slices"] + "]")
            )
        if "{w}" in template or "{bias}" in template:
            out = self.rng.choice(DIMS)
            holes["w"] = self.new_param([out, shape[-1]])
            holes["bias"] = self.new_param([out])
        if "{cw}" in template and rank == 4:
            channels = shape[1]
            groups = self.rng.choice([g for g in (1, 2, channels) if channels % g == 0])
            out = groups * self.rng.choice((1, 2, 3))
            size = self.rng.choice((1, 3))
            holes.update(pad=self.rng.randint(0, size // 2), stride=self.rng.choice((1, 1, 2)), groups=groups)
            holes["cw"] = self.new_param([out, channels // groups, size, size])
            holes["cb"] = self.new_param([out]) if self.rng.random() < 0.7 else "None"
        if "{bn_mean}" in template and rank >= 2:
            for part in ("mean", "w", "b"):
                holes[f"bn_{part}"] = self.new_param([shape[1]])
            holes["bn_var"] = f"{self.new_param([shape[1]])}.abs() + 0.5"
        if "{y}" in template:
            holes["y"] = self.new_number(integer=False)
        if "{yi}" in template:
            holes["yi"] = self.new_number(integer=True)
        if "{attr}" in template:
            holes["attr"] = self.new_attr()
        if "{q}" in template:
            buffers = [n for n in self.floats if n.startswith("self.b")]
            holes["q"] = (
                self.rng.choice(buffers) if buffers and self.rng.random() < 0.5 else self.new_buffer(shape)
            )
        if "{rm}" in template and rank >= 2:
            holes["rm"], holes["rv"] = self.new_buffer([shape[1]]), self.new_buffer([shape[1]], positive=True)
        if "{k}" in template and rank:
            holes["k"] = self.rng.randint(1, shape[holes["d"]])
        if "{m}" in template:
            holes["m"] = self.new_param([shape[-1], self.rng.choice(DIMS)])
        if "{table}" in template:
            holes["i"] = self.new_index(shape[:2], self.rng.choice(DIMS[1:]))
            holes["table"] = self.new_param([max(DIMS), self.rng.choice(DIMS)])
        elif "{i}" in template or "{g}" in template:
            dim = holes["d"] % rank
            index_shape = [self.rng.randint(1, s) for s in shape]
            holes["i"] = self.new_index(index_shape, shape[dim])
            holes["g"] = f"torch.tanh({a})[{', '.join(f':{s}' for s in index_shape)}]"
        if "{i1}" in template or "{g1}" in template:
            dim = holes["d"] % rank if "{d}" in template else 0
            count = self.rng.randint(1, 2 * shape[dim])
            holes["i1"] = self.new_index([count], shape[dim])
            g1 = list(shape)
            g1[dim] = count
            holes["g1"] = f"{a}.new_ones({g1}) * 0.5"
        try:
            return template.format(**holes)
        except KeyError:  # a hole only tensors of some rank have
            return None

    def _operand(self, shape: list[int], a: str, template: str) -> str:
        """A second operand broadcasting against `a`: an earlier value, a new input or parameter, a number."""
        if "@" in template:  # a product: a value or parameter whose rows are a's columns
            k = shape[-1]
            matching = [n for n in self.floats if self.values[n].dim() >= 2 and self.values[n].shape[-2] == k]
            if matching and self.rng.random() < 0.5:
                return self.rng.choice(matching)
            return self.new_param([k, self.rng.choice(DIMS)])
        choice = self.rng.random()
        if choice < 0.15:
            return self.rng.choice(("0.5", "-1.25", "3.0"))
        fits = [n for n in self.floats if n != a and _broadcasts(self.values[n].shape, shape)]
        if choice < 0.55 and fits:
            return self.rng.choice(fits)
        broadcast = [1 if self.rng.random() < 0.4 else s for s in shape]
        broadcast = broadcast[self.rng.randrange(len(broadcast) + 1) :] if broadcast else []
        if self.rng.random() < 0.5:
            return self.new_param(broadcast)
        return self.new_input(broadcast)

    def _slices(self, shape: list[int]) -> str:
        parts = []
        for size in shape:
            start = self.rng.randrange(size)
            stop = self.rng.randint(start + 1, size)
            step = self.rng.choice((1, 1, 2, 3))
            parts.append(
                self.rng.choice((":", f"{start}:{stop}", f"{start}::{step}", f"{start}:{stop}:{step}"))
            )
        return ", ".join(parts)

    # -------------------------------------------------------------- the program
    def program(self) -> Program:
        for _ in range(self.rng.randint(1, 2)):
            self.new_input(self._shape())
        target = self.rng.randint(4, 14)
        tries = 0
        while len(self.body) < target and tries < 40 * target:
            tries += 1
            self.step()
        made = [n for n in self.values if n.startswith("t") and self.values[n].is_floating_point()]
        made = made or [self.floats[-1]]
        outputs = [made[-1]] + self.rng.sample(made[:-1], min(len(made) - 1, self.rng.randint(0, 2)))
        returned = self._returned(outputs)
        between = bool(self.attrs) and self.rng.random() < 0.5
        program = Program(f"seed {self.seed}", self._source(returned, between, None))
        if self.rng.random() < DYNAMIC_SHARE:
            program = self._with_a_dynamic_dim(returned, between) or program
        return program

    def _returned(self, outputs: list[str]) -> str:
        """forward's return: a tuple, a lone tensor, a dict or a nested list, maybe with an input (or a view
        of one) or a result twice among them (results aliasing inputs and each other), or a Python number
        read from an input (exact: a result's would follow its rounding)."""
        tensors = [n for n in self.shapes if n.startswith("x")]
        if self.rng.random() < 0.2:
            outputs.append(self.rng.choice([outputs[0], *tensors, *(f"{n}.unsqueeze(0)" for n in tensors)]))
        numbers = random.Random(f"{self.seed} numbers")  # (its own draws: each seed's program as it was)
        if tensors and numbers.random() < 0.1:
            number = numbers.choice(["{}.argmax().item()", "{}.max().item()", "bool(({} > 0).any())"])
            outputs.append(number.format(numbers.choice(tensors)))
        form = self.rng.random()
        if form < 0.1 and len(outputs) == 1:
            return outputs[0]
        if form < 0.25:
            return "{" + ", ".join(f'"r{j}": {n}' for j, n in enumerate(outputs)) + "}"
        if form < 0.35 and len(outputs) > 1:
            return f"({outputs[0]}, [{', '.join(outputs[1:])}])"
        return ", ".join(outputs) + ","

    def _with_a_dynamic_dim(self, returned: str, between: bool) -> Program | None:
        """The program with the inputs' dims of one size declared dynamic, where eager also runs it at
        another size (`SIZES`): a literal shape in a line (a reshape) ties a size, which eager then shows."""
        sizes = sorted({s for shape in self.shapes.values() for s in shape if s >= 2})
        self.rng.shuffle(sizes)
        for size in sizes[:3]:
            other = self.rng.choice([n for n in (size - 1, size + 1, size + 3, 2 * size) if n >= 2])
            resized = [[other if s == size else s for s in shape] for shape in self.shapes.values()]
            if any(_numel(shape) > MAX_NUMEL for shape in resized):
                continue
            program = Program(f"seed {self.seed}", self._source(returned, between, (size, other)))
            built = program.build()
            try:
                results = built.model(*built.inputs(built.calls()[3][0], n=other))
            except Exception:
                continue
            leaves = pytree.tree_leaves(results)
            if self.special_inputs or all(
                t.isfinite().all() for t in leaves if isinstance(t, torch.Tensor) and t.is_floating_point()
            ):
                return program
        return None

    def _source(self, returned: str, between: bool, sizes: tuple[int, int] | None) -> str:
        args = ", ".join(["self"] + [n for n, _ in self.inputs])
        dynamic = {}
        if sizes is not None:
            dynamic = {
                n: tuple(d for d, s in enumerate(shape) if s == sizes[0]) for n, shape in self.shapes.items()
            }
            dynamic = {n: dims for n, dims in dynamic.items() if dims}

        def shape(name: str) -> str:
            dims = dynamic.get(name, ())
            return (
                "[" + ", ".join("n" if d in dims else str(s) for d, s in enumerate(self.shapes[name])) + "]"
            )

        draws = "".join(f"{e.format(shape=shape(n)) if n in self.shapes else e}, " for n, e in self.inputs)
        changed = []
        if between:
            changed = [
                "",
                "",
                "def between(model, call):",
                '    """What the caller changes before each call."""',
                *[f"    model.{n[5:]} = {v} * (1 + call % 2)" for n, v in self.attrs.items()],
            ]
        return "\n".join(
            [
                f'"""pygraph fuzz, seed {self.seed}: `Fuzzed()(*inputs(0))`, compiled with {_environment(self.settings)}."""',
                "import torch",
                "import torch.nn.functional as F",
                "from torch import nn",
                "",
                "INT = {2: torch.int16, 4: torch.int32, 8: torch.int64}  # (bit-casts: the integer of a size)",
                f"SETTINGS = {self.settings!r}",
                f"DYNAMIC = {dynamic!r}  # the inputs' dims of size n, declared dynamic",
                f"SIZES = {sizes or ()!r}  # n in the example, and in the one call that changes it",
                "",
                "",
                "class Fuzzed(nn.Module):",
                "    def __init__(self):",
                "        super().__init__()",
                f"        g = torch.Generator().manual_seed({self.seed})",
                *[f"        {line}" for line in self.init],
                "",
                f"    def forward({args}):",
                *[f"        {line}" for line in self.body],
                f"        return {returned}",
                "",
                "",
                f"def inputs(seed{f', n={sizes[0]}' if sizes else ''}):",
                '    """The example inputs (seed 0, as the program was built on) or fresh ones."""',
                f"    g = torch.Generator().manual_seed({self.seed} + seed)",
                f"    return ({draws})",
                *changed,
                "",
            ]
        )


def _environment(settings: dict[str, Any]) -> str:
    from ..knobs import knobs

    described = [
        f"{k}={v}" if k in OPTIONS else f"{getattr(type(knobs), k).env}={v}" for k, v in settings.items()
    ]
    return " ".join(described) or "the defaults"


def _numel(shape: list[int]) -> int:
    count = 1
    for s in shape:
        count *= s
    return count


def _merged(shape: list[int], rng: random.Random) -> list[int]:
    if len(shape) < 2:
        return [*shape, 1]
    at = rng.randrange(len(shape) - 1)
    return [*shape[:at], shape[at] * shape[at + 1], *shape[at + 2 :]]


def _split(shape: list[int], rng: random.Random) -> list[int]:
    at = rng.randrange(len(shape))
    size = shape[at]
    factors = [f for f in range(2, size) if size % f == 0]
    if not factors:
        return [*shape[:at], 1, size, *shape[at + 1 :]]
    f = rng.choice(factors)
    return [*shape[:at], f, size // f, *shape[at + 1 :]]


def _broadcasts(small: torch.Size, big: list[int]) -> bool:
    if len(small) > len(big):
        return False
    return all(s in (1, b) for s, b in zip(reversed(small), reversed(big), strict=False))


def _tame(value: torch.Tensor, specials: bool = False) -> bool:
    """`specials`: NaN and infinities allowed where the program's inputs hold them, in at most half of the
    elements (a value all NaN checks nothing)."""
    if value.numel() == 0 or value.numel() > MAX_NUMEL or value.dim() > 5:
        return False
    if not value.is_floating_point():
        return True
    flat = value.detach().double()
    finite = flat.isfinite()
    if not finite.all():
        if not specials or 2 * int(finite.sum()) < flat.numel():
            return False
        flat = flat[finite]
    return bool(flat.abs().max() <= 1e3 and (flat.numel() < 4 or flat.std() > 0))


def _eval(expression: str, gen: torch.Generator) -> Any:
    return eval(expression, {"torch": torch, "nn": torch.nn, "g": gen})


def _dotted(values: dict[str, Any]) -> dict[str, Any]:
    """`self.pN` names resolve through an object holding the parameters, buffers and attributes."""
    holder = type("Params", (), {})()
    plain = {}
    for name, value in values.items():
        if name.startswith("self."):
            setattr(holder, name[5:], value)
        else:
            plain[name] = value
    return {"self": holder, **plain}


def generate(seed: int) -> Program:
    """The program of `seed`: the same source on every machine and run."""
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (eager's about the candidate lines it then drops)
        return _Builder(seed).program()


@dataclass
class Outcome:
    status: str  # pass; wrong (answers differ, or results share memory eager's do not); unstable (differ
    # where eager's rounding decides, see check); copied (right, but a result eager returns as a view of an
    # input, the state or another result is a copy: a view whose offset the data decides, `x[i.item()]`);
    # refused (CompileError, ExportError); crash (anything else); invalid (the generator's: eager fails
    # on fresh inputs, or a line fixes a dim DYNAMIC declares)

    detail: str = ""
    error: float | None = None

    @property
    def signature(self) -> tuple[str, str]:
        """What a reduced program must still show: the status and, for an error, its first line, for a wrong
        answer whether the values or the memory results share differ."""
        if self.status in ("wrong", "unstable"):
            return self.status, "memory" if "memory" in self.detail else ""
        return self.status, self.detail.split("\n")[0]


def check(program: Program, device: torch.device) -> Outcome:
    """Compiles `program` on its example inputs and calls it on those and fresh ones (`Built.calls`),
    beside eager calls of a copy of the model (a program may write its inputs and state). Each call's
    results must alias what eager's alias (an input, the state, each other); after the calls it compares
    the results (earlier calls' must survive later ones), the inputs as each call left them and the state."""
    import pygraph

    from ..frontend.export import ExportError
    from ..knobs import knobs

    built = program.build()
    model = built.model.to(device)
    pristine = copy.deepcopy(model)
    reference = copy.deepcopy(model)
    plan = built.calls()
    copied = ""  # (the first call whose results are copies where eager returns views)

    def call(run: Callable[..., Any], holder: torch.nn.Module, index: int, exact: bool = False) -> Any:
        """`run` (the holder or what compiled it) on call `index`'s inputs, after the caller's changes."""
        if built.between is not None:
            built.between(holder, index)
        seed, sizes, transposed = plan[index]
        on = torch.device("cpu") if exact else device
        args = tuple(x.to(on) if isinstance(x, torch.Tensor) else x for x in built.inputs(seed, **sizes))
        args = tuple(_transposed(x) for x in args) if transposed else args
        args = _double(args) if exact else args
        return run(*args), args

    settings = built.settings
    try:
        options = {k: v for k, v in settings.items() if k in OPTIONS}
        if built.dynamic:
            options["dynamic_shapes"] = built.dynamic_shapes()
        with torch.no_grad(), knobs.scope(**{k: v for k, v in settings.items() if k not in OPTIONS}):
            compiled = pygraph.export_and_compile(model, call(lambda *a: a, model, 0)[0], **options)
            got, ref, at_return = [], [], []
            for index in range(len(plan)):
                try:
                    ref.append(call(reference, reference, index))
                except Exception as exc:  # (the generator's: eager accepted the example, not these)
                    return Outcome("invalid", f"eager: {type(exc).__name__}: {exc}")
                got.append(call(compiled, model, index))
                (mine, _), (eagers, views) = _memory(*got[-1], model), _memory(*ref[-1], reference)
                if mine - eagers:  # (a later write to one would change the other, as eager's would not)
                    return Outcome(
                        "wrong", f"call {index}: results share memory eager's do not: {mine - eagers}"
                    )
                if views - mine:
                    copied = f"call {index}: results are copies where eager's are views: {views - mine}"
                at_return.append(relative_error(got[-1], ref[-1]))
            # (copies do not follow later writes to what eager's views view, as compiling warned: compared
            # as each call returns them)
            errors = at_return if copied else [relative_error(g, r) for g, r in zip(got, ref, strict=True)]
            errors.append(relative_error(_state(model), _state(reference)))
    except (pygraph.CompileError, ExportError) as exc:  # (named refusals, pygraph's or torch.export's)
        said = " ".join(str(exc).split())
        if built.dynamic and any(s in said for s in _SPECIALIZED):  # (the generator's: a line ties n)
            return Outcome("invalid", f"a line fixes a dim DYNAMIC declares: {said}")
        return Outcome("refused", said)
    except Exception as exc:
        return Outcome("crash", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-4)}")
    tensors = [t for t in pytree.tree_leaves(ref) if isinstance(t, torch.Tensor)]
    bound = max((TOLERANCE.get(t.dtype, 1e-2) for t in tensors if t.is_floating_point()), default=0.0)
    if max(errors) <= bound:
        return Outcome("copied", copied, max(errors)) if copied else Outcome("pass", error=max(errors))
    # Near a discontinuity (a remainder of a value that cancels to about 0, a tie) eager's own rounding
    # decides: where eager is that far from the program computed in float64 and pygraph no farther, or
    # eager is 10% off, no answer is the right one. The float64 program runs on the CPU, whose kernels are
    # another implementation than the GPU's (a float64 program's own eager: CUDA's hardswish takes 1/6 in
    # float32).
    try:
        exact = copy.deepcopy(pristine).double().cpu()  # (pristine stays for the rounded evaluations below)
        with torch.no_grad():  # (in order: a call may write the state the next one reads)
            exact_calls = [call(exact, exact, index, exact=True) for index in range(len(plan))]
        exact_calls.append(_state(exact))
    except Exception as exc:  # (a program whose float64 form eager refuses)
        detail = f"relative errors per call and of the state: {errors}; no float64 run ({exc})"
        return Outcome("wrong", detail, max(errors))
    # Other faithful evaluations, every op (`_RoundEachOp`) or every call of torch's API (`_RoundEachCall`)
    # correctly rounded: where one and eager differ by more than the tolerance, rounding decides the answer
    # (a tie, a remainder or truncation of a rounded value), and pygraph's is as good as either if it is
    # that near.
    opinions = {}  # mode: (its distance from eager, pygraph's from it), per call and of the state
    for mode in (_RoundEachOp, _RoundEachCall):
        rounded = copy.deepcopy(pristine)
        try:
            with torch.no_grad(), mode():
                rounded_calls = [call(rounded, rounded, index) for index in range(len(plan))]
        except Exception:  # (one the mode cannot evaluate in float64 gives no opinion)
            continue
        rounded_calls.append(_state(rounded))
        opinions[mode.__name__] = (
            [relative_error(r, e) for r, e in zip(rounded_calls, [*ref, _state(reference)], strict=True)],
            [relative_error(g, r) for g, r in zip([*got, _state(model)], rounded_calls, strict=True)],
        )
    eager_off = _distances([*ref, _state(reference)], exact_calls)
    own_off = _distances([*got, _state(model)], exact_calls)
    detail = (
        f"relative errors per call and of the state: against eager {errors}; against float64, "
        f"eager's {eager_off} and pygraph's {own_off}; "
        + "; ".join(f"against {m}, eager's {e} and pygraph's {o}" for m, (e, o) in opinions.items())
    )
    worst = max(range(len(errors)), key=errors.__getitem__)
    meaningless = eager_off[worst] >= 0.1  # (eager itself 10% off: a remainder of a half sum's rounding)
    unstable = eager_off[worst] > bound / 10 and (
        meaningless or own_off[worst] <= 2 * eager_off[worst] + bound
    )
    rounding_decides = any(
        e[worst] > bound and (o[worst] <= bound or errors[worst] <= 2 * e[worst] + bound)
        for e, o in opinions.values()
    )
    return Outcome("unstable" if unstable or rounding_decides else "wrong", detail, max(errors))


class _RoundEachOp(TorchDispatchMode):
    """Evaluates each ATen op on its operands widened to float64 and rounds its results (and what it writes)
    to the dtypes eager's op gives them: the program as an implementation whose every op is correctly
    rounded computes it. Views and random ops run as they are."""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func.is_view or torch.Tag.nondeterministic_seeded in func.tags:
            return func(*args, **kwargs)
        wide_args, wide_kwargs = pytree.tree_map(_widened, (args, kwargs))
        out = func(*args, **kwargs)
        try:
            wide_out = func(*wide_args, **wide_kwargs)
        except Exception:  # (an op defined for some dtypes only: softmax's half_to_float) keeps eager's
            return out
        for i, argument in enumerate(func._schema.arguments):
            if argument.alias_info is not None and argument.alias_info.is_write:
                if i < len(args):
                    _round_into(args[i], wide_args[i])
                else:
                    _round_into(kwargs.get(argument.name), wide_kwargs.get(argument.name))
        _round_into(out, wide_out)
        return out


class _RoundEachCall(TorchFunctionMode):
    """Evaluates each call of torch's API whose results are new tensors (not views, not written operands) on
    its operands widened to float64 and rounds its results to eager's dtypes: the ops as the program writes
    them correctly rounded, where eager rounds the ATen ops they decompose into (a linear layer of a
    non-contiguous input is a product and an addition, each rounded) and pygraph may round once."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        operands = [x for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
        out = func(*args, **kwargs)
        results = [x for x in pytree.tree_leaves(out) if isinstance(x, torch.Tensor)]
        if (
            not results
            or not any(x.is_floating_point() for x in operands)
            or _storages(results) & _storages(operands)
        ):
            return out
        try:
            wide_out = func(*pytree.tree_map(_widened, args), **pytree.tree_map(_widened, kwargs))
        except Exception:  # (a call defined for some dtypes only) keeps eager's
            return out
        _round_into(out, wide_out)
        return out


def _round_into(narrow: Any, wide: Any) -> None:
    """Rounds each tensor of `wide` into its counterpart of `narrow`, in the latter's dtype."""
    for n, w in zip(pytree.tree_leaves(narrow), pytree.tree_leaves(wide), strict=False):
        if isinstance(n, torch.Tensor) and isinstance(w, torch.Tensor) and n.shape == w.shape:
            n.copy_(w)


def _storages(tensors: list[torch.Tensor]) -> set[int]:
    return {x.untyped_storage().data_ptr() for x in tensors}


def _widened(value: Any) -> Any:
    """A float64 copy of a floating tensor, a copy of any other (an op may write its operands)."""
    if not isinstance(value, torch.Tensor):
        return value
    return value.double() if value.is_floating_point() and value.dtype != torch.float64 else value.clone()


# What torch.export says when the model fixes a dim declared dynamic, and what torch (2.11, 2.13) raises
# instead where that dim's range is two sizes that a floor division maps to one
_SPECIALIZED = ("Constraints violated", "Cannot create Dim with inconsistent")


def _memory(results: Any, args: tuple[Any, ...], model: torch.nn.Module) -> tuple[set[Any], set[Any]]:
    """Which results share memory with which inputs, parameters and buffers (by name) and earlier results
    ((result, owner) pairs), and of those, which results are the owner or a view of it (`_base`; a view
    of what an input or the state is a view of, since the caller's tensors may be views themselves)."""
    owners = [(f"input {i}", x) for i, x in enumerate(args) if isinstance(x, torch.Tensor)]
    owners += [*model.named_parameters(), *model.named_buffers()]
    shared, viewed = set(), set()
    for j, r in enumerate(t for t in pytree.tree_leaves(results) if isinstance(t, torch.Tensor)):
        base = r if r._base is None else r._base
        for name, owner in owners:
            if r.untyped_storage().data_ptr() == owner.untyped_storage().data_ptr():
                shared.add((j, name))
                if base is owner or (not name.startswith("result") and base is owner._base):
                    viewed.add((j, name))
        owners.append((f"result {j}", r))
    return shared, viewed


def _distances(values: list[Any], exact: list[Any]) -> list[float]:
    """Each of `values` against its float64 counterpart, both ways: where the exact result is 0, the
    rounding error is all there is."""
    pairs = [(_double(v), x) for v, x in zip(values, exact, strict=True)]
    return [max(relative_error(v, x), relative_error(x, v)) for v, x in pairs]


def _state(model: torch.nn.Module) -> list[torch.Tensor]:
    """The parameters and buffers, persistent or not."""
    return [t.detach() for t in [*model.parameters(), *model.buffers()]]


def _transposed(x: torch.Tensor) -> torch.Tensor:
    """`x` with its dims in memory in reverse order (a 1-d tensor: every other element)."""
    if not isinstance(x, torch.Tensor) or x.dim() == 0:
        return x
    if x.dim() == 1:
        return torch.stack([x, x], -1)[:, 0]
    return x.transpose(0, -1).contiguous().transpose(0, -1)


def _double(value: Any) -> Any:
    return pytree.tree_map(
        lambda t: t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t, value
    )


def reduce(program: Program, outcome: Outcome, device: torch.device) -> Program:
    """`program` with every line of forward and every result it can lose while `check` still shows the
    same signature: a delta-debugging pass over lines, repeated until nothing more goes."""
    lines = program.source.split("\n")
    body = range(lines.index(next(x for x in lines if x.startswith("    def forward"))) + 1, len(lines))
    ret = next(i for i in body if lines[i].startswith("        return "))

    def candidates(current: list[str]) -> list[list[str]]:
        out = []
        returned = current[ret].removeprefix("        return ")
        plain = returned[0] not in "{(" and "[" not in returned  # (a tuple: its results may go)
        results = returned.rstrip(",").split(", ")
        for j in range(len(results)) if plain and len(results) > 1 else ():
            kept = results[:j] + results[j + 1 :]
            out.append([*current[:ret], f"        return {', '.join(kept)},", *current[ret + 1 :]])
        for i in reversed(range(body.start, ret)):
            if current[i]:
                out.append([*current[:i], "", *current[i + 1 :]])
        return out

    current = lines
    changed = True
    while changed:
        changed = False
        for attempt in candidates(current):
            trial = Program(program.name, "\n".join(attempt))
            if _runs_in_eager(trial, device) and check(trial, device).signature == outcome.signature:
                current, changed = attempt, True
                break
    source = "\n".join(x for i, x in enumerate(current) if x or i not in range(body.start, ret))
    return Program(program.name, source)


def _runs_in_eager(program: Program, device: torch.device) -> bool:
    """Whether eager runs `program` on its example inputs: a failure met while compiling holds in a
    program whose lines after the failing one are gone, and the kept program must still be one eager
    runs (no result returned that no line defines)."""
    try:
        built = program.build()
        inputs = built.inputs(0)
        if built.between is not None:
            built.between(built.model, 0)
        with torch.no_grad():
            built.model.to(device)(*(x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs))
    except Exception:
        return False
    return True


def seeds(spec: str) -> range:
    first, _, last = spec.partition(":")
    return range(int(first), int(last)) if last else range(int(first), int(first) + 1)


def main(programs: Iterable[Program], keep: Path | None, shrink: bool) -> int:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    warnings.filterwarnings("ignore", category=RuntimeWarning)  # the interpreter's, on masked-off lanes
    counts: dict[str, int] = {}
    for program in programs:
        start = time.perf_counter()
        outcome = check(program, device)
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
        took = time.perf_counter() - start
        error = "" if outcome.error is None else f" {outcome.error:.1e}"
        print(f"{program.name}: {outcome.status}{error} ({program.lines} lines, {took:.1f} s)", flush=True)
        if outcome.status != "pass":
            print("   " + outcome.detail.replace("\n", "\n   "), flush=True)
            if shrink and outcome.status not in ("unstable", "invalid", "copied"):
                program = reduce(program, outcome, device)
                print(f"   reduced to {program.lines} lines", flush=True)
            if keep is not None:
                keep.mkdir(parents=True, exist_ok=True)
                (keep / f"{Path(program.name).stem.replace(' ', '_')}.py").write_text(program.source)
    print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 0 if set(counts) <= {"pass", "copied", "refused", "unstable", "invalid"} else 1


def cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="pygraph fuzz",
        description="Compile random programs (or programs kept by an earlier run) and compare them with eager.",
    )
    parser.add_argument("files", nargs="*", type=Path, help="programs to check instead of generated ones")
    parser.add_argument("--seeds", default="0:100", help="FIRST:END or one seed")
    parser.add_argument(
        "--keep", type=Path, help="write each failing program here (seed_N.py; a file checked: its own name)"
    )
    parser.add_argument(
        "--reduce", action="store_true", help="drop the lines a failure does not need before keeping it"
    )
    args = parser.parse_args(argv)
    if args.files:
        programs: Iterable[Program] = [Program(str(f), f.read_text()) for f in args.files]
    else:
        programs = (generate(seed) for seed in seeds(args.seeds))
    return main(programs, args.keep, args.reduce)


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
