"""Derived state (frontend/derived_state.py), aligned matmul outputs (frontend/align_matmuls.py) and the
layouts of results after rewrites; GPU layouts forced on the CPU with PYGRAPH_GPU_LAYOUTS=on."""

import copy
import re

import pytest
import torch
from gpu_marks import needs_gpu
from torch import nn

import pygraph
from pygraph.frontend import export_program, hoist_derived_state
from pygraph.ir.plan import Segment
from pygraph.knobs import knobs
from pygraph.metrics import relative_error

aten = torch.ops.aten


def targets(program: torch.export.ExportedProgram) -> list[object]:
    return [n.target for n in program.graph.nodes if n.op == "call_function"]


class Mixed(nn.Module):
    """One computation on weights alone worth keeping (`w.t().contiguous()`), and ones that must stay
    per call: random numbers, a buffer the model writes, a result larger than its weight, an output."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 6))
        self.scale = nn.Parameter(torch.randn(6))
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        self.calls.add_(1)
        y = x @ self.w.t().contiguous()  # derived: a copy of w, transposed
        noise = torch.rand(6) * self.scale  # random: per call
        counted = self.calls * self.scale  # reads a written buffer: per call
        spread = self.scale.expand(4, 6) + 1  # 24 elements from 6: per call
        return y, noise, counted, spread, self.scale * 2  # the last is an output: per call


def test_only_computations_on_unwritten_state_are_hoisted():
    program = export_program(Mixed(), (torch.randn(3, 6),))
    derived = hoist_derived_state(program)
    assert derived is not None and len(derived.names) == 1
    assert [role for role, _ in derived.sources] == ["parameter"]
    assert aten.clone.default not in targets(program)
    assert {aten.rand.default, aten.add.Tensor} <= set(targets(program))
    assert targets(program).count(aten.mul.Tensor) == 3


def test_a_program_on_inputs_alone_has_no_derived_state():
    class Plain(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.exp() + 1

    assert hoist_derived_state(export_program(Plain(), (torch.randn(3),))) is None


def test_derived_values_are_never_views_into_larger_tensors():
    """The plan is built for the layout of the first values; a recipe whose result is a view of a larger
    tensor could return another layout when run again (ConViT's relative indices did on the GPU)."""
    graph = torch.fx.Graph()
    table = graph.placeholder("table")
    graph.output((graph.call_function(torch.ops.aten.select.int, (table, 3, 2)),))
    derived = pygraph.frontend.DerivedState(
        ["channel"], [("buffer", "table")], torch.fx.GraphModule({}, graph)
    )
    table = torch.randn(1, 5, 5, 3)
    (value,) = derived.compute([table])
    assert value.storage_offset() == 0 and value.is_contiguous() and value._base is None
    torch.testing.assert_close(value, table[..., 2], rtol=0, atol=0)
    (plane,) = derived.compute([table.permute(0, 3, 1, 2).contiguous().permute(0, 2, 3, 1)])
    assert plane.storage_offset() == 0 and plane.untyped_storage().nbytes() == 25 * 4  # (channels last)


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c2(torch.relu(self.c1(x)))  # NCHW for the caller, as eager gives it


def check(compiled: pygraph.CompiledModel, model: nn.Module, shape: tuple[int, ...]) -> None:
    x = torch.randn(*shape)
    got, want = compiled(x), model(x)
    assert got.stride() == want.stride()
    assert relative_error(got, want) <= 1e-4


def test_converted_weights_are_derived_once_and_follow_the_model():
    torch.manual_seed(0)
    model = ConvNet().eval()
    with knobs.scope(gpu_layouts="on"), torch.no_grad():
        compiled = pygraph.export_and_compile(model, (torch.randn(2, 3, 8, 8),))
        derived = [a for a in compiled.plan.arguments if a.role == "derived"]
        assert len(derived) == 2  # both weights, in NHWC
        check(compiled, model, (2, 3, 8, 8))
        model.c1.weight.mul_(-2)  # in place
        check(compiled, model, (2, 3, 8, 8))
        model.load_state_dict({k: torch.randn_like(v) for k, v in model.state_dict().items()})
        check(compiled, model, (2, 3, 8, 8))
        model.c2.weight = nn.Parameter(torch.randn(4, 8, 3, 3))  # replaced
        check(compiled, model, (2, 3, 8, 8))


def test_programs_of_one_model_hold_one_copy_of_the_same_derived_values():
    """A shape variant computes the same NHWC weights from the same parameters: it holds the first
    program's copies, and both follow the model's changes."""
    torch.manual_seed(0)
    model = ConvNet().eval()

    def held(program: pygraph.CompiledModel) -> set[int]:
        return {value.data_ptr() for value in program._derived_values.values()}

    batch = torch.export.Dim("batch", max=16)
    with knobs.scope(gpu_layouts="on", padding="off"), torch.no_grad():
        compiled = pygraph.export_and_compile(
            model, (torch.randn(2, 3, 8, 8),), dynamic_shapes={"x": {0: batch}}
        )
        check(compiled, model, (3, 3, 8, 8))  # another batch: a program of its own
        (variant,) = compiled._variants.values()
        assert len(held(compiled)) == 2 and held(variant) == held(compiled)
        for change in (
            lambda: model.c1.weight.mul_(-2),
            lambda: model.load_state_dict({k: torch.randn_like(v) for k, v in model.state_dict().items()}),
            lambda: setattr(model.c2, "weight", nn.Parameter(torch.randn(4, 8, 3, 3))),
        ):
            change()
            check(compiled, model, (3, 3, 8, 8))
            check(compiled, model, (2, 3, 8, 8))
            assert held(variant) == held(compiled)


class Head(nn.Module):
    """A linear layer and a matmul with 1001 output columns (4004 bytes a row: unaligned), one result
    returned as it is and one read by a generated kernel."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(32, 1001)
        self.w = nn.Parameter(torch.randn(32, 1001) / 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.linear(x), torch.softmax(x @ self.w, dim=-1)


def test_unaligned_matmul_outputs_are_split_or_padded_and_results_keep_eager_layouts(tf32):
    torch.manual_seed(0)
    model = Head()
    x = torch.randn(1100, 32)  # outputs of 1.1M elements: large enough to align
    with knobs.scope(gpu_layouts="on"):
        program = export_program(model, (x,))
    # the linear's [N, K] weight: its first 1000 rows and the last one, no copy; w's rows: padded
    assert targets(program).count(aten.cat.default) == 1
    assert targets(program).count(aten.constant_pad_nd.default) == 1
    with knobs.scope(gpu_layouts="on"), torch.no_grad():
        compiled = pygraph.export_and_compile(model, (x,))
        shapes = [
            tuple(compiled.plan.buffers[a.buffer].layout.shape)
            for a in compiled.plan.arguments
            if a.role == "derived"
        ]
        assert shapes == [(32, 1004)]
        for _ in range(2):
            x = torch.randn(1100, 32)
            for got, want in zip(compiled(x), model(x), strict=True):
                assert got.stride() == want.stride() == (1001, 1)
                assert relative_error(got, want) <= 1e-4


def test_a_weight_with_unaligned_rows_is_padded_not_split(tf32):
    """A slice of a weight whose rows are 31 values apart: its columns' prefix would still be unaligned."""

    class Sliced(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.big = nn.Parameter(torch.randn(1001, 31) / 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.linear(x, self.big[:, :30])

    torch.manual_seed(0)
    model, x = Sliced(), torch.randn(1100, 30)
    with knobs.scope(gpu_layouts="on"):
        program = export_program(model, (x,))
    assert aten.cat.default not in targets(program)
    assert targets(program).count(aten.constant_pad_nd.default) == 1
    with knobs.scope(gpu_layouts="on"), torch.no_grad():
        compiled = pygraph.export_and_compile(model, (x,))
        x = torch.randn(1100, 30)
        assert relative_error(compiled(x), model(x)) <= 1e-4


@pytest.mark.parametrize("head", ["tied", "linear"])
def test_an_aligned_product_read_by_kernels_and_vendor_calls_matches_eager(head, tf32):
    """GPT-2's tied head (`h @ wte.t()`, a [K, N] view of an [N, K] weight) or a bias-free linear, read by
    a softmax kernel, a slice and another product; the weight changed in place between calls. The tied
    head's aligned prefix and last column are joined by a cat (two products); the linear's 1200 rows are
    written in phases of rows (passes/row_phases.py: ten products, no copy)."""

    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Parameter(torch.randn(1003, 24) / 4)
            self.proj = nn.Parameter(torch.randn(1003, 8) / 16)

        def forward(self, h: torch.Tensor) -> tuple[torch.Tensor, ...]:
            logits = h @ self.wte.t() if head == "tied" else nn.functional.linear(h, self.wte)
            return torch.softmax(logits, -1), logits[..., 999:], logits @ self.proj

    torch.manual_seed(0)
    model = Tied()
    h = torch.randn(2, 600, 24)
    with knobs.scope(gpu_layouts="on"):
        program = export_program(model, (h,))
    assert targets(program).count(aten.cat.default) == (head == "tied")
    assert aten.constant_pad_nd.default not in targets(program)
    with knobs.scope(gpu_layouts="on"), torch.no_grad():
        compiled = pygraph.export_and_compile(model, (h,))
        assert not [a for a in compiled.plan.arguments if a.role == "derived"]
        wte = next(a.buffer for a in compiled.plan.arguments if a.name == "wte")
        heads = [
            n
            for s in compiled.plan.steps
            for n in s.nodes
            if n.op == "aten.mm.out" and any(compiled.plan.root(b).id == wte for b in n.reads)
        ]
        assert len(heads) == (10 if head == "linear" else 2)
        for _ in range(2):
            h = torch.randn(2, 600, 24)
            for got, want in zip(compiled(h), model(h), strict=True):
                assert got.is_contiguous()  # (eager's slice is a view of its logits: same values)
                assert relative_error(got, want) <= 1e-4
            model.wte.mul_(-1.5)  # in place: the next call must see it


@pytest.mark.gpu
@needs_gpu
def test_a_split_matmul_with_tf32_on_the_gpu_matches_float64(tf32):
    """The split product through cuBLAS's TF32 kernels, calls queued back to back, against float64."""
    torch.manual_seed(0)
    model = Head().cuda()
    calls = [torch.randn(1100, 32, device="cuda") for _ in range(3)]
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (calls[0],), target="cuda")
        assert "aten.cat" not in compiled.ir("plan")  # (the cat is a generated kernel)
        results = [compiled(x) for x in calls]
        torch.cuda.synchronize()
        reference = copy.deepcopy(model).double()
        for x, got in zip(calls, results, strict=True):
            for g, w in zip(got, reference(x.double()), strict=True):
                assert g.stride() == (1001, 1)
                assert relative_error(g, w.float()) <= 5e-3


@pytest.mark.parametrize("route", ["auto", "off"])
def test_few_rows_of_unaligned_width_are_left_to_the_generated_kernel(route, tf32):
    """16 rows by 65537 columns: the generated matmul kernel writes them as they are (faster than either
    rewrite, passes/matmul_kernel.py), unless PYGRAPH_MATMUL=off leaves products to cuBLAS."""
    linear = nn.Linear(8, 65537)
    with knobs.scope(gpu_layouts="on", matmul=route):
        program = export_program(linear, (torch.randn(16, 8),))
    assert (aten.cat.default in targets(program)) == (route == "off")


def test_unaligned_matmuls_stay_as_they_are_without_tf32(no_tf32):
    """In IEEE float32 cuBLAS's unaligned kernels are as fast (module docstring)."""
    with knobs.scope(gpu_layouts="on"):
        program = export_program(Head(), (torch.randn(1100, 32),))
    assert not {aten.cat.default, aten.constant_pad_nd.default} & set(targets(program))


def test_small_or_aligned_matmuls_are_left_alone(tf32):
    class Small(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.odd, self.even = nn.Linear(32, 1001), nn.Linear(32, 1000)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return self.odd(x[:8]), self.even(x)

    with knobs.scope(gpu_layouts="on"):
        program = export_program(Small(), (torch.randn(1100, 32),))
    assert not {aten.cat.default, aten.constant_pad_nd.default} & set(targets(program))


@pytest.mark.parametrize("setting", ["auto", "off"])
def test_cpu_programs_keep_their_layouts_unless_forced(setting, tf32):
    with knobs.scope(gpu_layouts=setting):
        program = export_program(Head(), (torch.randn(1100, 32),))
    assert not {aten.cat.default, aten.constant_pad_nd.default} & set(targets(program))


class WideConvs(nn.Module):
    """Three 64-channel 3 x 3 convolutions (147 KB of weights each) on 4 x 4 pixels (4 KB of activations),
    after a small stem."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 64, 1)
        self.convs = nn.ModuleList(nn.Conv2d(64, 64, 3, padding=1) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        for conv in self.convs:
            x = torch.relu(conv(x)) + x
        return x


@pytest.mark.parametrize(("mode", "held"), [("auto", 0), ("all", 3), ("none", 0)])
def test_weight_copies_larger_than_the_working_memory_are_made_in_each_call(mode: str, held: int):
    """auto: the NHWC copies (441 KB) outgrow the activations (about 8 KB), so each call converts the weights
    into the arena, where they share bytes; the results follow the model's weights either way."""
    torch.manual_seed(0)
    model = WideConvs().eval()
    with knobs.scope(gpu_layouts="on", derived=mode), torch.no_grad():
        compiled = pygraph.export_and_compile(model, (torch.randn(1, 3, 4, 4),))
        derived = [a for a in compiled.plan.arguments if a.role == "derived"]
        assert len(derived) == held
        nodes = [n for step in compiled.plan.steps if isinstance(step, Segment) for n in step.nodes]
        copies = [n for n in nodes if n.kind == "kernel" and re.fullmatch(r"k\d+_clone", n.kernel)]
        assert len(copies) == 1 + 3 - held  # the input's conversion, and a weight's where it is not held
        check(compiled, model, (1, 3, 4, 4))
        model.convs[1].weight.mul_(-2)
        check(compiled, model, (1, 3, 4, 4))


def test_a_single_large_copy_stays_held():
    """One NHWC weight far larger than the activations: converting it in each call would need its bytes in
    the arena anyway, so it is held."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1)).eval()
    with knobs.scope(gpu_layouts="on"), torch.no_grad():
        compiled = pygraph.export_and_compile(model, (torch.randn(1, 64, 2, 2),))
        assert len([a for a in compiled.plan.arguments if a.role == "derived"]) == 1
        check(compiled, model, (1, 64, 2, 2))


class KeptRows(nn.Module):
    """A copy of a buffer (Idefics3's empty key and value caches, cloned by the cache's update) beside rows
    a mask keeps, whose count the data decide."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("bias", torch.randn(4))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        scale = (y * 2).exp().sum()
        rows = x[x.sum(1) > 0]
        return rows * scale + self.bias.clone()


def test_working_memory_of_rows_the_data_decide():
    """Measuring the working memory compared a size of u0 rows with a fixed one, and torch raised
    GuardOnDataDependentSymNode (hf/idefics3); such a size counts its fewest bytes."""
    torch.manual_seed(0)
    model = KeptRows().eval()
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (torch.randn(64, 4), torch.randn(8, 8)))
        for _ in range(2):
            x, y = torch.randn(64, 4), torch.randn(8, 8)
            assert relative_error(compiled(x, y), model(x, y)) <= 1e-6


def test_derived_knob_is_checked():
    with (
        knobs.scope(gpu_layouts="on", derived="sometimes"),
        pytest.raises(ValueError, match="PYGRAPH_DERIVED"),
    ):
        pygraph.export_and_compile(WideConvs().eval(), (torch.randn(1, 3, 4, 4),))


class Positions(nn.Module):
    """Position embeddings at fixed positions (a buffer of indices), as BERT's: the rows of a large table
    are gathered by the kernel that adds them, not held; a lookup of few rows is held, and so is one read
    through a view (MT5's biases, which would be an ATen call each call)."""

    def __init__(self, rows: int, viewed: bool) -> None:
        super().__init__()
        self.table, self.viewed = nn.Embedding(512, 256), viewed
        self.register_buffer("positions", torch.arange(rows)[None])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = self.table(self.positions)
        rows = rows.transpose(1, 2).transpose(1, 2) if self.viewed else rows
        return torch.nn.functional.layer_norm(x + rows, (256,))


@pytest.mark.parametrize(
    ("rows", "viewed", "held"), [(384, False, False), (16, False, True), (384, True, True)]
)
def test_large_lookups_that_pointwise_ops_read_stay_in_the_program(
    rows: int, viewed: bool, held: bool
) -> None:
    torch.manual_seed(0)
    model, x = Positions(rows, viewed).eval(), torch.randn(2, rows, 256)
    program = export_program(model, (x,))
    derived = hoist_derived_state(program)
    assert (derived is not None) == held
    assert (aten.embedding.default in targets(program)) != held
    compiled = pygraph.export_and_compile(model, (x,))
    kernels = [n for s in compiled.plan.steps for n in s.nodes if n.kind == "kernel"]
    assert len(kernels) == 1  # the gather joins the add and the norm
    assert relative_error(compiled(x), model(x)) <= 1e-6
