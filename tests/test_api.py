"""`export_and_compile` end to end on the CPU emulator: results against eager, errors, stages, plan edits."""

import concurrent.futures
import copy
import gc
import pickle
import re
import subprocess
import sys
import warnings
import weakref
from pathlib import Path

import pytest
import sympy
import torch

import pygraph
from pygraph.frontend import UnsupportedError
from pygraph.knobs import knobs
from pygraph.metrics import relative_error


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(32, 64),
            torch.nn.GELU(),
            torch.nn.LayerNorm(64),
            torch.nn.Linear(64, 16),
            torch.nn.ReLU(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class SmallCNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.bn2 = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = x + torch.nn.functional.hardswish(self.bn2(self.conv2(x)))
        return self.fc(torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))


class TransformerBlock(torch.nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.qkv, self.proj = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)
        self.fc1, self.fc2 = torch.nn.Linear(dim, 4 * dim), torch.nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


def randomize_batch_norm(model: torch.nn.Module) -> torch.nn.Module:
    """Non-trivial running statistics and affine parameters, so batch norm is really tested."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.5, 0.5)
    return model


@pytest.mark.parametrize(
    ("make", "shape"),
    [
        (MLP, (4, 32)),
        (lambda: randomize_batch_norm(SmallCNN()), (2, 3, 16, 16)),
        (TransformerBlock, (2, 8, 32)),
    ],
    ids=["mlp", "cnn", "transformer"],
)
def test_emulator_matches_eager(make, shape):
    torch.manual_seed(0)
    model = make().eval()
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (torch.randn(shape),))
        assert compiled.target == "emulator"
        for _ in range(3):
            x = torch.randn(shape)
            got, ref = compiled(x), model(x)
            assert relative_error(got, ref) <= 1e-4
            torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5 * ref.abs().max().item())
    stats = compiled.stats()
    assert stats["graphs"] == 1 and stats["nodes"]["kernel"] >= 1 and stats["library_calls"] >= 1
    assert compiled.explain().coverage == {"before": 1.0, "after": 1.0}


def test_output_structure_and_earlier_results_survive():
    class TwoOutputs(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> dict:
            return {"double": x * 2, "pair": (x.relu(), x.sum(0))}

    x = torch.randn(3, 5)
    compiled = pygraph.export_and_compile(TwoOutputs(), (x,))
    first = compiled(x)
    second = compiled(torch.randn(3, 5))
    assert set(first) == {"double", "pair"} and isinstance(first["pair"], tuple)
    torch.testing.assert_close(first["double"], x * 2)  # not overwritten by the second call
    assert not torch.equal(first["double"], second["double"])


def test_a_result_lives_as_long_as_its_caller_keeps_it():
    """The compiled model keeps no reference to what a call returned (the CUDA runtime's side of this is
    tested on the GPU, test_gpu_runtime.py)."""
    compiled = pygraph.export_and_compile(MLP().eval(), (torch.randn(4, 32),))
    with torch.no_grad():
        for _ in range(2):
            result = weakref.ref(compiled(torch.randn(4, 32)))
            gc.collect()
            assert result() is None


def test_mutated_buffer_and_input_behave_as_in_eager():
    class Counter(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("count", torch.zeros(3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.count.add_(1)
            x.mul_(2)
            return x + self.count

    eager, ours = Counter(), Counter()
    compiled = pygraph.export_and_compile(ours, (torch.randn(3),))
    assert ours.count.sum() == 0  # compiling does not run the model on its real state
    for _ in range(3):
        x = torch.randn(3)
        x_ours = x.clone()
        ref = eager(x)
        got = compiled(x_ours)
        torch.testing.assert_close(got, ref)
        torch.testing.assert_close(x_ours, x)  # the caller's input was doubled in place
    torch.testing.assert_close(ours.count, eager.count)


@pytest.fixture
def model_and_input():
    return MLP().eval(), torch.randn(4, 32)


def test_input_errors_name_the_argument(model_and_input):
    model, x = model_and_input
    compiled = pygraph.export_and_compile(model, (x,))
    with pytest.raises(TypeError, match=r"takes 1 inputs \(x\), got 2"):
        compiled(x, x)
    with pytest.raises(TypeError, match=r"input 'x' has dtype torch.float64, expected torch.float32"):
        compiled(x.double())
    with pytest.raises(ValueError, match=r"input 'x' is on meta, expected a cpu tensor"):
        compiled(torch.empty(4, 32, device="meta"))
    with pytest.raises(ValueError, match=r"input 'x' has 3 dims, expected 2"):
        compiled(x[None])
    with pytest.raises(
        ValueError,
        match=r"dimension 0 of input 'x' is 5, the compiled graphs were built for 4; declare it in dynamic_shapes",
    ):
        compiled(torch.randn(5, 32))


def test_misuses_of_the_api_raise_saying_what_to_do(model_and_input):
    model, x = model_and_input
    with pytest.raises(
        TypeError, match=r"example_inputs must be a tuple of forward's arguments, e.g. \(x,\)"
    ):
        pygraph.export_and_compile(model, x)
    with pytest.raises(ValueError, match="profile=True measures on a GPU"):
        pygraph.export_and_compile(model, (x,), profile=True)  # (target auto: the CPU model's emulator)
    compiled = pygraph.export_and_compile(model, (x,))
    with pytest.raises(TypeError, match=r"copy the model \(copy.deepcopy\(model\)\) and compile the copy"):
        copy.deepcopy(compiled)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(compiled)


class Masked(torch.nn.Module):
    """forward as Hugging Face writes it: optional arguments, a keyword-only flag and `**kwargs`."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x, mask=None, scale: float = 1.0, *, flag: bool = False, **kwargs):
        y = self.linear(x) * scale
        return y.masked_fill(mask, 0.0) if mask is not None else y


def test_keyword_arguments_bind_as_python_binds_them_to_forward():
    """Keywords naming the arguments the example passed take their places; keywords the trace left at
    their defaults pass only those defaults, and anything else raises naming the argument."""
    torch.manual_seed(0)
    model = Masked()
    x, mask = torch.randn(4, 8), torch.randn(4, 8) > 0
    compiled = pygraph.export_and_compile(model, (x, mask))
    with torch.no_grad():
        want = model(x, mask)
        for got in (
            compiled(x=x, mask=mask),
            compiled(x, mask=mask),
            compiled(mask=mask, x=x, scale=1.0, flag=False),
        ):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5 * want.abs().max())
        with pytest.raises(
            TypeError,
            match=r"traced with `scale` at its default \(1.0\); this call passes `scale` as a float",
        ):
            compiled(x, mask, scale=2.0)
        with pytest.raises(TypeError, match=r"traced with `flag` at its default \(False\)"):
            compiled(x, mask, flag=True)
        with pytest.raises(
            TypeError, match=r"traced with no other keyword arguments; this call passes `cache` as a float32"
        ):
            compiled(x, mask, cache=x)
        with pytest.raises(TypeError, match=r"Masked.forward\(\) got multiple values for argument `x`"):
            compiled(x, x=x)
        with pytest.raises(TypeError, match=r"traced with 2 arguments; this call gives none for `x`"):
            compiled(mask=mask)
        plain = pygraph.export_and_compile(torch.nn.Linear(8, 8), (x,))
        with pytest.raises(TypeError, match=r"Linear.forward\(\) got an unexpected keyword argument `bias`"):
            plain(x, bias=x)
        torch.testing.assert_close(plain(input=x), plain(x))


def test_a_read_only_input_is_taken_at_any_strides_and_left_alone():
    """An expanded input (stride 0) and an inference tensor, read where they are or staged, never written
    back (the emulator copied every staged input back, which fails on both)."""

    class Sine(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.sin() * 2 + 1

    compiled = pygraph.export_and_compile(Sine(), (torch.randn(4, 16),))
    expanded = torch.randn(1, 16).expand(4, 16)
    with torch.inference_mode():
        transposed = torch.randn(16, 4).t()
    for x in (expanded, transposed):
        version = x._version if not x.is_inference() else None
        assert relative_error(compiled(x), Sine()(x)) <= 1e-6
        assert x.is_inference() or x._version == version


def test_calls_from_several_threads_each_compute_their_own_result(model_and_input):
    model, _ = model_and_input
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 32),))
    inputs = [torch.randn(4, 32) for _ in range(40)]
    with torch.no_grad():
        expected = [model(x) for x in inputs]

        def call(x: torch.Tensor) -> torch.Tensor:
            with torch.no_grad():  # (grad mode is each thread's own)
                return compiled(x)

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            results = list(pool.map(call, inputs))
    for got, want in zip(results, expected, strict=True):
        assert relative_error(got, want) <= 1e-6


def test_an_argument_of_another_kind_is_refused():
    class Scale(torch.nn.Module):
        def forward(self, x: torch.Tensor, options: dict) -> torch.Tensor:
            return x * options["scale"].real

    with pytest.raises(TypeError, match=r"argument 'options\['scale'\]' of Scale.forward is complex"):
        pygraph.export_and_compile(Scale(), (torch.randn(2), {"scale": 2j}))


def test_results_carry_no_autograd_history_and_a_call_where_eager_records_one_says_so_once():
    torch.manual_seed(0)
    model = MLP().eval()  # its parameters require grad, as a model's do unless frozen
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 32),))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            compiled(torch.randn(4, 32))
        x = torch.randn(4, 32, requires_grad=True)  # read detached, not refused by a library call's out=
        first, second = compiled(x), compiled(x)
    said = [str(w.message) for w in caught if "autograd" in str(w.message)]
    assert len(said) == 1 and "torch.no_grad()" in said[0]
    assert not first.requires_grad and relative_error(second, model(x).detach()) <= 1e-6


def test_a_declared_dynamic_dim_gets_graphs_per_size():
    torch.manual_seed(0)
    model = MLP().eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 32),), dynamic_shapes={"x": {0: batch}})
    assert "torch.symbolic_int" not in compiled.ir("torch")  # each plan is for one set of sizes
    for size in (4, 8, 1, 8, 4):
        x = torch.randn(size, 32)
        assert relative_error(compiled(x), model(x)) <= 1e-6
    assert sorted(compiled._variants) == [((1, 32),), ((8, 32),)]  # compiled once each, kept
    with pytest.raises(ValueError, match=r"dimension 0 of input 'x' is 65, outside the range \[1, 64\]"):
        compiled(torch.randn(65, 32))
    with pytest.raises(ValueError, match=r"dimension 1 of input 'x' is 16, .* declare it in dynamic_shapes"):
        compiled(torch.randn(8, 16))
    with pytest.raises(TypeError, match=r"input 'x' has dtype torch.float64"):
        compiled(torch.randn(8, 32, dtype=torch.float64))


class Halves(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x.view(2, -1).sum(0) * y


def test_a_derived_dynamic_dim_follows_its_formula():
    torch.manual_seed(0)
    model, half = Halves(), torch.export.Dim("half", min=2, max=32)
    compiled = pygraph.export_and_compile(
        model, (torch.randn(8), torch.randn(4)), dynamic_shapes={"x": {0: 2 * half}, "y": {0: half}}
    )
    for n in (6, 9):
        x, y = torch.randn(2 * n), torch.randn(n)
        assert relative_error(compiled(x, y), model(x, y)) <= 1e-6
    with pytest.raises(
        ValueError, match=r"dimension 0 of input 'x' is 11, dynamic_shapes made it 2\*\w+ = 10"
    ):
        compiled(torch.randn(11), torch.randn(5))


@pytest.fixture
def symbolic_trace_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.export failing on the model with its declared dims symbolic, as on Encodec's paddings (sizes
    meeting values of the data): pygraph reads the dims from the declaration and compiles each size."""
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    from pygraph.frontend import export

    traced = export._export

    def fails_with_symbols(model, inputs, numbers, dynamic_shapes, *args, **kwargs):
        if dynamic_shapes is not None:
            raise GuardOnDataDependentSymNode(sympy.Symbol("u0"), "Could not guard on data-dependent u0")
        return traced(model, inputs, numbers, dynamic_shapes, *args, **kwargs)

    monkeypatch.setattr(export, "_export", fails_with_symbols)


def test_dims_torch_export_cannot_trace_symbolic_compile_per_size(symbolic_trace_fails: None) -> None:
    torch.manual_seed(0)
    model, batch = MLP().eval(), torch.export.Dim("batch", min=1, max=64)
    with pytest.warns(UserWarning, match=r"dims batch: .* each size compiles a program of its own"):
        compiled = pygraph.export_and_compile(model, (torch.randn(4, 32),), dynamic_shapes={"x": {0: batch}})
    for size in (4, 8, 1):
        x = torch.randn(size, 32)
        assert relative_error(compiled(x), model(x)) <= 1e-6
    with pytest.raises(ValueError, match=r"dimension 0 of input 'x' is 65, outside the range \[1, 64\]"):
        compiled(torch.randn(65, 32))
    halves, half = Halves(), torch.export.Dim("half", min=2, max=32)
    with pytest.warns(UserWarning, match=r"dims half:"):
        compiled = pygraph.export_and_compile(
            halves, (torch.randn(8), torch.randn(4)), dynamic_shapes={"x": {0: 2 * half}, "y": {0: half}}
        )
    x, y = torch.randn(18), torch.randn(9)
    assert relative_error(compiled(x, y), halves(x, y)) <= 1e-6
    with pytest.raises(
        ValueError, match=r"dimension 0 of input 'x' is 11, dynamic_shapes made it 2\*\w+ = 10"
    ):
        compiled(torch.randn(11), torch.randn(5))


class LevelsThird(torch.nn.Module):
    """A Python loop over the data's `unique()` values (traced the way the example takes, with checks) and
    the third row along a dim declared dynamic by `unbind`, whose count of pieces is the dim's size."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        levels = sum((x.round() == u).to(x.dtype) * u for u in x.round().clamp(-2, 2).unique())
        return torch.cos(x) + levels + x.unbind(1)[2].unsqueeze(1)


def test_dims_the_trace_fixed_without_a_refusal_compile_per_size() -> None:
    """Traced so, the dim came out as the example's size without torch.export's refusal, and calls of other
    sizes were refused as not that size (fuzz seed 67567): each size compiles a program of its own."""
    torch.manual_seed(0)
    model, n = LevelsThird(), torch.export.Dim("n", min=3, max=64)
    with pytest.warns(
        UserWarning, match=r"dims n: the trace fixed them .* each size compiles a program of its own"
    ):
        compiled = pygraph.export_and_compile(model, (torch.randn(2, 7, 3),), dynamic_shapes=({1: n},))
    for size in (7, 14, 5):
        x = torch.randn(2, size, 3)
        assert relative_error(compiled(x), model(x)) <= 1e-6
    with pytest.raises(ValueError, match=r"dimension 1 of input 'x' is 65, outside the range \[3, 64\]"):
        compiled(torch.randn(2, 65, 3))


def test_rebind_follows_replaced_data_in_every_variant():
    """`param.data = other` is the one change no hook sees: `rebind()` makes every shape variant read it."""
    torch.manual_seed(0)
    model = MLP().eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 32),), dynamic_shapes={"x": {0: batch}})
    compiled(torch.randn(8, 32))  # a variant for 8 rows
    model.net[0].weight.data = torch.randn(64, 32)
    compiled.rebind()
    for rows in (4, 8):
        x = torch.randn(rows, 32)
        assert relative_error(compiled(x), model(x)) <= 1e-6


class Switched(torch.nn.Module):
    """A plain attribute forward reads: each value is a program (a way) of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.linear, self.relu = torch.nn.Linear(8, 8), False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x)) if self.relu else self.linear(x)


def test_rebind_reaches_the_programs_of_other_ways_after_their_checks():
    """A program of another way rebinds too, and the traced one still checks the attribute after `rebind()`
    (rebinding it had marked its checks done: it then ran with the attribute it was not traced for)."""
    torch.manual_seed(0)
    model, x = Switched().eval(), torch.randn(4, 8)
    compiled = pygraph.export_and_compile(model, (x,), target="emulator")
    with torch.no_grad(), pytest.warns(UserWarning, match="`relu` \\(False\\)"):
        compiled(x)
        model.relu = True
        compiled(x)  # the way where relu is True
        model.linear.weight.data = torch.randn(8, 8)
        compiled.rebind()
        assert relative_error(compiled(x), model(x)) <= 1e-6  # (nothing assigned since: no event)
        for relu in (False, True):
            model.relu = relu
            assert relative_error(compiled(x), model(x)) <= 1e-6


class Scaled(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor, scale: float) -> torch.Tensor:
        return (x * scale + y).softmax(-1)


def test_variants_keep_shared_dims_equal_and_calls_past_the_limit_run_eagerly():
    torch.manual_seed(0)
    model, seq = Scaled(), torch.export.Dim("seq", min=2, max=512)
    compiled = pygraph.export_and_compile(
        model,
        (torch.randn(3, 8), torch.randn(3, 8), 0.5),
        dynamic_shapes={"x": {1: seq}, "y": {1: seq}, "scale": None},
    )
    with pytest.raises(ValueError, match=r"dimension 1 of input 'y' is 9 and dimension 1 of input 'x' is 10"):
        compiled(torch.randn(3, 10), torch.randn(3, 9), 0.5)
    with knobs.scope(max_variants=2):
        for size, scale in ((16, 2.0), (24, 0.25), (16, 1.5)):
            x, y = torch.randn(3, size), torch.randn(3, size)
            assert relative_error(compiled(x, y, scale), model(x, y, scale)) <= 1e-6
        with pytest.warns(
            UserWarning, match=r"(?s)more than PYGRAPH_MAX_VARIANTS=2 input shapes .* runs such calls eagerly"
        ):
            x, y = torch.randn(3, 32), torch.randn(3, 32)
            assert relative_error(compiled(x, y, 1.0), model(x, y, 1.0)) <= 1e-6
    assert list(compiled._variants) == [((3, 16), (3, 16), ()), ((3, 24), (3, 24), ())]


@torch.library.custom_op("pygraph_test::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


@torch.library.custom_op("pygraph_test::scale_", mutates_args=("x",))
def scale_(x: torch.Tensor) -> None:
    x.mul_(2)


def test_custom_ops_are_called_like_aten_ops():
    class CustomOp(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return twice(x) + 1

    compiled = pygraph.export_and_compile(CustomOp(), (torch.randn(8),))
    assert '"pygraph_test.twice.default"' in compiled.ir("plan")
    x = torch.randn(8)
    assert relative_error(compiled(x), CustomOp()(x)) <= 1e-6


def test_unsupported_op_names_op_and_source_line():
    class MutatingCustomOp(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x + 1
            scale_(y)
            return y

    line = next(
        i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1) if text.strip() == "scale_(y)"
    )
    with pytest.raises(UnsupportedError) as info:
        pygraph.export_and_compile(MutatingCustomOp(), (torch.randn(8),))
    message = str(info.value)
    assert f"test_api.py:{line})" in message and "higher-order operator auto_functionalized" in message


def test_stages_and_stats_keys(model_and_input):
    model, x = model_and_input
    compiled = pygraph.export_and_compile(model, (x,))
    assert 'pygraph.stage = "torch"' in compiled.ir("torch")
    assert "pygraph.class" in compiled.ir("pygraph")
    assert '"pygraph.segment"' in compiled.ir("plan") and '"pygraph.triton_kernel"' in compiled.ir("plan")
    with pytest.raises(ValueError, match="stage must be one of"):
        compiled.ir("llvm")
    stats = compiled.stats()
    assert set(stats) == {
        "segments",
        "graphs",
        "nodes",
        "generated_kernels",
        "library_calls",
        "host_ops",
        "copied_bytes_per_call",
        "memcpy_bytes_per_call",
        "captures",
        "arena_bytes",
    }
    assert stats["arena_bytes"] == compiled.plan.arena_bytes > 0
    assert set(stats["nodes"]) == {"kernel", "library", "memcpy", "memset", "child", "host"}
    # The input feeds a vendor matmul: a copy kernel moves it into the graph; the last kernel (ReLU)
    # writes the fresh output tensor through the table, whose head node writes 8 bytes per slot.
    table = 8 * compiled.plan.table_slots * stats["graphs"]
    assert stats["copied_bytes_per_call"] == x.numel() * 4 + table and stats["memcpy_bytes_per_call"] == 0
    io = {item["name"]: item for item in compiled.explain().io}
    assert io["x"]["mechanism"] == "copy" and io["output 0"]["mechanism"] == "indirect"
    report = str(compiled.explain())
    assert "coverage: 100.0%" in report and "input     x" in report


def test_editing_the_plan_changes_what_the_emulator_computes(tmp_path: Path):
    class Double(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x) * 2.0

    x = torch.randn(64)
    with knobs.scope(dump_dir=tmp_path):
        pygraph.export_and_compile(Double(), (x,))
    plan = tmp_path / "Double.plan.mlir"
    text = plan.read_text()
    assert "* 2.0" in text
    plan.write_text(text.replace("* 2.0", "* 3.0"))
    with knobs.scope(override_dir=tmp_path):
        edited = pygraph.export_and_compile(Double(), (x,))
    torch.testing.assert_close(edited(x), torch.relu(x) * 3.0)


def test_explain_command_reads_a_dump_directory(tmp_path: Path, model_and_input):
    model, x = model_and_input
    with knobs.scope(dump_dir=tmp_path):
        pygraph.export_and_compile(model, (x,))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "MLP.plan.mlir",
        "MLP.pygraph.mlir",
        "MLP.torch.mlir",
    ]
    out = subprocess.run(
        [sys.executable, "-m", "pygraph.tools.cli", "explain", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert re.search(r"#0: graph \(\d+ kernel, \d+ library\)", out)


def test_explain_command_names_the_results_calls_rebuild(tmp_path: Path):
    class Both(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return x.t(), x.relu()

    with knobs.scope(dump_dir=tmp_path):
        pygraph.export_and_compile(Both(), (torch.randn(3, 4),))
    out = subprocess.run(
        [sys.executable, "-m", "pygraph.tools.cli", "explain", str(tmp_path / "Both.plan.mlir")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert re.search(r"output +result 0 +view of input 'x' +0 B/call", out)
    assert re.search(r"output +result 1 ", out) and "output 0" not in out


def test_cuda_target_needs_a_gpu(model_and_input):
    model, x = model_and_input
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU; the refusal is for machines without one")
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        pygraph.export_and_compile(model, (x,), target="cuda")


class MaskedLogits(torch.nn.Module):
    """A Hugging Face language model called with ids and a padding mask, returning its logits."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, attention_mask=mask).logits


def test_a_language_model_with_dynamic_batch_and_length():
    """Symbolic sizes would reach ops whose kernels need them known: each variant is compiled for its own
    sizes. Its rows are independent, so 3 sequences run the program of 4 (`test_padded_calls.py`); its
    attention reads keys along the length through the padding mask, so each length compiles its own."""
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=100, n_positions=64)
    model = MaskedLogits(transformers.GPT2LMHeadModel(config).eval())
    batch, length = torch.export.Dim("batch", min=1, max=8), torch.export.Dim("length", min=2, max=64)

    def draw(b: int, s: int) -> tuple[torch.Tensor, torch.Tensor]:
        mask = torch.ones(b, s, dtype=torch.long)
        mask[0, : s // 3] = 0  # left padding
        return torch.randint(0, 100, (b, s)), mask

    with torch.no_grad():
        compiled = pygraph.export_and_compile(
            model, draw(2, 8), dynamic_shapes={"ids": {0: batch, 1: length}, "mask": {0: batch, 1: length}}
        )
        for b, s in ((2, 8), (3, 5), (1, 17), (3, 5)):
            inputs = draw(b, s)
            assert relative_error(compiled(*inputs), model(*inputs)) <= 1e-5
    assert sorted(compiled._variants) == [((1, 17), (1, 17)), ((4, 5), (4, 5))]
    assert sorted(compiled._padded_calls) == [((3, 5), (3, 5))]
