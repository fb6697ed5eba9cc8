"""Parameter indirection on the emulator: inputs and outputs through the per-call table, state changes."""

import pytest
import torch
from gpu_marks import needs_gpu

import pygraph
from pygraph.metrics import relative_error


class Block(torch.nn.Module):
    """A vendor call reads x (so it is copied into the graph); only kernels read y (reached through the table)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.relu(self.fc(x)) + y, y * 2


def mechanisms(compiled: pygraph.CompiledModel) -> dict[str, str]:
    return {item["name"]: item["mechanism"] for item in compiled.explain().io}


def test_new_tensors_every_call_and_earlier_results_intact():
    torch.manual_seed(0)
    model = Block()
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 16), torch.randn(4, 16)))
    assert mechanisms(compiled) == {
        "x": "copy", "y": "indirect", "fc.weight": "direct", "fc.bias": "direct", "output 0": "indirect", "output 1": "indirect"
    }  # fmt: skip
    kept = []
    for _ in range(6):
        x, y = torch.randn(4, 16), torch.randn(4, 16)
        got = compiled(x, y)
        assert relative_error(got, model(x, y)) <= 1e-6
        kept.append((got, tuple(t.clone() for t in got)))
    for got, copy in kept:  # fresh outputs each call: later calls never overwrite earlier results
        for a, b in zip(got, copy, strict=True):
            assert torch.equal(a, b)


def test_non_contiguous_and_aliased_inputs_match_eager():
    torch.manual_seed(1)
    model = Block()
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 16), torch.randn(4, 16)))
    base = torch.randn(16, 4)
    x, y = base.t(), torch.randn(8, 16)[::2]  # transposed and strided: not the example's layouts
    assert relative_error(compiled(x, y), model(x, y)) <= 1e-6
    z = torch.randn(4, 16)
    assert relative_error(compiled(z, z), model(z, z)) <= 1e-6  # the same tensor twice


@pytest.fixture
def cheap_patches(tmp_path):
    """Cost figures of a GPU where a parameter update costs less than the table's writer node (the H200's
    order of magnitude), so that the emulator's plans patch addresses into nodes."""
    from pygraph.ir import costs
    from pygraph.knobs import knobs

    with knobs.scope(cache_dir=tmp_path):
        costs.save("default", costs.Costs(set_params_us=0.6))
        yield


class Head(torch.nn.Module):
    """A vendor call reads the input; one kernel writes the output."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.fc(x))


class Tail(torch.nn.Module):
    """A kernel reads the input; a vendor call (the linear layer) writes the output."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(x))


@pytest.mark.parametrize(
    "make, patched, table",
    [
        (Head, {"x", "output 0"}, False),  # two parameter updates cost less than the table's writer
        (Tail, {"x", "output 0"}, False),  # the linear layer's recording writes the fresh output
        (Block, {"x"}, True),  # y feeds two kernels and both outputs need one each: the table stays
    ],
)
def test_patched_inputs_and_outputs_match_eager_on_new_tensors_every_call(
    cheap_patches, make, patched, table
):
    torch.manual_seed(2)
    model = make()
    count = 2 if make is Block else 1
    compiled = pygraph.export_and_compile(model, [torch.randn(4, 16) for _ in range(count)])
    assert {name for name, m in mechanisms(compiled).items() if m == "patch"} == patched
    # what moves per call: the table, 8 bytes per slot, written once per graph
    assert (compiled.plan.table_slots > 0) == table
    assert (
        compiled.stats()["copied_bytes_per_call"]
        == 8 * compiled.plan.table_slots * compiled.stats()["graphs"]
    )
    kept = []
    for _ in range(4):
        args = [torch.randn(4, 16) for _ in range(count)]
        got = compiled(*args)
        assert relative_error(got, model(*args)) <= 1e-6
        kept.append((got, torch.utils._pytree.tree_map(torch.clone, got)))
    for got, copy in kept:  # fresh outputs each call: later calls never overwrite earlier results
        assert relative_error(got, copy) == 0
    x = torch.randn(16, 4).t()  # transposed: copied into the plan's layout first
    assert relative_error(compiled(*[x] * count), model(*[x] * count)) <= 1e-6  # (the same tensor twice)


def test_aliased_inputs_are_refused_when_the_model_writes_one():
    class AddInto(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            x.add_(y)
            return x * 2

    compiled = pygraph.export_and_compile(AddInto(), (torch.randn(8), torch.randn(8)))
    x, y = torch.randn(8), torch.randn(8)
    expected_x = x + y
    torch.testing.assert_close(compiled(x, y), expected_x * 2)
    torch.testing.assert_close(x, expected_x)  # written in place, through the table
    with pytest.raises(
        ValueError, match="input 'x' is written in place by the model and shares memory with input 'y'"
    ):
        compiled(x, x)


def test_host_scalars_travel_in_the_table():
    class Scale(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return self.fc(x) / t + torch.clamp(x, max=t)

    model = Scale()
    compiled = pygraph.export_and_compile(model, (torch.randn(2, 8), torch.tensor(0.5)))
    assert mechanisms(compiled)["t"] == "value"
    for value in (0.5, 2.0, -3.0):
        x, t = torch.randn(2, 8), torch.tensor(value)
        torch.testing.assert_close(compiled(x, t), model(x, t), rtol=1e-5, atol=1e-6)


def test_python_numbers_promote_as_numbers_beside_0_d_tensors():
    """A Python number promotes below any tensor (`s * y` of a 0-d bfloat16 `s` is bfloat16), where the
    0-d tensor it travels as would promote as an equal (float64); likewise an int beside a 0-d int32, and
    arithmetic on numbers alone (`y * y + 1`), a Python float in eager. So while tracing, so that a dtype
    the model reads is eager's too."""

    class Scaled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.s = torch.nn.Parameter(torch.tensor(1.5, dtype=torch.bfloat16))

        def forward(self, x: torch.Tensor, y: float, n: int) -> tuple[torch.Tensor, ...]:
            a = self.s * y
            i = self.s.to(torch.int32)
            made = torch.ones(2, dtype=(y - self.s).dtype)  # (a dtype read while tracing)
            return (
                x * a,
                i + n,
                a.clamp(max=y),
                self.s / (y * y + 1),
                made,
                torch.where(x > 0, self.s, y),
                n**i,
            )

    model = Scaled()
    x = torch.randn(4).to(torch.bfloat16)
    compiled = pygraph.export_and_compile(model, (x, 0.3, 2))
    for y, n in ((0.3, 2), (0.7, 5), (-1.9, -3)):
        got, want = compiled(x, y, n), model(x, y, n)
        dtypes = [torch.bfloat16, torch.int32, torch.bfloat16, torch.bfloat16, torch.bfloat16, torch.bfloat16]
        dtypes.append(torch.int32)
        assert [t.dtype for t in got] == [t.dtype for t in want] == dtypes
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=0, atol=0)


def test_float_arguments_are_exact_beside_float64_and_rounded_to_float32_below():
    _check_float_arguments("cpu")


@pytest.mark.gpu
@needs_gpu
def test_gpu_float_arguments_are_exact_beside_float64_and_rounded_to_float32_below():
    _check_float_arguments("cuda")


def _check_float_arguments(device: str) -> None:
    """A float argument is a Python float: a float64 model computes with it exactly, and arithmetic on numbers
    alone is Python's (in double); below float64 an op takes it in float32, as eager's ops take a Python
    float in their opmath type. Each result as eager's, bit for bit (a division on the GPU within an ulp)."""

    class Scientific(torch.nn.Module):
        def forward(self, x: torch.Tensor, t: float, n: int) -> tuple[torch.Tensor, ...]:
            return x * t, x / (t * 3 + n), torch.where(x > t, x, t), x.float() * (n / 3), x.float() - t

    model = Scientific()
    x = torch.randn(64, dtype=torch.float64, device=device)
    compiled = pygraph.export_and_compile(
        model, (x, 0.1, 3), target="cuda" if device == "cuda" else "emulator"
    )
    for t, n in ((0.1, 3), (1 / 3, -2), (2.718281828459045, 7)):  # (on the GPU, later calls natively)
        got, want = compiled(x, t, n), model(x, t, n)
        assert [g.dtype for g in got] == [w.dtype for w in want]
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            # CUDA's eager multiplies by a host number's reciprocal, the program divides: an ulp apart
            ulp = torch.finfo(g.dtype).eps if i == 1 and device == "cuda" else 0
            torch.testing.assert_close(g, w, rtol=ulp, atol=0)


def test_static_outputs_return_the_graphs_buffers():
    model = Block()
    compiled = pygraph.export_and_compile(
        model, (torch.randn(4, 16), torch.randn(4, 16)), static_outputs=True
    )
    assert mechanisms(compiled)["output 0"] == "static"
    x, y = torch.randn(4, 16), torch.randn(4, 16)
    first = compiled(x, y)
    torch.testing.assert_close(first, model(x, y))


def test_state_changes_are_seen_without_scanning_every_call():
    torch.manual_seed(2)
    model = Block()
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 16), torch.randn(4, 16)))
    x, y = torch.randn(4, 16), torch.randn(4, 16)
    model.load_state_dict(Block().state_dict())  # copies into the same tensors
    torch.testing.assert_close(compiled(x, y), model(x, y))
    model.fc.weight = torch.nn.Parameter(torch.randn(16, 16))  # a replaced parameter
    torch.testing.assert_close(compiled(x, y), model(x, y))
    model.fc = torch.nn.Linear(16, 16)  # a replaced layer
    torch.testing.assert_close(compiled(x, y), model(x, y))
    model.double().float()  # _apply: every tensor moves
    torch.testing.assert_close(compiled(x, y), model(x, y))


def test_a_vendor_calls_large_output_is_written_fresh_by_the_graph_not_copied():
    class Head(torch.nn.Module):
        """A language-model head: 32 MiB of logits straight from a matmul (copying them would cost more
        than patching the matmul's recorded kernel or running it after the graph)."""

        def __init__(self) -> None:
            super().__init__()
            self.norm = torch.nn.LayerNorm(64)
            self.head = torch.nn.Linear(64, 32768, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(self.norm(x))

    torch.manual_seed(3)
    model = Head()
    compiled = pygraph.export_and_compile(model, (torch.randn(256, 64),))
    (output,) = (item for item in compiled.explain().io if item["kind"] == "output")
    assert output["mechanism"] == "patch" and output["bytes"] == 0
    assert compiled.stats()["copied_bytes_per_call"] == 0
    assert compiled.stats()["host_ops"] == 0  # the matmul stays in the graph
    first_x, second_x = torch.randn(256, 64), torch.randn(256, 64)
    first = compiled(first_x)
    second = compiled(second_x)
    torch.testing.assert_close(first, model(first_x))  # still intact after the second call
    torch.testing.assert_close(second, model(second_x))


def test_random_numbers_keep_the_table_for_inputs_and_outputs_too(cheap_patches):
    """The seed and offset need the table: patching the input and the output would add parameter updates
    without saving its writer."""

    class Noisy(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * torch.rand_like(x)

    compiled = pygraph.export_and_compile(Noisy(), (torch.randn(4, 16),))
    assert mechanisms(compiled) == {
        "x": "indirect",
        "seed": "value",
        "offset": "value",
        "output 0": "indirect",
    }
    x = torch.rand(4, 16) + 1
    y = compiled(x)
    assert torch.all((y >= 0) & (y <= x))  # x times numbers drawn from [0, 1)


def test_measured_costs_in_the_plan_reach_explain():
    """`profile=True` writes each input's and output's measured cost into the plan (GPU test:
    test_profile_measures_how_each_input_and_output_is_reached); explain reads it from there."""
    from pygraph.ir import attrs, dialect
    from pygraph.ir._mlir import ir
    from pygraph.ir.context import parse
    from pygraph.ir.explain import explain_plan
    from pygraph.ir.plan import read_plan
    from pygraph.passes.base import main_function

    compiled = pygraph.export_and_compile(Head(), (torch.randn(4, 16),))
    module = parse(compiled.ir("plan"))
    main = main_function(module)
    with module.context, main.location:
        results = list(ir.ArrayAttr(main.attributes["res_attrs"]))
        fields = {a.name: a.attr for a in ir.DictAttr(results[0])}
        fields[dialect.IO_MEASURED] = ir.DictAttr.get({"host_us": attrs.f64(0.5), "gpu_us": attrs.f64(1.25)})
        main.attributes["res_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(fields)])
    explanation = explain_plan(read_plan(module), module)
    output = next(i for i in explanation.io if i["kind"] == "output")
    assert output["measured"] == {"host_us": 0.5, "gpu_us": 1.25}
    assert "measured: host 0.5 us, GPU 1.25 us" in str(explanation)
