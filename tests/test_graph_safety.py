"""CUDA-graph-aware code transformation: one small model per pattern that keeps work out of CUDA graphs.

Each model compiles, matches eager over several calls with changing inputs (and scalar values), and keeps
its kernels in graphs: through the CPU emulator here, and end to end on a GPU (tests marked `gpu`, target
cuda, TF32 off). Patterns 1 and 2 need a host distinct from the device: on the CPU they are also compiled
as GPU programs (exported with fake CUDA tensors) and their plans executed by the emulator, which does
not care where a buffer lives.
"""

from __future__ import annotations

import copy
import gc
import math
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
from gpu_marks import needs_gpu
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

import pygraph
from pygraph.backend import UnrecordableCall
from pygraph.backend.emulator import Emulator
from pygraph.frontend import export_program, import_program
from pygraph.ir.context import make_context
from pygraph.ir.explain import Explanation, explain_plan
from pygraph.ir.plan import HostStep, Segment, read_plan
from pygraph.knobs import knobs
from pygraph.metrics import relative_error
from pygraph.passes.pipeline import PLAN_PIPELINE, TENSOR_PIPELINE, parse_pipeline, run_pipeline

# ---------------------------------------------------------------------------------------------- models


class HostScalars(nn.Module):
    """Pattern 1: a 0-d CPU tensor input (`scale`) and CPU constants made in forward, used by GPU ops."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.offsets = torch.linspace(-1.0, 1.0, 16)  # a plain attribute: a lifted constant

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * scale + self.offsets.to(x.device) + torch.tensor(3.0)


class HostCopies(nn.Module):
    """Pattern 2: a CPU buffer, a CPU constant and a CPU input moved to the model's device in every call."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.register_buffer("table", torch.randn(16))
        self.lut = torch.randn(16)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        device = x.device
        return self.fc(x) * self.table.to(device) + self.lut.to(device) + bias.to(device)


class Temperature(nn.Module):
    """Pattern 3: Python scalar arguments (a float and an int)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor, temperature: float, shift: int) -> torch.Tensor:
        return torch.softmax(self.fc(x) / temperature + shift, dim=-1)


class Mutations(nn.Module):
    """Pattern 4: a KV-cache write at a position given by a tensor, a slice write, batch-norm running
    statistics in training mode, and an input updated in place."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(16)
        self.register_buffer("cache", torch.zeros(2, 8, 16))
        self.register_buffer("last", torch.zeros(2, 16))

    def forward(self, x: torch.Tensor, pos: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.cache.index_copy_(1, pos, x.unsqueeze(1))
        self.last[:] = x
        y.add_(1)
        return self.bn(x) + self.cache.sum(1) + y


class Noisy(nn.Module):
    """Pattern 5: dropout in training mode, `rand_like` and `randn` in forward."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(64, 64)
        self.drop = nn.Dropout(0.3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = torch.relu(self.fc(x)) + 1.0  # positive: a zero comes from dropout alone
        return self.drop(h), torch.rand_like(x), torch.randn(64, 64)


class DataDependent(nn.Module):
    """Pattern 6: boolean-mask indexing, `.item()` feeding a shape, `nonzero` and `unique`."""

    def __init__(self) -> None:
        super().__init__()
        self.fc, self.out = nn.Linear(16, 16), nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc(x))
        positive = h[h > 0]
        count = (h > 0).sum().item()
        torch._check(count >= 0)
        torch._check(count <= h.numel())
        ramp = torch.arange(count, dtype=h.dtype, device=h.device)
        rows = torch.nonzero(h.sum(1) > 1.0)[:, 0]
        levels = torch.unique(torch.round(x))
        summary = positive.sum() + h[rows].sum() + ramp.sum() / 100 + levels.sum()
        return self.out(h) * summary


@torch.library.custom_op("pygraph_test::cpu_ranks", mutates_args=(), device_types="cpu")
def cpu_ranks(x: torch.Tensor) -> torch.Tensor:
    """An op with a CPU kernel only (as a user's C++ extension may have): each row's ranks."""
    return x.argsort(dim=-1).argsort(dim=-1).to(x.dtype)


@cpu_ranks.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class OnTheCpu(nn.Module):
    """Pattern 6: a GPU model that computes part of its result on the CPU, with an op that has no CUDA
    kernel, and copies it back."""

    def __init__(self) -> None:
        super().__init__()
        self.fc, self.out = nn.Linear(16, 16), nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc(x))
        ranks = cpu_ranks(h.cpu()) / 16
        return self.out(h * ranks.to(h.device)) + x.mean()


def _scaled_by_largest(x: torch.Tensor) -> torch.Tensor:
    """Reads the largest magnitude back to the host (`.item()`, as a library's kernel wrapper might): a
    synchronisation that no CUDA graph can record."""
    return x * (1.0 / max(x.abs().max().item(), 1.0))


@torch.library.custom_op("pygraph_test::scaled_by_largest", mutates_args=())
def scaled_by_largest(x: torch.Tensor) -> torch.Tensor:
    return _scaled_by_largest(x)


@torch.library.custom_op(
    "pygraph_test::scaled_by_largest_tagged", mutates_args=(), tags=(torch.Tag.cudagraph_unsafe,)
)
def scaled_by_largest_tagged(x: torch.Tensor) -> torch.Tensor:
    return _scaled_by_largest(x)


for _op in (scaled_by_largest, scaled_by_largest_tagged):
    _op.register_fake(torch.empty_like)


class Synchronising(nn.Module):
    """Pattern 6: a custom op that synchronises inside, called twice, its author's tag saying so or not."""

    def __init__(self, tagged: bool) -> None:
        super().__init__()
        self.fc, self.out = nn.Linear(16, 16), nn.Linear(16, 16)
        self.scale = scaled_by_largest_tagged if tagged else scaled_by_largest

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc(x))
        return self.out(self.scale(h)) + self.scale(x)


# ------------------------------------------------------------------------------------------- helpers


def assert_matches(got: Any, ref: Any) -> None:
    for g, r in zip(_flat(got), _flat(ref), strict=True):
        assert relative_error(g, r) <= 1e-4
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-5 * r.abs().max().item())


class WritesParameters(nn.Module):
    """Pattern 4 on parameters: `nn.Embedding(max_norm=...)` renormalizes the rows it looks up in place,
    and a parameter the model decays in place is also read through a computation on state alone (which
    would be derived state, computed once, were the parameter not written)."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(20, 16, max_norm=1.0)
        self.weight = nn.Parameter(torch.randn(8, 16))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        projected = self.embedding(tokens) @ self.weight.t().contiguous().tanh()
        with torch.no_grad():
            self.weight.mul_(0.9)
        return projected


def _flat(value: Any) -> list[torch.Tensor]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def transforms(explanation: Explanation) -> list[tuple[str, str]]:
    return [(t["pass"], t["what"]) for t in explanation.transforms]


def mechanisms(explanation: Explanation) -> dict[str, str]:
    return {item["name"]: item["mechanism"] for item in explanation.io}


def _cuda_like(t: torch.Tensor) -> torch.Tensor:
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="cuda")


def as_gpu_program(
    model: nn.Module, example_inputs: tuple[Any, ...], on_host: set[str]
) -> tuple[Emulator, Explanation, Callable[..., list[torch.Tensor]]]:
    """Compiles `model` as if it ran on a GPU: exported with fake CUDA tensors for its parameters, buffers
    and tensor inputs, except the buffers and inputs named in `on_host` (kept on the CPU). Returns the
    emulator running the plan, its explanation, and a call taking the real (CPU) inputs."""
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fake = copy.deepcopy(model)
    with mode:
        for module in fake.modules():
            for name, p in module._parameters.items():
                module._parameters[name] = nn.Parameter(_cuda_like(p), requires_grad=False)
            for name, b in module._buffers.items():
                if name not in on_host:
                    module._buffers[name] = _cuda_like(b)
        names = list(model.forward.__code__.co_varnames[1 : 1 + len(example_inputs)])
        inputs = tuple(
            t if name in on_host or not isinstance(t, torch.Tensor) else _cuda_like(t)
            for name, t in zip(names, example_inputs, strict=True)
        )
    imported = import_program(export_program(fake, inputs), make_context())
    module = imported.module
    run_pipeline(module, parse_pipeline(TENSOR_PIPELINE))
    run_pipeline(module, parse_pipeline(PLAN_PIPELINE))
    plan = read_plan(module)
    emulator = Emulator(plan)
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    state.update(
        {name: getattr(model, name) for name in vars(model) if isinstance(getattr(model, name), torch.Tensor)}
    )
    constants = {a.name: a.value for a in imported.arguments if a.role == "constant"}
    bound = [
        state[a.name].detach() if a.name in state else constants[a.name]
        for a in plan.arguments
        if a.role not in ("input", "rng")
    ]
    emulator.bind_state(bound)
    return emulator, explain_plan(plan, module), lambda *xs: emulator([torch.as_tensor(x) for x in xs])


def segments_around_host_ops(compiled: pygraph.CompiledModel) -> list[str]:
    """The plan's steps as "graph" / "eager" / "host", in order."""
    return ["host" if isinstance(s, HostStep) else s.mode for s in compiled.plan.steps]


# ------------------------------------------------------------------------- pattern 1: host scalars


def test_host_scalars_travel_in_the_table():
    torch.manual_seed(0)
    model = HostScalars()
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 16), torch.tensor(0.5)))
    explanation = compiled.explain()
    assert mechanisms(explanation)["scale"] == "value"
    assert explanation.coverage["before"] >= 0.95
    assert any(
        what.startswith("host scalar 'scale' travels in table slot") for _, what in transforms(explanation)
    )
    for value in (0.5, -2.0, 7.25):
        x, scale = torch.randn(4, 16), torch.tensor(value)
        assert_matches(compiled(x, scale), model(x, scale))


def test_host_scalars_of_a_gpu_program_are_placed_once_or_fed_per_call():
    torch.manual_seed(1)
    model = HostScalars()
    call, explanation = _gpu_program(model, (torch.randn(4, 16), torch.tensor(0.5)), {"scale"})
    done = transforms(explanation)
    assert ("place-constants", "constant 'offsets' placed on the GPU once, at compile time") in done
    assert not [what for _, what in done if "lifted_tensor" in what]  # torch.tensor(3.0): a literal
    assert mechanisms(explanation)["scale"] == "value" and explanation.coverage["before"] >= 0.95
    for value in (0.5, 3.0, -1.5):
        x, scale = torch.randn(4, 16), torch.tensor(value)
        assert_matches(call(x, scale)[0], model(x, scale))


def _gpu_program(
    model: nn.Module, inputs: tuple[Any, ...], on_host: set[str]
) -> tuple[Callable, Explanation]:
    _, explanation, call = as_gpu_program(model, inputs, on_host)
    return call, explanation


# ----------------------------------------------------------------------- pattern 2: host-to-device


def test_host_copies_on_the_cpu_match_eager():
    torch.manual_seed(2)
    model = HostCopies()
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 16), torch.randn(16)))
    assert compiled.explain().coverage["before"] >= 0.95
    for _ in range(3):
        x, bias = torch.randn(4, 16), torch.randn(16)
        assert_matches(compiled(x, bias), model(x, bias))


def test_host_copies_of_a_gpu_program_leave_the_per_call_path():
    torch.manual_seed(3)
    model = HostCopies()
    call, explanation = _gpu_program(model, (torch.randn(4, 16), torch.randn(16)), {"table", "bias"})
    assert [what for step, what in transforms(explanation) if step == "hoist-host-copies"] == [
        "the copy of buffer 'table' to the GPU in every call is gone: it is placed there once",
        "the copy of constant 'lut' to the GPU in every call is gone: it is placed there once",
        "the copy of input 'bias' to the GPU is made by the runtime before the graphs",
    ]
    assert mechanisms(explanation)["bias"] == "stage" and explanation.coverage["before"] >= 0.95
    for _ in range(3):
        x, bias = torch.randn(4, 16), torch.randn(16)
        assert_matches(call(x, bias)[0], model(x, bias))


# -------------------------------------------------------------------------- pattern 3: Python scalars


def test_python_scalars_are_fed_per_call_without_recompiling():
    torch.manual_seed(4)
    model = Temperature()
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 16), 0.7, 2))
    explanation = compiled.explain()
    assert mechanisms(explanation)["temperature"] == "value" and mechanisms(explanation)["shift"] == "value"
    assert explanation.coverage["before"] >= 0.95
    for temperature, shift in ((0.7, 2), (2.5, -1), (0.1, 0)):
        x = torch.randn(4, 16)
        assert_matches(compiled(x, temperature, shift), model(x, temperature, shift))
    with pytest.raises(TypeError, match=r"input 'shift' was traced as torch.int64, got the float 1.5"):
        compiled(x, 1.0, 1.5)


# ------------------------------------------------------------------------------ pattern 4: mutation


def test_mutations_write_in_place_as_eager_does():
    torch.manual_seed(5)
    model = Mutations().train()
    eager = copy.deepcopy(model)
    compiled = pygraph.export_and_compile(model, (torch.randn(2, 16), torch.tensor([0]), torch.randn(2, 16)))
    explanation = compiled.explain()
    assert explanation.coverage["before"] >= 0.95
    done = [what for step, what in transforms(explanation) if step == "write-in-place"]
    assert (
        "aten.index_put.default of 'cache' becomes a scatter kernel writing it in place: only the written elements move"
        in done
    )
    assert any("writes 'bn.running_mean' in place" in what for what in done)
    assert any("writes 'y' in place" in what for what in done)
    assert compiled.stats()["nodes"]["memcpy"] == 0  # no copy of a whole buffer back into it
    for step in range(4):
        x, pos, y = torch.randn(2, 16), torch.tensor([(3 * step) % 8]), torch.randn(2, 16)
        y_eager = y.clone()
        assert_matches(compiled(x, pos, y), eager(x, pos, y_eager))
        torch.testing.assert_close(y, y_eager)  # the caller's input, updated in place
    for (name, ours), (_, theirs) in zip(model.named_buffers(), eager.named_buffers(), strict=True):
        torch.testing.assert_close(ours, theirs, msg=f"buffer {name}")


class UpdatesStatistics(nn.Module):
    """Writes a buffer that another model reads: the reader's derived state (`exp` of it) must follow."""

    def __init__(self, running: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("running", running)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.running.mul_(0.5).add_(x.mean(0) * 0.5)
        y.add_(1)
        return x - self.running


class ReadsStatistics(nn.Module):
    def __init__(self, table: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("table", table)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.table.exp()


def _check_versions(device: str) -> None:
    """The graphs' writes move version counters as eager's in-place ops do."""
    torch.manual_seed(3)
    shared = torch.randn(8, device=device)
    writer, reader = UpdatesStatistics(shared), ReadsStatistics(shared)
    target = "cuda" if device == "cuda" else "emulator"
    with torch.no_grad():
        example = (torch.randn(4, 8, device=device), torch.randn(4, 8, device=device))
        writes = pygraph.export_and_compile(writer, example, target=target)
        reads = pygraph.export_and_compile(reader, (torch.randn(4, 8, device=device),), target=target)
        assert [a.role for a in reads.plan.arguments] == ["input", "derived"]
        for _ in range(3):
            x, y = torch.randn(4, 8, device=device), torch.randn(4, 8, device=device)
            versions = shared._version, y._version
            expected = x - (shared * 0.5 + x.mean(0) * 0.5)
            assert_matches(writes(x, y), expected)
            assert shared._version > versions[0] and y._version > versions[1]
            x = torch.randn(4, 8, device=device)
            assert_matches(reads(x), x * shared.exp())


def test_writes_move_version_counters():
    _check_versions("cpu")


def _check_parameter_writes(device: str) -> None:
    torch.manual_seed(7)
    model = WritesParameters().to(device)
    eager = copy.deepcopy(model)
    target = "cuda" if device == "cuda" else "emulator"
    tokens = torch.randint(0, 20, (3, 5), device=device)
    compiled = pygraph.export_and_compile(model, (tokens,), target=target)
    assert compiled.explain().coverage["before"] >= 0.95
    for _ in range(4):
        tokens = torch.randint(0, 20, (3, 5), device=device)
        with torch.no_grad():
            assert_matches(compiled(tokens), eager(tokens))
        for (name, ours), (_, theirs) in zip(model.named_parameters(), eager.named_parameters(), strict=True):
            torch.testing.assert_close(ours, theirs, msg=f"parameter {name}")
    assert eager.embedding.weight.norm(dim=1).max() <= 1.0 + 1e-5  # the rows looked up were renormalized


def test_parameters_the_model_writes_are_written_in_place_as_eager_does():
    _check_parameter_writes("cpu")


# --------------------------------------------------------------------------------- pattern 5: random


def ks_distance(samples: torch.Tensor, cdf: Callable[[torch.Tensor], torch.Tensor]) -> float:
    """Kolmogorov-Smirnov statistic of `samples` against a distribution's CDF."""
    x = samples.flatten().double().sort().values
    n = x.numel()
    f = cdf(x)
    above = torch.arange(1, n + 1, dtype=torch.float64) / n - f
    below = f - torch.arange(0, n, dtype=torch.float64) / n
    return max(above.max().item(), below.max().item())


def check_random_outputs(model: Noisy, x: torch.Tensor, outputs: tuple[torch.Tensor, ...]) -> None:
    """Distributions, never bit equality with eager: dropout keeps ~70% and scales by 1/0.7; rand is
    U(0, 1) and randn N(0, 1) (mean, variance, Kolmogorov-Smirnov within 99.9% bounds)."""
    dropped, uniform, normal = (o.cpu() for o in outputs)
    with torch.no_grad():
        h = torch.relu(model.fc(x)) + 1.0
    kept = dropped != 0
    n = kept.numel()
    assert abs(kept.float().mean().item() - 0.7) < 4 * math.sqrt(0.7 * 0.3 / n)
    torch.testing.assert_close(dropped[kept], h.cpu()[kept] / 0.7, rtol=1e-5, atol=1e-6)
    for samples, mean, var in ((uniform, 0.5, 1 / 12), (normal, 0.0, 1.0)):
        m = samples.numel()
        assert abs(samples.mean().item() - mean) < 4 * math.sqrt(var / m)
        assert abs(samples.var().item() / var - 1) < 4 * math.sqrt(2 / m) * (1.8 if var != 1.0 else 1.5)
    bound = 1.95 / math.sqrt(uniform.numel())  # KS, 99.9%
    assert ks_distance(uniform, lambda t: t.clamp(0, 1)) < bound
    bound = 1.95 / math.sqrt(normal.numel())
    assert ks_distance(normal, lambda t: 0.5 * (1 + torch.erf(t / math.sqrt(2)))) < bound


def check_random_contract(compiled: pygraph.CompiledModel, x: torch.Tensor) -> None:
    """Same seed: identical outputs; each call draws fresh numbers and advances torch's generator."""
    torch.manual_seed(123)
    first, second = compiled(x), compiled(x)
    after_two = torch.rand(4, device=x.device)
    torch.manual_seed(123)
    again = compiled(x)
    for a, b in zip(first, again, strict=True):
        assert torch.equal(a, b)
    for a, b in zip(first, second, strict=True):
        assert not torch.equal(a, b)
    torch.manual_seed(123)
    compiled(x)
    after_one = torch.rand(4, device=x.device)
    torch.manual_seed(123)
    assert not torch.equal(after_one, torch.rand(4, device=x.device)) and not torch.equal(
        after_one, after_two
    )


def test_random_numbers_are_fresh_each_call_and_follow_the_seed():
    torch.manual_seed(6)
    model = Noisy().train()
    x = torch.randn(64, 64)
    compiled = pygraph.export_and_compile(model, (x,))
    explanation = compiled.explain()
    assert mechanisms(explanation)["seed"] == "value" and mechanisms(explanation)["offset"] == "value"
    assert explanation.coverage["before"] >= 0.95
    assert [step for step, _ in transforms(explanation)].count("seed-random") == 3
    check_random_contract(compiled, x)
    for _ in range(3):
        x = torch.randn(64, 64)
        check_random_outputs(model, x, compiled(x))


class Reseeding(nn.Module):
    """Seeds torch's generator in forward before drawing (Reformer's LSH attention with a `hash_seed`)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.manual_seed(3)
        return x + torch.randn_like(x)


def test_reseeding_in_forward_is_refused_naming_the_line():
    """torch.export drops the seeding: each call would draw other numbers where eager draws the same
    ones again. Refused, and torch's generators are left as they were."""
    x = torch.randn(4)
    seeding = (torch.manual_seed, torch.random.manual_seed, torch.cuda.manual_seed_all)
    torch.manual_seed(8)
    expected = torch.rand(3)
    torch.manual_seed(8)
    with pytest.raises(pygraph.frontend.ExportError, match=r"torch.manual_seed\(3\).*reseeds"):
        pygraph.export_and_compile(Reseeding(), (x,))
    assert torch.equal(torch.rand(3), expected)
    assert (torch.manual_seed, torch.random.manual_seed, torch.cuda.manual_seed_all) == seeding


# ------------------------------------------------------------------------- pattern 6: data-dependent


def test_data_dependent_ops_run_between_graphs():
    torch.manual_seed(7)
    model = DataDependent()
    with knobs.scope(graphs="all"):  # every segment a graph, whatever the cost model says of tiny ones
        compiled = pygraph.export_and_compile(model, (torch.randn(8, 16),))
    steps = segments_around_host_ops(compiled)
    assert steps[0] == steps[-1] == "graph" and set(steps) == {"graph", "host"}
    explanation = compiled.explain()
    outside = explanation.outside
    assert {item["op"] for item in outside} >= {"aten.item.default", "aten._unique2.default"}
    assert all(item["reason"] and "test_graph_safety.py" in item["location"] for item in outside)
    # the mask's selection and nonzero's rows, each only summed, stay in the graphs padded to their bound
    padded = [t["location"] for t in explanation.transforms if t["pass"] == "pad-selections"]
    assert len(padded) == 2 and not {"aten.index.Tensor", "aten.nonzero.default"} & {i["op"] for i in outside}
    for _ in range(4):
        x = torch.randn(8, 16)
        assert_matches(compiled(x), model(x))


def test_host_segment_is_as_small_as_possible():
    class MaskedProduct(nn.Module):  # (a product of the selected elements: pad-selections leaves it)
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x * 2
            return y[y > 0].prod() + y.mean()  # the mean needs no host: it stays in the first graph

    compiled = pygraph.export_and_compile(MaskedProduct(), (torch.randn(32),))
    steps = compiled.plan.steps
    assert [type(s).__name__ for s in steps] == ["Segment", "HostStep", "HostStep", "Segment"]
    assert [s.node.op for s in steps if isinstance(s, HostStep)] == ["aten.index.Tensor", "aten.prod.default"]
    first = steps[0]
    assert isinstance(first, Segment) and "mean" in first.nodes[0].kernel
    for _ in range(3):
        x = torch.randn(32)
        assert_matches(compiled(x), MaskedProduct()(x))


def test_a_gpu_model_computing_on_the_cpu_runs_that_part_between_graphs():
    torch.manual_seed(5)
    model = OnTheCpu()
    emulator, explanation, call = as_gpu_program(model, (torch.randn(8, 16),), set())
    steps = ["host" if isinstance(s, HostStep) else "graph" for s in emulator.plan.steps]
    assert steps == ["graph", "host", "host", "host", "host", "graph"]
    assert [(item["op"], item["reason"]) for item in explanation.outside] == [
        ("aten._to_copy.default", "it copies a GPU tensor to the CPU, as the model asks"),
        ("pygraph_test.cpu_ranks.default", "it computes on the CPU, as the model asks"),
        ("aten.div.Scalar", "it computes on the CPU, as the model asks"),
        ("aten._to_copy.default", "it copies the CPU's result back to the GPU"),
    ]
    for _ in range(3):
        x = torch.randn(8, 16)
        assert_matches(call(x)[0], model(x))


def test_an_op_tagged_cudagraph_unsafe_runs_between_graphs():
    torch.manual_seed(3)
    model = Synchronising(tagged=True)
    compiled = pygraph.export_and_compile(model, (torch.randn(8, 16),))
    assert segments_around_host_ops(compiled) == ["graph", "host", "host", "graph"]
    op = "pygraph_test.scaled_by_largest_tagged.default"
    reason = f"torch tags {op} cudagraph_unsafe"
    assert [(item["op"], item["reason"]) for item in compiled.explain().outside] == [(op, reason)] * 2
    for _ in range(3):
        x = torch.randn(8, 16)
        assert_matches(compiled(x), model(x))


class _FailsToRecord:
    """Wraps a backend so that its first call fails as the CUDA runtime's does when an op of `op` cannot be
    recorded: its results computed, then `UnrecordableCall`."""

    def __init__(self, backend: Any, op: str) -> None:
        self.backend, self.op, self.native = backend, op, None

    def __call__(self, inputs: Any) -> list[torch.Tensor]:
        results = self.backend(inputs)
        node = next(n for s in self.backend.plan.steps for n in s.nodes if n.op == self.op)
        failure = UnrecordableCall(
            node.location, node.op, RuntimeError("operation not permitted when capturing")
        )
        failure.results = results
        raise failure

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)


def test_a_call_that_cannot_be_recorded_is_compiled_again_between_graphs():
    torch.manual_seed(4)
    model = Synchronising(tagged=False)
    x = torch.randn(8, 16)
    batch = torch.export.Dim("batch", min=2, max=64)
    compiled = pygraph.export_and_compile(model, (x,), dynamic_shapes={"x": {0: batch}})
    op = "pygraph_test.scaled_by_largest.default"
    assert "host" not in segments_around_host_ops(compiled)
    compiled._backend = _FailsToRecord(compiled._backend, op)
    with pytest.warns(
        UserWarning, match=f"node scaled_by_largest.*{op} cannot be recorded into a CUDA graph"
    ):
        assert_matches(compiled(x), model(x))  # the first call's results stand
    assert segments_around_host_ops(compiled) == ["graph", "host", "host", "graph"]  # both calls of the op
    reason = "recording it into a CUDA graph failed: operation not permitted when capturing"
    assert [(item["op"], item["reason"]) for item in compiled.explain().outside] == [(op, reason)] * 2
    assert f'pygraph.outside_graphs = "{reason}"' in compiled.ir("torch")  # pygraph-opt replays the stage
    for _ in range(3):
        x = torch.randn(8, 16)
        assert_matches(compiled(x), model(x))
    with warnings.catch_warnings():  # a variant for other shapes puts the op between graphs from the start
        warnings.simplefilter("error")
        x = torch.randn(5, 16)
        assert_matches(compiled(x), model(x))
    assert segments_around_host_ops(compiled._variants[((5, 16),)]) == ["graph", "host", "host", "graph"]
    compiled._backend = _FailsToRecord(compiled._backend, op)  # the same op failing again: nothing to re-plan
    with pytest.raises(UnrecordableCall, match=f"recording {op} failed"):
        compiled(torch.randn(8, 16))


# ------------------------------------------------------------------------------------ GPU (the lead)


def _on_gpu(model: nn.Module) -> nn.Module:
    return model.cuda()


@pytest.mark.gpu
@needs_gpu
def test_gpu_host_scalars(no_tf32):
    torch.manual_seed(0)
    model = _on_gpu(HostScalars())
    compiled = pygraph.export_and_compile(
        model, (torch.randn(4, 16, device="cuda"), torch.tensor(0.5)), target="cuda"
    )
    explanation = compiled.explain()
    assert mechanisms(explanation)["scale"] == "value" and explanation.coverage["before"] >= 0.95
    assert ("place-constants", "constant 'offsets' placed on the GPU once, at compile time") in transforms(
        explanation
    )
    for value in (0.5, -2.0, 7.25):
        x, scale = torch.randn(4, 16, device="cuda"), torch.tensor(value)
        assert_matches(compiled(x, scale), model(x, scale))
    assert compiled.stats()["graphs"] >= 1


@pytest.mark.gpu
@needs_gpu
def test_gpu_host_copies(no_tf32):
    torch.manual_seed(2)
    model = _on_gpu(HostCopies())
    model.table = model.table.cpu()  # kept on the host, moved in forward
    x, bias = torch.randn(4, 16, device="cuda"), torch.randn(16)
    compiled = pygraph.export_and_compile(model, (x, bias), target="cuda")
    explanation = compiled.explain()
    assert [s for s, _ in transforms(explanation)].count("hoist-host-copies") == 3
    assert explanation.coverage["before"] >= 0.95
    for _ in range(3):
        x, bias = torch.randn(4, 16, device="cuda"), torch.randn(16)
        assert_matches(compiled(x, bias), model(x, bias))
    with torch.no_grad():
        model.table.mul_(2)  # changed in place on the host: the GPU copy follows
    assert_matches(compiled(x, bias), model(x, bias))


@pytest.mark.gpu
@needs_gpu
def test_gpu_python_scalars(no_tf32):
    torch.manual_seed(4)
    model = _on_gpu(Temperature())
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 16, device="cuda"), 0.7, 2), target="cuda")
    assert compiled.explain().coverage["before"] >= 0.95
    for temperature, shift in ((0.7, 2), (2.5, -1), (0.1, 0)):
        x = torch.randn(4, 16, device="cuda")
        assert_matches(compiled(x, temperature, shift), model(x, temperature, shift))
    assert compiled.stats()["graphs"] >= 1


@pytest.mark.gpu
@needs_gpu
def test_gpu_mutations(no_tf32):
    torch.manual_seed(5)
    model = _on_gpu(Mutations().train())
    eager = copy.deepcopy(model)
    cuda = {"device": "cuda"}
    example = (torch.randn(2, 16, **cuda), torch.tensor([0], **cuda), torch.randn(2, 16, **cuda))
    compiled = pygraph.export_and_compile(model, example, target="cuda")
    assert compiled.explain().coverage["before"] >= 0.95
    for step in range(4):
        x, pos, y = (
            torch.randn(2, 16, **cuda),
            torch.tensor([(3 * step) % 8], **cuda),
            torch.randn(2, 16, **cuda),
        )
        y_eager = y.clone()
        assert_matches(compiled(x, pos, y), eager(x, pos, y_eager))
        torch.testing.assert_close(y, y_eager)
    for (name, ours), (_, theirs) in zip(model.named_buffers(), eager.named_buffers(), strict=True):
        torch.testing.assert_close(ours, theirs, msg=f"buffer {name}")


@pytest.mark.gpu
@needs_gpu
def test_gpu_writes_move_version_counters(no_tf32):
    _check_versions("cuda")


@pytest.mark.gpu
@needs_gpu
def test_gpu_parameter_writes(no_tf32):
    _check_parameter_writes("cuda")


@pytest.mark.gpu
@needs_gpu
def test_gpu_random(no_tf32):
    torch.manual_seed(6)
    model = _on_gpu(Noisy().train())
    x = torch.randn(64, 64, device="cuda")
    compiled = pygraph.export_and_compile(model, (x,), target="cuda")
    assert compiled.explain().coverage["before"] >= 0.95
    check_random_contract(compiled, x)
    for _ in range(3):
        x = torch.randn(64, 64, device="cuda")
        check_random_outputs(model, x, compiled(x))
    assert compiled.stats()["graphs"] >= 1


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize(
    ("make", "seed", "expected_steps"),
    [
        (DataDependent, 7, None),  # how many host ops: whatever the shapes need
        (OnTheCpu, 5, ["graph", "host", "host", "host", "host", "graph"]),
    ],
    ids=["data-dependent", "computing-on-the-cpu"],
)
def test_gpu_host_ops_between_graphs(no_tf32, make, seed, expected_steps):
    torch.manual_seed(seed)
    model = _on_gpu(make())
    with knobs.scope(graphs="all"):
        compiled = pygraph.export_and_compile(model, (torch.randn(8, 16, device="cuda"),), target="cuda")
    steps = segments_around_host_ops(compiled)
    assert steps[0] == steps[-1] == "graph" and set(steps) == {"graph", "host"}
    if expected_steps is not None:
        assert steps == expected_steps
    for _ in range(4):
        x = torch.randn(8, 16, device="cuda")
        assert_matches(compiled(x), model(x))
    assert compiled.stats()["graphs"] == steps.count("graph")


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize(
    ("tagged", "profile"),
    [(True, False), (False, False), (False, True)],
    ids=["tagged", "found-by-recording", "found-while-profiling"],
)
def test_gpu_a_call_that_synchronises_runs_between_graphs(no_tf32, tagged, profile):
    """Found by recording (on the first call, or while `profile=True` measures): the failed capture leaves
    torch as it was (its stream, its random generator, no pool kept open), and the model, compiled again,
    matches eager from its first call on."""
    torch.manual_seed(6)
    model = _on_gpu(Synchronising(tagged))
    x = torch.randn(8, 16, device="cuda")
    model(x)  # eager's own cuBLAS workspace, before the memory is counted
    gc.collect()
    torch.cuda.empty_cache()
    reserved = torch.cuda.memory_reserved()
    with warnings.catch_warnings(record=True) as caught, knobs.scope(graphs="all"):
        warnings.simplefilter("always")
        compiled = pygraph.export_and_compile(model, (x,), target="cuda", profile=profile)
        assert_matches(compiled(x), model(x))
    said = [str(w.message) for w in caught if "cannot be recorded into a CUDA graph" in str(w.message)]
    assert len(said) == (0 if tagged else 1)
    assert torch.cuda.current_stream() == torch.cuda.default_stream()
    steps = segments_around_host_ops(compiled)  # (profiled: each segment a graph or eager, as measured)
    assert steps[1:3] == ["host", "host"] and len(steps) == 4
    for _ in range(4):
        x = torch.randn(8, 16, device="cuda")  # random numbers on the GPU: the generator is not capturing
        assert_matches(compiled(x), model(x))
    assert compiled.stats()["graphs"] == steps.count("graph")
    del compiled
    gc.collect()
    torch.cuda.empty_cache()
    assert torch.cuda.memory_reserved() <= reserved
