"""Constructs met in models outside the benchmark (a sweep of small Hugging Face models), each in a
hand-written module compiled for the emulator and compared with eager."""

import copy
import dataclasses
import functools
import math
import types
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
import torch.utils._pytree as pytree
from gpu_marks import needs_gpu
from torch import nn
from torch.nn.modules.module import register_module_forward_hook

import pygraph
from pygraph.frontend import AttributeRead, UnsupportedError, per_call_check, tensor_tree
from pygraph.ir.explain import source_location
from pygraph.metrics import relative_error


class Fn(nn.Module):
    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *inputs: Any) -> Any:
        return self.fn(*inputs)


class RelativePositions(nn.Module):
    """BEiT's and Swin's relative position index: meshgrid of two aranges; broadcast_tensors alike."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        rows, cols = torch.meshgrid(x, y, indexing="ij")
        cols_xy, rows_xy = torch.meshgrid(x, y, indexing="xy")
        a, b = torch.broadcast_tensors(x[:, None], y)
        return rows * cols + rows_xy.t() - cols_xy.t() + a * b


def test_composites_returning_tensor_lists_become_views():
    model = RelativePositions()
    compiled = pygraph.export_and_compile(model, (torch.randn(5), torch.randn(3)), target="emulator")
    assert "meshgrid" not in compiled.ir("torch") and "broadcast_tensors" not in compiled.ir("torch")
    for _ in range(2):
        x, y = torch.randn(5), torch.randn(3)
        assert relative_error(compiled(x, y), model(x, y)) <= 1e-6


class MaskedRows(nn.Module):
    """Results whose size the data decides, one of them transposed."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x[x > 0] * 2, x[x.sum(1) > 0].t()


def test_results_whose_size_the_data_decides():
    torch.manual_seed(0)
    model = MaskedRows()
    compiled = pygraph.export_and_compile(model, (torch.randn(6, 3),), target="emulator")
    for _ in range(3):
        x = torch.randn(6, 3)
        got, ref = compiled(x), model(x)
        assert [g.shape for g in got] == [r.shape for r in ref] and relative_error(got, ref) == 0


class BooleanScalars(nn.Module):
    """Python bools where ATen takes a Scalar, which the importer converts with `aten.Int.bool`: DeepSeek
    V3.2's indexer masks all but the top-k keys with `ones(..., dtype=bool).scatter(-1, top, False)`."""

    def forward(self, scores: torch.Tensor) -> tuple[torch.Tensor, ...]:
        top = scores.topk(3, dim=-1).indices
        hidden = scores.new_ones(scores.shape, dtype=torch.bool).scatter(-1, top, False)
        kept = torch.full_like(hidden, True).masked_fill(scores < 0, False)
        return scores.masked_fill(hidden, float("-inf")).softmax(-1), kept, torch.where(kept, scores, True)


def test_python_bools_as_scalars_match_eager():
    torch.manual_seed(0)
    model = BooleanScalars()
    compiled = pygraph.export_and_compile(model, (torch.randn(2, 4, 8),), target="emulator")
    for _ in range(3):
        scores = torch.randn(2, 4, 8)
        got, ref = compiled(scores), model(scores)
        assert [g.dtype for g in got] == [r.dtype for r in ref]
        assert relative_error(got, ref) <= 1e-6


class GrowingCache(nn.Module):
    """Llama's dynamic rotary embedding in small: a length from the data kept in a plain attribute (an int,
    then a 0-d tensor) and a table replaced as a buffer, both when a call is longer than any before."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("table", torch.arange(1.0, 5.0), persistent=False)
        self.longest = 8

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        length = positions.max() + 1
        if length > self.longest:
            self.register_buffer("table", torch.arange(1.0, 5.0) / length, persistent=False)
            self.longest = length
        return x * self.table


class Recurrent(nn.Module):
    """A streaming cell keeping its state in a plain tensor attribute of a submodule, replaced every call."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(4, 4)
        self.cell.state = torch.zeros(2, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.cell.state = torch.tanh(self.cell(x) + self.cell.state)
        return self.cell.state * 2


class LazyState(nn.Module):
    """State that the first call creates (`None` before), and the last input kept as it is."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.hidden: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        previous = self.hidden if self.hidden is not None else torch.zeros_like(x)
        self.hidden, self.last_input = torch.relu(self.linear(x) + previous), x
        return self.hidden.sum(-1)


class StackedCells(nn.Module):
    """Two LSTM cells keeping their (h, c) in plain attributes: a tuple assigned anew each call, and a list
    of tuples changed in place (the list object stays)."""

    def __init__(self) -> None:
        super().__init__()
        self.cells = nn.ModuleList([nn.LSTMCell(4, 4), nn.LSTMCell(4, 4)])
        self.first = (torch.zeros(2, 4), torch.zeros(2, 4))
        self.rest = [(torch.zeros(2, 4), torch.zeros(2, 4))]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.first = self.cells[0](x, self.first)
        self.rest[0] = self.cells[1](self.first[0], self.rest[0])
        return self.rest[0][0]


class ReadsATuple(nn.Module):
    """Reads tensors held in a tuple and a list attribute, which a caller replaces between calls."""

    def __init__(self) -> None:
        super().__init__()
        self.pair = (torch.randn(3), torch.randn(3))
        self.tables = [torch.randn(3)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.pair[0] + self.pair[1] - self.tables[0]


def _check_carried_state(
    model: nn.Module,
    example: tuple[torch.Tensor, ...],
    calls: list[tuple[torch.Tensor, ...]],
    device: str,
    **options: Any,
) -> tuple[Any, list[str]]:
    """Compiles `model`, then runs each call on it and on an eager copy made first, comparing the outputs,
    the buffers and every tensor, or list, tuple or dict of tensors, held in an attribute after each call;
    returns the compiled model and the warnings."""
    torch.manual_seed(0)
    model = model.to(device)
    for module in model.modules():  # (`.to()` moves no plain attributes)
        for key, value in list(vars(module).items()):
            if tensor_tree(value) and any(t.device.type != device for t in pytree.tree_leaves(value)):
                vars(module)[key] = pytree.tree_map(lambda t: t.to(device), value)
    eager = copy.deepcopy(model)
    target = "cuda" if device == "cuda" else "emulator"
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = pygraph.export_and_compile(model, example, target=target, **options)
        for args in calls:
            assert relative_error(compiled(*args), eager(*args)) <= 1e-6
            ours, theirs = dict(model.named_modules()), dict(eager.named_modules())
            for name, module in ours.items():
                held = {k: v for k, v in vars(module).items() if tensor_tree(v)}
                assert held.keys() == {k for k, v in vars(theirs[name]).items() if tensor_tree(v)}
                for key, value in [*held.items(), *module._buffers.items()]:
                    torch.testing.assert_close(value, getattr(theirs[name], key), rtol=1e-6, atol=0)
    return compiled, [str(w.message) for w in caught]


def test_tensors_forward_assigns_to_attributes_are_carried_out_of_the_call():
    short, long, longer = (
        torch.tensor([[0, 1, 2, 3]]),
        torch.tensor([[0, 1, 2, 11]]),
        torch.tensor([[0, 9, 3, 15]]),
    )
    calls = [(torch.randn(2, 4), p) for p in (long, short, long, longer, short)]
    compiled, caught = _check_carried_state(GrowingCache(), (torch.randn(2, 4), short), calls, "cpu")
    assert type(compiled.model.longest) is torch.Tensor and int(compiled.model.longest) == 16
    assert not [m for m in caught if "assign" in m]  # (neither pygraph's warning nor torch.export's)


class RegistersAnAttribute(nn.Module):
    """Older transformers' longrope: forward registers a plain tensor attribute as the buffer it reads (a
    real tensor, not one the trace computed), the long or the short table by the data."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("table", torch.ones(4), persistent=False)
        self.long, self.short = torch.arange(1.0, 5.0), torch.full((4,), 0.5)

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        self.register_buffer("table", self.long if positions.max() >= 8 else self.short, persistent=False)
        return x * self.table


def test_a_buffer_forward_registers_from_an_attribute_is_carried():
    short, long = torch.tensor([[0, 1, 2, 3]]), torch.tensor([[0, 1, 2, 11]])
    calls = [(torch.randn(2, 4), p) for p in (long, short, long)]
    _, caught = _check_carried_state(RegistersAnAttribute(), (torch.randn(2, 4), short), calls, "cpu")
    assert not [m for m in caught if "assign" in m or "FakeTensor" in m]


def _check_recurrent(device: str) -> None:
    """State replaced every call: one program, which takes the attribute as an input, so that a call reads
    the state the last one left, or one the caller set; a state of another shape is traced again."""
    x = torch.randn(2, 4, device=device)
    calls = [(torch.randn(2, 4, device=device),) for _ in range(4)]
    compiled, caught = _check_carried_state(Recurrent(), (x,), calls, device)
    assert len(compiled._ways) == 1 and [read.path for read in compiled._lifted] == ["cell.state"]
    assert caught == []
    with torch.no_grad():
        compiled.model.cell.state = torch.ones(2, 4, device=device)  # (a caller resetting it)
        expected = torch.tanh(compiled.model.cell(x) + 1) * 2
        torch.testing.assert_close(compiled(x), expected, rtol=1e-6, atol=1e-6)
        compiled.model.cell.state = torch.ones(1, 4, device=device)
        expected = torch.tanh(compiled.model.cell(x) + 1) * 2
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.testing.assert_close(compiled(x), expected, rtol=1e-6, atol=1e-6)
    (message,) = [str(w.message) for w in caught]
    assert "takes the attribute `cell.state` as a float32[2, 4] tensor" in message
    assert "float32[1, 4] tensor" in message


def test_state_replaced_every_call_is_an_input_and_a_result_of_one_program():
    _check_recurrent("cpu")


def test_state_created_by_the_first_call_is_carried_from_then_on():
    calls = [(torch.randn(2, 4),) for _ in range(4)]
    compiled, caught = _check_carried_state(LazyState(), (torch.randn(2, 4),), calls, "cpu")
    assert len(compiled._ways) == 2  # (traced with `hidden` None, then with it a tensor)
    (way,) = [way for way in compiled._ways if way is not None]
    assert [read.path for read in way._lifted] == ["hidden"]  # (`last_input` is assigned, never read)
    assert compiled.model.last_input is calls[-1][0]  # (the input itself, as eager keeps it)
    assert len([m for m in caught if "`hidden` (None)" in m]) == 1


def _check_stacked_cells(device: str) -> None:
    """Tuples and lists of tensors in attributes: carried out of each call, the list changed in place, and
    both inputs of the one program that serves every call."""
    calls = [(torch.randn(2, 4, device=device),) for _ in range(4)]
    model = StackedCells()
    model.rest = [tuple(t.to(device) for t in model.rest[0])]
    rest = model.rest
    compiled, caught = _check_carried_state(model, (torch.randn(2, 4, device=device),), calls, device)
    assert model.rest is rest and type(model.first) is tuple
    assert len(compiled._ways) == 1 and [read.path for read in compiled._lifted] == ["first", "rest"]
    assert caught == []


def test_lists_and_tuples_of_tensors_forward_assigns_are_carried():
    _check_stacked_cells("cpu")


def _check_tensors_in_containers_replaced(device: str) -> None:
    """A call reads the tensors that a tuple or list in an attribute holds when it runs: the tuple
    assigned anew, an item of the list replaced (no assignment says so) or of another shape."""
    torch.manual_seed(0)
    model, x = ReadsATuple(), torch.randn(3, device=device)
    model.pair, model.tables = tuple(t.to(device) for t in model.pair), [model.tables[0].to(device)]
    compiled = pygraph.export_and_compile(model, (x,), target="cuda" if device == "cuda" else "emulator")
    if device == "cuda":  # (the replay asks every call whether the containers hold other tensors)
        with torch.no_grad():
            compiled(x), compiled(x)
        assert compiled._replay is compiled._backend.native is not None
    steps = [
        lambda: setattr(model, "pair", (torch.randn(3, device=device), torch.randn(3, device=device))),
        lambda: model.tables.__setitem__(0, torch.randn(3, device=device)),
        lambda: model.tables[0].mul_(2),
        lambda: model.tables.__setitem__(0, torch.randn(1, device=device)),
    ]
    caught = _calls_after_each(steps, compiled, model, device, shape=(3,))
    messages = [m for m in caught if "tensor attribute" in m]
    assert len(messages) == 1 and "`tables[0]`" in messages[0] and "float32[1] tensor" in messages[0]


def test_tensors_in_tuples_and_lists_are_read_as_the_model_holds_them():
    _check_tensors_in_containers_replaced("cpu")


@needs_gpu
def test_gpu_tensors_forward_assigns_to_attributes(no_tf32):
    _check_recurrent("cuda")
    calls = [(torch.randn(2, 4, device="cuda"),) for _ in range(4)]
    _check_carried_state(LazyState(), (torch.randn(2, 4, device="cuda"),), calls, "cuda")
    _check_stacked_cells("cuda")
    _check_tensors_in_containers_replaced("cuda")
    # (static outputs are the graphs' own buffers, which the next call overwrites: the state is a copy)
    x = torch.randn(2, 4, device="cuda")
    _check_carried_state(
        Recurrent(),
        (x,),
        [(torch.randn(2, 4, device="cuda"),) for _ in range(3)],
        "cuda",
        static_outputs=True,
    )


class RowTheDataPicks(nn.Module):
    """A row of an intermediate chosen by its data (`h[i.item()]`, a view taken between graphs), read by two
    later kernels: its bytes must outlive the intermediate's other readers."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.amin(1, keepdim=True)
        row = h[h.sum(-1).argmax().item()]
        return torch.stack([row, torch.tanh(row) * 0.5], 1)


def test_a_row_the_data_picks_is_read_in_place_until_its_last_reader():
    torch.manual_seed(0)
    model = RowTheDataPicks()
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 8, 7),), target="emulator")
    for row in range(4):  # (the first row lies at the intermediate's own first bytes)
        x = torch.randn(4, 8, 7)
        x[row] += 5
        assert relative_error(compiled(x), model(x)) <= 1e-6


class NonzeroTuple(nn.Module):
    """`nonzero(as_tuple=True)` and one-argument `torch.where` (a 0-d condition counts as 1-d); the result's
    size is the data's."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.nonzero(as_tuple=True)
        (positive,) = torch.where(x.sum() > 0)
        return x[rows, cols] * 2 + positive


def test_nonzero_as_tuple_runs_on_the_host():
    torch.manual_seed(0)
    model = NonzeroTuple()
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 3).relu(),), target="emulator")
    for _ in range(3):
        x = torch.randn(4, 3).relu()
        got, ref = compiled(x), model(x)
        assert got.shape == ref.shape and relative_error(got, ref) == 0


class RowsByMask(nn.Module):
    """X-MOD's language adapters: the rows a mask picks go through a module chosen per mask and are written
    back by the same mask (`out[m] = f(h[m])`: a count of rows the data decide on both sides)."""

    def __init__(self) -> None:
        super().__init__()
        self.adapters = nn.ModuleList(
            nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 8)) for _ in "ab"
        )

    def forward(self, h: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(h)
        for i, adapter in enumerate(self.adapters):
            picked = ids == i
            out[picked] = adapter(h[picked])
        return out + h


def test_rows_a_mask_picks_are_written_back_by_it():
    torch.manual_seed(0)
    model = RowsByMask()
    compiled = pygraph.export_and_compile(
        model, (torch.randn(2, 5, 8), torch.randint(0, 2, (2, 5))), target="emulator"
    )
    for count in (0, 3, 10):  # (no row, some, all rows for the first adapter)
        h, ids = torch.randn(2, 5, 8), (torch.arange(10) >= count).long().view(2, 5)
        assert relative_error(compiled(h, ids), model(h, ids)) <= 1e-6


class PatchesByMask(nn.Module):
    """ViLT's patch selection: position embeddings interpolated to each row's size read from the mask and
    padded back, and a loop over the unique rows of `nonzero`'s result (its count the trace fixes)."""

    def forward(self, positions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        sizes = mask.sum(1)
        grid = [
            F.pad(
                F.interpolate(positions, size=(h + 1, 4), mode="bilinear", align_corners=True),
                (0, 0, 0, 8 - h),
            )
            for h in sizes
        ]
        valid = mask.nonzero()
        counts = torch.stack([(valid[:, 0] == row).sum() for row in valid[:, 0].unique()])
        return torch.cat(grid) * counts.sum()


def test_sizes_and_rows_the_mask_decides():
    torch.manual_seed(0)
    model = PatchesByMask()

    def mask(*sizes: int) -> torch.Tensor:
        return (torch.arange(8) < torch.tensor(sizes)[:, None]).long()

    positions = torch.randn(1, 3, 4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a call with another count of rows is traced again: it says so)
        compiled = pygraph.export_and_compile(model, (positions, mask(5, 3)), target="emulator")
        for sizes in ((5, 3), (2, 7), (0, 6), (1, 6)):  # ((0, 6): one row fewer)
            positions = torch.randn(1, 3, 4, 4)
            assert relative_error(compiled(positions, mask(*sizes)), model(positions, mask(*sizes))) <= 1e-6


class ValueCounts(nn.Module):
    """A loop over a tensor's distinct values: as many pieces as the data have values."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        levels = x.round().clamp(-2, 2)
        return sum((levels == u).to(x.dtype) * u for u in levels.unique())


def test_a_loop_over_the_unique_values_of_one_element():
    """unique of one element has one value whatever it is, so no check of the trace fixes the count (its
    range is [1, 1]); the loop's unbind is still one select, as many as the trace met (was refused: a
    host op holding a list)."""
    model = ValueCounts()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (decides from values of the data: it says so)
        compiled = pygraph.export_and_compile(model, (torch.randn(1, 1),), target="emulator")
        for seed in range(3):
            x = torch.randn(1, 1, generator=torch.Generator().manual_seed(seed)) * 3
            assert relative_error(compiled(x), model(x)) <= 1e-6


def test_a_loop_over_one_distinct_value_of_many_elements():
    """Five elements of one value: torch's unbind decomposition kept the one piece's dim of size u0
    (squeezed only where the size is 1 for certain), broadcasting it against the five fixed u0 to 5, and
    draft export failed on its own check `Eq(u0, 1)` (fuzz seed 62167); calls of other counts trace again."""
    model = ValueCounts()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (decides from values of the data, traced again: it says so)
        compiled = pygraph.export_and_compile(model, (torch.full((1, 5), 1.2),), target="emulator")
        for x in (torch.full((1, 5), -0.8), torch.randn(1, 5) * 2, torch.tensor([[0.0, 1.0, 0.0, 1.0, 2.0]])):
            assert relative_error(compiled(x), model(x)) <= 1e-6


def test_a_loop_over_unique_values_meets_another_count():
    """The trace made one select per value the example has (five); a call with three values failed
    inside the selects (the count's check `u0 == 5` was dropped as one of export's size checks), and on
    a GPU would have read past the values: the check runs, and that call is traced again. Compiling
    names the loop's line as one that decides from the data (it named no line before)."""
    model = ValueCounts()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = pygraph.export_and_compile(model, (torch.linspace(-2, 2, 5)[None],), target="emulator")
        assert any("decides in Python from values of its data at" in str(w.message) for w in caught)
        line = "for u in levels.unique()"
        assert all(line in str(w.message) for w in caught if "decides in Python" in str(w.message))
        for x in (torch.tensor([[0.0, 1.0, 0.0, 1.0, 2.0]]), torch.randn(1, 5) * 2, torch.zeros(1, 5)):
            assert relative_error(compiled(x), model(x)) <= 1e-6


class BranchOnCount(nn.Module):
    """Python branching on how many elements a mask selects."""

    def __init__(self, many: Callable[[int], bool]) -> None:
        super().__init__()
        self.many = many

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        selected = x[x > 0]
        return (selected * 2).sum() if self.many(selected.shape[0]) else (selected - 1).sum()


@pytest.mark.parametrize(
    "many", [lambda n: n > 3, lambda n: n != 1, lambda n: n >= 4], ids=["more-than-3", "not-1", "at-least-4"]
)
def test_a_branch_on_a_size_the_data_decide_is_checked(many: Callable[[int], bool]):
    """`3 < u0` and `u0 != 1` were dropped with export's size checks: a call selecting fewer elements
    took the traced way silently (12 against eager's 4; 2 against 0). `u0 >= 4` is only a range check,
    as the facts `u0 >= 0` and `u0 <= 6` are: it stays."""
    model = BranchOnCount(many)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = pygraph.export_and_compile(
            model, (torch.tensor([1.0, 2, 3, 4, 5, -1]),), target="emulator"
        )
        for x in (
            torch.tensor([1.0, -2, -3, -4, 5, -1]),
            torch.tensor([1.0, -2, -3, -4, -5, -1]),
            torch.randn(6),
        ):
            assert relative_error(compiled(x), model(x)) <= 1e-6


def test_source_location_names_an_installed_models_own_file():
    text = (
        'loc("meshgrid"(callsite("/venv/lib/site-packages/transformers/models/beit/modeling_beit.py":204:0 '
        'at callsite("/venv/lib/site-packages/torch/nn/modules/module.py":1775:0 at "/home/me/run.py":21:0))))'
    )
    assert (
        source_location(text)
        == "/venv/lib/site-packages/transformers/models/beit/modeling_beit.py:204 (node meshgrid)"
    )


class Einsums(nn.Module):
    """XLNet's relative attention scores and projections, a batched outer product, a diagonal and a total."""

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, w: torch.Tensor, m: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        scores = torch.einsum("ibnd,jbnd->bnij", q + 1.0, k)
        projected = torch.einsum("ibh,hnd->ibnd", q.flatten(2), w)
        outer = torch.einsum("bi,bj->bij", m, m.flip(1))
        return (
            scores.softmax(-1),
            projected,
            outer,
            torch.einsum("ii->i", m[:, :5] @ m[:, :5].t()),
            torch.einsum("ij->", m),
        )


def test_einsum_becomes_views_and_a_batched_product():
    torch.manual_seed(0)
    model = Einsums()

    def draw() -> tuple[torch.Tensor, ...]:
        return torch.randn(7, 2, 3, 5), torch.randn(9, 2, 3, 5), torch.randn(15, 3, 5), torch.randn(5, 6)

    compiled = pygraph.export_and_compile(model, draw(), target="emulator")
    assert "einsum" not in compiled.ir("torch") and "aten.bmm" in compiled.ir("torch")
    for _ in range(2):
        inputs = draw()
        assert relative_error(compiled(*inputs), model(*inputs)) <= 1e-6


class OutputProjection(nn.Module):
    """XLNet's output projection: heads and head dims summed, `d` named before `n` but stored after it."""

    def __init__(self) -> None:
        super().__init__()
        self.o = nn.Parameter(torch.randn(12, 3, 5))

    def forward(self, attn: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.einsum("ibnd,hnd->ibh", attn, self.o), torch.einsum(
            "ibnd,hnd->ibh", attn.transpose(2, 3), self.o.transpose(1, 2)
        )


def test_einsum_sums_labels_in_memory_order_so_its_operands_are_views():
    """Merged in the order their letters sort in (d, n) the operands would be copies (the weight's kept
    as derived state); merged in memory order they are views, whatever the letters."""
    torch.manual_seed(0)
    model = OutputProjection()
    compiled = pygraph.export_and_compile(model, (torch.randn(7, 2, 3, 5),), target="emulator")
    assert not [a for a in compiled.plan.arguments if a.role == "derived"]
    assert "aten.clone" not in compiled.ir("torch") and compiled.ir("torch").count("aten.bmm") == 2
    for _ in range(2):
        attn = torch.randn(7, 2, 3, 5)
        assert relative_error(compiled(attn), model(attn)) <= 1e-6


class ShiftedScores(nn.Module):
    """Transformer-XL's relative shift: scores indexed by an `arange` (a slice), and ranges that stay
    gathers (descending, past the dim: eager raises there)."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, q, k = x.shape
        shifted = x.reshape(b, k, q)[:, 1:].reshape(b, q, k - 1)
        kept = torch.index_select(shifted, 2, torch.arange(1, k - 1, 2, device=x.device))
        backwards = torch.index_select(x, 1, torch.arange(x.shape[1] - 1, -1, -1, device=x.device))
        return kept.softmax(-1), backwards * 2


def test_indexing_by_an_arange_is_a_slice():
    torch.manual_seed(0)
    model = ShiftedScores()
    compiled = pygraph.export_and_compile(model, (torch.randn(3, 9, 10),), target="emulator")
    assert compiled.ir("torch").count("torch.aten.index_select") == 1  # the descending one stays a gather
    for _ in range(2):
        x = torch.randn(3, 9, 10)
        assert relative_error(compiled(x), model(x)) <= 1e-6
    with pytest.raises(
        Exception, match=r"(?i)index|bounds"
    ):  # an error for a range past the dim, not a slice
        pygraph.export_and_compile(PastTheEnd(), (torch.randn(3, 4),), target="emulator")(torch.randn(3, 4))


class PastTheEnd(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.index_select(x, 1, torch.arange(2, 6, device=x.device))


class StepsConcatenated(nn.Module):
    """An unrolled RNN's `cat(steps)`: pieces of size 1 along the cat dim, the last computed only for it (so
    fuse-pointwise recomputes it in the cat's kernel as a broadcast value)."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.cat([a, (b + 1).tanh(), a * 2], 0)


def test_concatenated_pieces_of_size_one_computed_in_the_kernel():
    model = StepsConcatenated()
    compiled = pygraph.export_and_compile(
        model, (torch.randn(1, 2, 16), torch.randn(1, 2, 16)), target="emulator"
    )
    for _ in range(2):
        a, b = torch.randn(1, 2, 16), torch.randn(1, 2, 16)
        assert relative_error(compiled(a, b), model(a, b)) <= 1e-6


def test_rnn_cells_split_their_gates_into_views():
    """LSTMCell and GRUCell chunk their gates with `unsafe_split` (a list of tensors): it becomes split."""
    torch.manual_seed(0)
    for cell in (nn.LSTMCell(8, 16), nn.GRUCell(8, 16), nn.RNN(8, 16, batch_first=True)):
        compiled = pygraph.export_and_compile(cell, (torch.randn(3, 8),), target="emulator")
        assert "unsafe_split" not in compiled.ir("torch")
        for _ in range(2):
            x = torch.randn(3, 8)
            assert relative_error(compiled(x), cell(x)) <= 1e-5


class CachesOnFirstCall(nn.Module):
    """Computes a table on its first call and keeps it as a plain attribute (Llama's longrope keeps its
    long frequencies so): tracing must not leave its fake tensor there for later eager calls."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("frequencies", torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        long_frequencies = getattr(self, "long_frequencies", None)
        if long_frequencies is None:
            self.long_frequencies = long_frequencies = torch.arange(4.0) * 0.5 + 1
        self.frequencies.copy_(torch.where(x.sum() > -100, long_frequencies, self.frequencies))
        return x * self.frequencies


class CachesInItsDict(nn.Module):
    """Fills a cache it holds on its first eval call (LeViT's attention biases), in place."""

    def __init__(self) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.randn(4))
        self.cache: dict[str, torch.Tensor] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if "bias" not in self.cache:
            self.cache["bias"] = self.bias * 2
        return x + self.cache["bias"]


class HooksOnce(nn.Module):
    """Installs a forward hook on its first call and marks that with a new attribute (transformers' output
    capturing): a second hook would count twice."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(4, 4)
        self.seen: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not getattr(self, "hooked", False):
            self.inner.register_forward_hook(lambda module, args, out: self.seen.append(out))
            self.hooked = True
        self.seen.clear()
        y = self.inner(x)
        return y + len(self.seen)


def test_tracing_leaves_the_models_attributes_as_they_were():
    model = nn.Sequential(nn.Linear(4, 4), CachesOnFirstCall(), CachesInItsDict(), HooksOnce())
    compiled = pygraph.export_and_compile(model, (torch.randn(3, 4),), target="emulator")
    assert not hasattr(model[1], "long_frequencies")
    for _ in range(2):
        x = torch.randn(3, 4)
        ref = model(x)
        assert type(model[1].long_frequencies) is torch.Tensor
        assert relative_error(compiled(x), ref) <= 1e-6


class Vocabulary:
    """A helper object holding a table it builds on first use (transformers' `cached_property`, Chameleon's
    vocabulary mapping)."""

    @functools.cached_property
    def reversed_ids(self) -> torch.Tensor:
        table = torch.zeros(16, dtype=torch.long)
        for i in range(16):
            table[i] = 15 - i
        return table


class LooksUpThroughAHelper(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.vocabulary = Vocabulary()
        self.embed = nn.Embedding(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ids = self.vocabulary.reversed_ids[x.argmax(-1)]
        _ = f"{(ids > 7).sum()} tokens"  # (a number formatted from the data: the first trace fails there)
        return self.embed(ids)


def test_a_table_a_helper_object_caches_in_a_failed_trace_is_not_kept():
    """The first trace cached a fake table on the helper, and the trace after it (draft export) read it:
    its lookups indexed out of range (on the GPU, a device-side assert that ended the process's CUDA)."""
    torch.manual_seed(0)
    model = LooksUpThroughAHelper().eval()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # (a number formatted from the data: compiling says so)
        compiled = pygraph.export_and_compile(model, (torch.randn(2, 5, 16),), target="emulator")
        x = torch.randn(2, 5, 16)
        assert relative_error(compiled(x), model(x)) <= 1e-6
    assert type(model.vocabulary.reversed_ids) is torch.Tensor


class CountsItsCalls(nn.Module):
    """Keeps a call counter in a Python attribute and scales by it."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.linear(x) * self.calls


class RescalesOnce(nn.Module):
    """Rescales its weight in place on its first call and records that in a flag (RWKV in eval mode)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.rescaled = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.rescaled:
            with torch.no_grad():
                self.linear.weight.div_(2)
            self.rescaled = True
        return self.linear(x)


class CountsItsStages(nn.Module):
    """Sets a counter afresh in every call before reading it (Funnel's attention structure): an attribute
    tracing adds, whose value the next trace starts from, and which changes nothing across calls."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.stage = 0
        for layer in self.layers:
            x = layer(x) * (self.stage + 1)
            self.stage += 1
        return x


class CountsOnly(nn.Module):
    """Counts its calls and the rows it saw in Python attributes that nothing it computes reads."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.calls, self.rows = 0, 100

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.rows = self.rows + x.shape[0]
        return self.linear(x)


class CountsAndDecides(CountsOnly):
    """Counts its calls and decides on the count (a warm-up): each count is a program of its own."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.linear(x) * (0.5 if self.calls <= 2 else 1.0)


@dataclasses.dataclass
class Options:
    offset: float = 0.25


class ReadsItsOptions(nn.Module):
    """Reads plain attributes of its own and of an options object it holds (a config)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.scale, self.use_relu, self.options = 2.0, False, Options()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x) * self.scale + self.options.offset
        return torch.relu(y) if self.use_relu else y


def _check_python_state(model: nn.Module, device: str, programs: int) -> list[str]:
    """Compiles `model`, checks 4 calls against an eager copy (outputs, parameters, the attributes forward
    changes) and the number of programs they made; returns the warnings."""
    torch.manual_seed(0)
    model = model.to(device)
    target = "cuda" if device == "cuda" else "emulator"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = pygraph.export_and_compile(model, (torch.randn(2, 4, device=device),), target=target)
        eager = copy.deepcopy(model)  # (with the attributes tracing added, which torch.export keeps)
        for _ in range(4):
            x = torch.randn(2, 4, device=device)
            assert relative_error(compiled(x), eager(x)) <= 1e-6
    for (name, ours), (_, theirs) in zip(model.named_parameters(), eager.named_parameters(), strict=True):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=0, msg=f"parameter {name}")
    plain = {k: v for k, v in vars(model).items() if isinstance(v, (bool, int))}
    assert plain == {k: v for k, v in vars(eager).items() if isinstance(v, (bool, int))}
    assert len(compiled._ways) == programs
    return [str(w.message) for w in caught if "Python attribute" in str(w.message)]


def test_a_counter_kept_in_a_python_attribute_is_traced_again_for_each_value():
    messages = _check_python_state(CountsItsCalls(), "cpu", programs=4)
    assert "`calls` (0 -> 1)" in messages[0] and "register_buffer" in messages[0]


def test_a_flag_set_by_the_first_call_takes_the_other_program_from_then_on():
    messages = _check_python_state(RescalesOnce(), "cpu", programs=2)
    assert "`rescaled` (False -> True)" in messages[0]


def test_an_attribute_set_afresh_in_every_call_is_traced_once():
    assert _check_python_state(CountsItsStages(), "cpu", programs=1) == []


def test_a_counter_nothing_reads_compiles_once():
    assert _check_python_state(CountsOnly(), "cpu", programs=1) == []


def test_a_counter_the_model_decides_on_is_traced_again_for_each_value():
    messages = _check_python_state(CountsAndDecides(), "cpu", programs=4)
    assert "`calls` (0 -> 1)" in messages[0]


def _calls_after_each(
    steps: list[Callable[[], Any]],
    compiled: Any,
    model: nn.Module,
    device: str,
    shape: tuple[int, ...] = (2, 4),
) -> list[str]:
    """Runs each step, then two calls on fresh inputs of `shape`, each checked against eager; returns the
    messages of the warnings given meanwhile."""
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in steps:
            step()
            for _ in range(2):
                x = torch.randn(*shape, device=device)
                assert relative_error(compiled(x), model(x)) <= 1e-6
    return [str(w.message) for w in caught]


def _check_reassigned_options(device: str) -> None:
    """Attributes forward reads, assigned between calls (and back): each call computes what eager does,
    with one program per set of values of the flag, the numbers taken as inputs once a call changed them."""
    torch.manual_seed(0)
    model, x = ReadsItsOptions().to(device), torch.randn(2, 4, device=device)
    target = "cuda" if device == "cuda" else "emulator"
    compiled = pygraph.export_and_compile(model, (x,), target=target)
    steps = [
        lambda: setattr(model, "scale", 3.0),
        lambda: setattr(model, "use_relu", True),
        lambda: setattr(model.options, "offset", -1.0),
        lambda: setattr(model, "scale", 2.0),
        lambda: None,
    ]
    caught = _calls_after_each(steps, compiled, model, device)
    # the traced program; `scale` an input; `scale` an input, `use_relu` True; and `options.offset` too
    assert [[read.path for read in way._lifted] for way in compiled._ways[:-1]] == [
        ["options.offset", "scale"],
        ["scale"],
        ["scale"],
    ]
    messages = [m for m in caught if "Python attribute" in m]
    assert len(messages) == 3 and "`scale` (2.0)" in messages[0] and "this call finds 3.0" in messages[0]
    assert "with `scale` as inputs of the program" in messages[0]


def test_attributes_forward_reads_are_checked_after_an_assignment():
    _check_reassigned_options("cpu")


class TensorAttributes(nn.Module):
    """Tensors held as plain attributes, not buffers (torch.export makes them constants): a table on the
    model, and a complex one on a submodule (Meta's Llama keeps `freqs_cis` so)."""

    def __init__(self) -> None:
        super().__init__()
        self.table = torch.randn(8)
        self.inner = nn.Module()
        self.inner.freqs = torch.randn(8, dtype=torch.complex64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.table + torch.view_as_real(self.inner.freqs * 2).sum(-1)


def _check_tensor_attributes_replaced(device: str) -> None:
    """A call reads the tensors the attributes hold then, as eager: changed in place, replaced by a tensor
    of the same layout (no new trace) or of another, or by a number (each a new trace, with a warning)."""
    torch.manual_seed(0)
    model = TensorAttributes()
    model.table, model.inner.freqs = model.table.to(device), model.inner.freqs.to(device)
    x = torch.randn(8, device=device)
    compiled = pygraph.export_and_compile(model, (x,), target="cuda" if device == "cuda" else "emulator")
    steps = [
        lambda: (model.table.mul_(2), model.inner.freqs.mul_(1j)),
        lambda: setattr(model, "table", torch.randn(8, device=device)),
        lambda: setattr(model.inner, "freqs", torch.randn(8, dtype=torch.complex64, device=device)),
        lambda: setattr(model, "table", torch.randn(1, device=device)),
        lambda: setattr(model, "table", 3.0),
    ]
    traced = []
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in steps:
            step()
            for _ in range(2):
                x = torch.randn(8, device=device)
                torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)
            traced.append(len(compiled._ways))
    assert traced == [1, 1, 1, 2, 3]
    messages = [str(w.message) for w in caught if "tensor attribute" in str(w.message)]
    assert len(messages) == 2 and "float32[8] tensor" in messages[0] and "float32[1] tensor" in messages[0]
    assert "is 3.0 now" in messages[1]


def test_tensor_attributes_are_read_as_the_model_holds_them() -> None:
    _check_tensor_attributes_replaced("cpu")


@needs_gpu
def test_gpu_tensor_attributes_are_read_as_the_model_holds_them() -> None:
    _check_tensor_attributes_replaced("cuda")


class Annealed(nn.Module):
    """Numbers a caller sets between calls, read as operands of tensor ops: a softmax temperature (float), a
    step (int), an exponent, a bound; and in bfloat16, where the number must not widen the result."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.temperature, self.step, self.exponent, self.bound = 0.5, 3, 2.0, 1.5

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = (self.linear(x) / self.temperature).softmax(-1) * self.step
        y = y.abs() ** self.exponent + y.clamp(max=self.bound)
        return y, x.bfloat16() * self.temperature


class DecidesOnANumber(nn.Module):
    """Numbers used in Python: a condition and a size. They stay baked into each program."""

    def __init__(self) -> None:
        super().__init__()
        self.threshold, self.width = 0.5, 3

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x) if self.threshold > 0 else x.tanh()
        return y[:, : self.width] * self.threshold


def _check_numbers_set_between_calls(device: str) -> None:
    """Numbers assigned between calls become inputs of one program (each call computes what eager does);
    a number used in Python is traced per value; another type (an int for a float) is another program."""
    torch.manual_seed(0)
    target = "cuda" if device == "cuda" else "emulator"
    model, x = Annealed().to(device), torch.randn(4, 8, device=device)
    compiled = pygraph.export_and_compile(model, (x,), target=target)
    values = [
        (0.5, 3, 2.0, 1.5),
        (0.7, 3, 2.0, 1.5),
        (0.9, 4, 3.0, 0.2),
        (2.5, -1, 0.5, 9.0),
        (0.1, 7, 2.0, 1.5),
    ]
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for model.temperature, model.step, model.exponent, model.bound in values:
            for _ in range(2):
                x = torch.randn(4, 8, device=device)
                for got, want in zip(compiled(x), model(x), strict=True):
                    assert got.dtype == want.dtype
                    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        assert len(compiled._ways) == 3  # the traced one; temperature; all four
        model.step = 2.0  # (a float where an int was: another program)
        assert relative_error(compiled(x)[0], model(x)[0]) <= 1e-6
        assert len(compiled._ways) == 4
    said = [str(w.message) for w in caught if "inputs of the program" in str(w.message)]
    assert len(said) == 3 and "`bound`, `exponent`, `step`, `temperature` as inputs" in said[1]

    model, x = DecidesOnANumber().to(device), torch.randn(4, 8, device=device)
    compiled = pygraph.export_and_compile(model, (x,), target=target)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for model.threshold, model.width in [(0.5, 3), (-1.0, 3), (0.5, 5)]:
            assert relative_error(compiled(x), model(x)) <= 1e-6
    assert len(compiled._ways) == 3
    assert not any("inputs of the program" in str(w.message) for w in caught)


def test_numbers_set_between_calls_are_inputs_of_one_program():
    _check_numbers_set_between_calls("cpu")


class ReadsContainers(nn.Module):
    """Reads a list, a dict and a SimpleNamespace, which change without an assignment to the module."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.gains, self.shifts, self.options = [1.0, 2.0], {"shift": 0.5}, types.SimpleNamespace(scale=2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        for i, gain in enumerate(self.gains):
            y = y + gain * i
        return y * self.options.scale + self.shifts["shift"]


def _check_changed_in_place(device: str) -> None:
    """Containers changed in place and a SimpleNamespace's attribute assigned after compiling: each call
    computes what eager does, with one program per set of values."""
    torch.manual_seed(0)
    model, x = ReadsContainers().to(device), torch.randn(2, 4, device=device)
    compiled = pygraph.export_and_compile(model, (x,), target="cuda" if device == "cuda" else "emulator")
    assert {read.path for read in compiled._reads_per_call} == {"gains", "shifts", "options.scale"}
    if device == "cuda":  # (reads checked every call keep the native replay: `python_state.per_call_check`)
        with torch.no_grad():
            compiled(x), compiled(x)
        assert compiled._replay is compiled._backend.native is not None
    steps = [
        lambda: model.gains.append(3.0),
        lambda: model.shifts.update(shift=-1.0),
        lambda: setattr(model.options, "scale", 3.0),
        lambda: model.gains.__setitem__(0, 1),  # (an int where a float was: Python code may tell them apart)
        lambda: None,
    ]
    caught = _calls_after_each(steps, compiled, model, device)
    assert len(compiled._ways) == 5
    messages = [m for m in caught if "Python attribute" in m]
    assert len(messages) == 4 and "`gains` ([1.0, 2.0])" in messages[0]
    assert "this call finds [1, 2.0, 3.0]" in messages[3]


def test_containers_changed_in_place_and_unwatchable_objects_are_checked_every_call():
    _check_changed_in_place("cpu")


class _StandInReplay:
    """Stands in for the CUDA backend's native replay: records the calls that reach it, returns `result`."""

    def __init__(self, result: torch.Tensor) -> None:
        self.result, self.taken = result, []

    def __call__(self, flat: tuple[torch.Tensor, ...]) -> torch.Tensor:
        self.taken.append(flat)
        return self.result

    def set_watch(self, watched: tuple[Any, ...]) -> None:
        pass


def _replays_taken(compiled: Any, x: torch.Tensor) -> list[Any]:
    """The calls that reach a stand-in for the native replay, from now on."""
    with torch.no_grad():
        replay = _StandInReplay(compiled(x))
    compiled._backend.native = compiled._replay = replay
    return replay.taken


def test_the_replay_is_asked_only_while_what_no_assignment_announces_holds():
    """Lists read every call and tensors held in containers keep calls on the replay while they hold;
    a list changed in place or a tensor replaced in a list sends the call to the Python path, which
    compiles or rebinds, and the call matches eager."""
    torch.manual_seed(0)
    model, x = ReadsContainers(), torch.randn(2, 4)
    compiled = pygraph.export_and_compile(model, (x,), target="emulator")
    taken = _replays_taken(compiled, x)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled(x)
        assert len(taken) == 1
        model.gains.append(3.0)
        assert relative_error(compiled(x), model(x)) <= 1e-6 and len(taken) == 1
    model, x = ReadsATuple(), torch.randn(3)
    compiled = pygraph.export_and_compile(model, (x,), target="emulator")
    taken = _replays_taken(compiled, x)
    with torch.no_grad():
        compiled(x)
        assert len(taken) == 1
        model.tables[0] = torch.randn(3)
        assert relative_error(compiled(x), model(x)) <= 1e-6 and len(taken) == 1


def test_the_per_call_check_reads_each_object_once_and_follows_reassignments():
    """Layers reading one config's list check it once; an element or an attribute holding another object
    is checked in full, so an equal value passes and one of another type does not; containers of
    containers are compared whole."""
    shared = [1.0, 2.0]
    first, second = types.SimpleNamespace(kinds=shared), types.SimpleNamespace(kinds=shared)
    reads = [
        AttributeRead(holder, f"{name}.kinds", "kinds", list(shared), per_call=True)
        for name, holder in (("first", first), ("second", second))
    ]
    check = per_call_check(reads)
    assert check is not None and check()
    shared.append(3.0)
    assert not check()
    shared.pop()
    shared[0] = 1  # (an equal int where a float was: Python code may tell them apart)
    assert not check()
    shared[0] = 0.5 + 0.5  # (another float object of the same value)
    assert check()
    second.kinds = [1.0, 2.0]
    assert check()
    second.kinds = [1, 2.0]
    assert not check()
    nested = types.SimpleNamespace(sizes={"rows": [2, 3]})
    check = per_call_check([AttributeRead(nested, "sizes", "sizes", {"rows": [2, 3]}, per_call=True)])
    assert check is not None and check()
    nested.sizes["rows"].append(4)
    assert not check()
    assert per_call_check([]) is None


def _check_changed_modules_and_hooks(device: str) -> None:
    """Hooks added and removed, on a module and globally, and modules replaced after compiling: each call
    computes what eager does."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4)).to(device).eval()
    compiled = pygraph.export_and_compile(
        model, (torch.randn(2, 4, device=device),), target="emulator" if device == "cpu" else "cuda"
    )
    handles = []
    steps = [
        lambda: handles.append(model[0].register_forward_hook(lambda module, args, out: out * 2)),
        lambda: handles.append(model.register_forward_pre_hook(lambda module, args: (args[0] + 1,))),
        lambda: handles.append(
            register_module_forward_hook(
                lambda module, args, out: out - 0.5 if isinstance(module, nn.ReLU) else None
            )
        ),
        lambda: handles.pop().remove(),
        lambda: handles.pop(0).remove(),
        lambda: model.__setitem__(
            1, nn.GELU().eval()
        ),  # (no parameters, in eval mode as the one it replaces)
        lambda: model.__setitem__(2, nn.Linear(8, 4).to(device).eval()),
        lambda: setattr(model[2], "bias", None),  # (a parameter set to None reaches no registration hook)
        lambda: model.__delitem__(1),  # (nor does deleting a module)
    ]
    changes = [m for m in _calls_after_each(steps, compiled, model, device) if "Sequential: " in m]
    assert len(changes) == len(steps) - 1  # (removing the global hook goes back to a program traced before)
    assert "the forward hooks of module `0` changed" in changes[0]
    assert "module `2` is another one" in changes[5]
    assert "the parameter `2.bias` the program reads is gone" in changes[6]
    assert "calls take more than PYGRAPH_MAX_VARIANTS" in changes[7]  # (then the model runs the call)


class Tied(nn.Module):
    """An embedding and an output projection sharing one weight, as GPT-2's do."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding, self.head = nn.Embedding(20, 8), nn.Linear(8, 20, bias=False)
        self.head.weight = self.embedding.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.embedding(ids)))


def test_weights_untied_after_compiling_are_read_apart():
    torch.manual_seed(0)
    model, ids = Tied(), torch.randint(0, 20, (3, 5))
    compiled = pygraph.export_and_compile(model, (ids,), target="emulator")
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert relative_error(compiled(ids), model(ids)) <= 1e-6
        model.head.weight = nn.Parameter(torch.randn(20, 8))
        assert relative_error(compiled(ids), model(ids)) <= 1e-6
    assert any("`embedding.weight`, `head.weight` shared one tensor" in str(w.message) for w in caught)


def test_hooks_and_modules_changed_after_compiling_are_followed():
    _check_changed_modules_and_hooks("cpu")


@pytest.mark.gpu
@needs_gpu
def test_gpu_python_state(no_tf32):
    _check_python_state(CountsItsCalls(), "cuda", programs=4)
    _check_python_state(RescalesOnce(), "cuda", programs=2)
    _check_python_state(CountsOnly(), "cuda", programs=1)
    _check_reassigned_options("cuda")
    _check_numbers_set_between_calls("cuda")
    _check_changed_in_place("cuda")
    _check_changed_modules_and_hooks("cuda")


class RelativeIndices(nn.Module):
    """ConViT's positional attention: a table of relative offsets built in forward from aranges, channel by
    channel into a zero tensor, kept in a tensor attribute and projected per head."""

    def __init__(self) -> None:
        super().__init__()
        self.project = nn.Linear(3, 4)
        self.table = torch.zeros(1, 1, 1, 3)

    def offsets(self, n: int) -> torch.Tensor:
        side = int(n**0.5)
        table = torch.zeros(1, n, n, 3)
        step = torch.arange(side).view(1, -1) - torch.arange(side).view(-1, 1)
        across = step.repeat(side, side)
        down = step.repeat_interleave(side, dim=0).repeat_interleave(side, dim=1)
        table[:, :, :, 2] = (across**2 + down**2).unsqueeze(0)
        table[:, :, :, 1] = down.unsqueeze(0)
        table[:, :, :, 0] = across.unsqueeze(0)
        return table.to(self.project.weight.device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.table.shape[1] != x.shape[1]:
            self.table = self.offsets(x.shape[1])
        scores = self.project(self.table.expand(x.shape[0], -1, -1, -1)).permute(0, 3, 1, 2).softmax(-1)
        return scores @ x.unsqueeze(1)


def _check_relative_indices(device: str) -> None:
    torch.manual_seed(0)
    model = RelativeIndices().to(device)
    target = "cuda" if device == "cuda" else "emulator"
    compiled = pygraph.export_and_compile(model, (torch.randn(2, 196, 8, device=device),), target=target)
    for _ in range(2):
        x = torch.randn(2, 196, 8, device=device)
        assert relative_error(compiled(x), model(x)) <= 1e-5


def test_a_table_built_channel_by_channel_in_forward_is_derived_state():
    _check_relative_indices("cpu")


@pytest.mark.gpu
@needs_gpu
def test_gpu_a_table_built_channel_by_channel_in_forward(no_tf32):
    _check_relative_indices("cuda")


class Detector(nn.Module):
    """Takes what detection and multimodal models take: a list of images, a dict of options holding a
    number and a tensor, an optional mask (None) and a mode string; returns a dict holding a list."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, images: list, options: dict, mask: torch.Tensor | None, mode: str) -> dict:
        features = [self.conv(image[None]).relu() for image in images]
        pooled = torch.cat([f.mean(dim=(2, 3)) for f in features]) * options["gain"] + options["bias"]
        if mask is not None:
            pooled = pooled * mask
        return {"boxes": pooled if mode == "sum" else -pooled, "maps": features}


def _check_structured_arguments(device: str) -> pygraph.CompiledModel:
    torch.manual_seed(0)
    model = Detector().to(device)
    target = "cuda" if device == "cuda" else "emulator"

    def arguments(gain: float = 1.5) -> tuple:
        images = [torch.randn(3, 8, 8, device=device) for _ in range(2)]
        return (images, {"gain": gain, "bias": torch.randn(4, device=device)}, None, "sum")

    compiled = pygraph.export_and_compile(model, arguments(), target=target)
    for gain in (1.5, 0.25, 3.0):  # new tensors every call; the number goes through the table
        args = arguments(gain)
        assert relative_error(compiled(*args), model(*args)) <= 1e-5
    first = compiled(*arguments())
    kept = {"boxes": first["boxes"].clone(), "maps": [m.clone() for m in first["maps"]]}
    compiled(*arguments())
    assert relative_error(first, kept) == 0  # outputs of earlier calls stay intact
    return compiled


def test_arguments_in_lists_and_dicts_with_none_and_strings():
    compiled = _check_structured_arguments("cpu")
    images, options = [torch.randn(3, 8, 8), torch.randn(3, 8, 8)], {"gain": 1.0, "bias": torch.randn(4)}
    with pytest.raises(
        TypeError, match=r"structured as \(\[value, value\], \{'gain': value, 'bias': value\}"
    ):
        compiled(images[:1], options, None, "sum")
    with pytest.raises(
        ValueError, match=r"argument 'mode' is 'max'; the model was traced and compiled with 'sum'"
    ):
        compiled(images, options, None, "max")
    with pytest.raises(ValueError, match=r"argument 'mask' is tensor.*compiled with None"):
        compiled(images, options, torch.ones(4), "sum")
    with pytest.raises(TypeError, match=r"input 'images_1' has dtype torch.float64"):
        compiled([images[0], images[1].double()], options, None, "sum")


@pytest.mark.gpu
@needs_gpu
def test_gpu_arguments_in_lists_and_dicts(no_tf32):
    _check_structured_arguments("cuda")


class ReturnsConstants(nn.Module):
    """Returns, beside tensors, what the trace fixes: None, a size and a string."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> tuple:
        return None, self.fc(x), x.shape[0], {"note": "done", "sum": x.sum(-1)}


def _check_constant_results(device: str) -> None:
    torch.manual_seed(0)
    model = ReturnsConstants().to(device)
    target = "cuda" if device == "cuda" else "emulator"
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 8, device=device),), target=target)
    for _ in range(3):  # on the GPU, the later calls through the native replay
        x = torch.randn(4, 8, device=device)
        got, want = compiled(x), model(x)
        assert got[0] is None and got[2] == 4 and got[3]["note"] == "done"
        assert relative_error(got, want) <= 1e-5


def test_results_that_the_trace_fixes_are_returned_as_eager_returns_them():
    _check_constant_results("cpu")


@pytest.mark.gpu
@needs_gpu
def test_gpu_results_that_the_trace_fixes(no_tf32):
    _check_constant_results("cuda")


class ReturnsNumbers(nn.Module):
    """Returns Python numbers read from its data (`.item()`), computed with in Python, and a dynamic size."""

    def forward(self, x: torch.Tensor) -> dict:
        i, top, positive = x.argmax().item(), x.max().item(), (x.sum() > 0).item()
        return {
            "y": x * 2,
            "i": i,
            "i % 5": i % 5,
            "f": top * 3 + 1,
            "b": positive,
            "again": positive,
            "rows": x.shape[0],
        }


class ComputesWithNumbers(nn.Module):
    """Returns Python numbers it was given and numbers computed from them alone (in Python, in eager)."""

    def forward(self, x: torch.Tensor, n: int, t: float, flag: bool) -> tuple:
        return x * t, n, t, flag, n * 2 - 1, n // 3, n > 2, t / 3, x.sum().item() + n


def _check_number_results(device: str) -> None:
    target = "cuda" if device == "cuda" else "emulator"
    x = torch.randn(6, 5, device=device)
    with_numbers = pygraph.export_and_compile(ComputesWithNumbers(), (x, 3, 0.1, True), target=target)
    for n, t, flag in [(3, 0.1, True), (7, 0.3, False), (-5, 1e-3, True)]:
        got, want = with_numbers(x, n, t, flag), ComputesWithNumbers()(x, n, t, flag)
        assert [type(v) for v in got] == [type(v) for v in want]
        assert got[1:8] == want[1:8]  # those given, and computed as Python computes them (floats in double)
        assert relative_error(got[0], want[0]) == 0.0
        assert got[8] == pytest.approx(want[8], rel=1e-6)  # (the sum as the program rounds it)
    rows = torch.export.Dim("rows", min=2, max=64)
    compiled = pygraph.export_and_compile(
        ReturnsNumbers(), (torch.randn(6, 5, device=device),), target=target, dynamic_shapes={"x": {0: rows}}
    )
    single = pygraph.export_and_compile(
        Fn(lambda x: (x > 0).all().item()), (torch.randn(6, 5, device=device),), target=target
    )
    for n, shift in [(6, 0.0), (6, 0.5), (9, -0.5), (6, 5.0)]:
        x = torch.randn(n, 5, device=device) + shift
        got, want = compiled(x), ReturnsNumbers()(x)
        assert {k: (type(v), v) for k, v in got.items() if k != "y"} == {
            k: (type(v), v) for k, v in want.items() if k != "y"
        }
        assert relative_error(got["y"], want["y"]) == 0.0
        if n == 6:
            assert single(x) is bool((x > 0).all())


def test_numbers_read_from_the_data_are_returned_as_python_numbers():
    _check_number_results("cpu")


@pytest.mark.gpu
@needs_gpu
def test_gpu_numbers_read_from_the_data_are_returned_as_python_numbers(no_tf32):
    _check_number_results("cuda")


class ReturnsAliases(nn.Module):
    """Returns what eager returns as aliases: its input, a view of it, the input it wrote in place, a
    parameter and a view of one, a result twice and a view of it, beside a computed result."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, written: torch.Tensor) -> tuple:
        y = self.fc(x)
        written.mul_(2)
        return x, x[1:].t(), written, self.fc.weight, self.fc.bias[None], y, y, y.view(-1), y.sum()


def _check_aliases(device: str) -> None:
    torch.manual_seed(0)
    model = ReturnsAliases().to(device)
    target = "cuda" if device == "cuda" else "emulator"

    def inputs() -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(4, 8, device=device), torch.randn(3, device=device)

    compiled = pygraph.export_and_compile(model, inputs(), target=target)
    for _ in range(3):  # on the GPU, the later calls through the native replay
        x, written = inputs()
        before = written.clone()
        got = compiled(x, written)
        assert relative_error(got, model(x, before.clone())) <= 1e-5
        assert torch.equal(written, before * 2)  # written in place, once
        assert got[0] is x and got[2] is written and got[3] is model.fc.weight
        assert got[1].data_ptr() == x[1:].data_ptr() and got[1].stride() == x[1:].t().stride()
        assert got[4].data_ptr() == model.fc.bias.data_ptr() and got[6] is got[5]
        assert got[7].data_ptr() == got[5].data_ptr() and got[8].data_ptr() != got[5].data_ptr()
    results = {item["name"]: item for item in compiled.explain().io if item["name"].startswith("result")}
    computed = [results.pop(name)["mechanism"] for name in ("result 5", "result 8")]  # the plan's outputs
    assert computed == [output.choice or output.io for output in compiled.plan.outputs]
    assert {name: item["mechanism"] for name, item in results.items()} == {
        "result 0": "the input 'x'",
        "result 1": "view of input 'x'",
        "result 2": "the input 'written'",
        "result 3": "the parameter 'fc.weight'",
        "result 4": "view of parameter 'fc.bias'",
        "result 6": "result 5",
        "result 7": "view of result 5",
    }
    identity = pygraph.export_and_compile(Fn(lambda x: x), (x,), target=target)
    assert identity(x) is x


def test_results_aliasing_inputs_state_or_each_other_are_views_as_in_eager():
    _check_aliases("cpu")


@pytest.mark.gpu
@needs_gpu
def test_gpu_results_aliasing_inputs_state_or_each_other(no_tf32):
    _check_aliases("cuda")


class StridesDecide(nn.Module):
    """What eager computes depends on the strides of its inputs: `flatten` is a view of a contiguous `x`,
    which the write after it reaches, and a copy of a transposed one, which it does not; `contiguous()`
    returns a contiguous `y` itself, else a copy."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        flat = x.flatten()
        x.mul_(0.5)
        return flat + 1, y.contiguous()


def _check_strides_deciding(device: str) -> None:
    """Calls with inputs the model writes or returns in other strides than the example's run a program
    traced from such inputs (compiled once, with a warning), so they compute and alias what eager does."""
    model, target = StridesDecide(), "cuda" if device == "cuda" else "emulator"

    def inputs(transposed: bool) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = torch.randn(4, 6, device=device), torch.randn(5, 3, device=device)
        return tuple(t.t().contiguous().t() if transposed else t for t in (x, y))

    compiled = pygraph.export_and_compile(model, inputs(False), target=target)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for transposed in (False, True, True, False, True):  # (on the GPU, the native replay's too)
            x, y = inputs(transposed)
            eager_x, eager_y = x.clone(), y.clone()  # (clones keep the strides)
            got, ref = compiled(x, y), model(eager_x, eager_y)
            assert relative_error(got, ref) <= 1e-6 and torch.equal(x, eager_x)
            assert got[1].is_contiguous() and (got[1] is y) == (ref[1] is eager_y) == (not transposed)
    again = [w for w in caught if "other strides than the example's" in str(w.message)]
    assert len(again) == 1 and "'x', 'y'" in str(again[0].message)


def test_inputs_written_or_returned_in_other_strides_compute_what_eager_does():
    _check_strides_deciding("cpu")


def _and_contiguous(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return z, z.contiguous()


def _contiguous_and_viewed(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return z.contiguous(), z[:, :2]


@pytest.mark.parametrize(
    "results",
    [_and_contiguous, _contiguous_and_viewed],
    ids=["z, z.contiguous()", "z.contiguous(), z[:, :2]"],
)
def test_results_aliasing_each_other_follow_the_inputs_strides(results: Callable[..., Any]) -> None:
    """Two results of a `z` computed in the input's strides: `z, z.contiguous()` is one tensor twice for a
    contiguous input, a copy beside it for a transposed one (fuzz seed 30647); `z.contiguous(), z[:, :2]`
    share memory for a contiguous input only (seed 48021); as in eager."""
    model = Fn(lambda y: results(y * 2))
    compiled = pygraph.export_and_compile(model, (torch.randn(5, 3),), target="emulator")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for transposed in (False, True, False):
            y = torch.randn(3, 5).t() if transposed else torch.randn(5, 3)
            got, ref = compiled(y), model(y)
            shared = [
                r[0].untyped_storage().data_ptr() == r[1].untyped_storage().data_ptr() for r in (got, ref)
            ]
            assert relative_error(got, ref) == 0 and shared == [not transposed] * 2
            assert (got[1] is got[0]) == (ref[1] is ref[0])


class RowChosenByData(nn.Module):
    """Returns a row of its buffer (after writing it) and one of its input, each at a place the data decide,
    and a view at a fixed place."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("state", torch.randn(4, 3))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        self.state.mul_(0.5).add_(x)
        return self.state[self.state.sum(-1).argmax().item() % 4], x[x.sum(-1).argmin().item() % 4], x[1:]


def test_views_at_places_the_data_decide_are_copies_and_compiling_says_so():
    """Eager's `state[i.item()]` views the buffer, so it changes with the buffer's next write; pygraph knows
    `i` only once the call has run and returns a copy (fuzz seed 50007 read an earlier call's result after
    the next call): right values, and a warning naming the results, not the view at a fixed place."""
    model = RowChosenByData()
    eager = copy.deepcopy(model)
    with pytest.warns(
        UserWarning, match=r"result 0 \(view of buffer 'state'\), result 1 \(view of input 'x'\)\."
    ):
        compiled = pygraph.export_and_compile(model, (torch.randn(4, 3),), target="emulator")
    for _ in range(3):
        x = torch.randn(4, 3)
        got, ref = compiled(x), eager(x)
        assert relative_error(got, ref) == 0
        assert got[2].untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


@pytest.mark.gpu
@needs_gpu
def test_gpu_inputs_written_or_returned_in_other_strides(no_tf32):
    _check_strides_deciding("cuda")


def test_a_result_reshaped_from_another_shares_its_memory_where_eager_s_does():
    """`r = x.exp()[0]` follows `x`'s strides in eager, so `r.reshape(-1)` is a view of `r` for a contiguous
    `x` and a copy for a transposed one: calls with other strides run a program traced from them."""

    class Reshaped(nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            row = x.exp()[0]
            return row.reshape(-1), row

    model = Reshaped()
    compiled = pygraph.export_and_compile(model, (torch.randn(3, 4, 5),), target="emulator")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the warning of the program compiled for the transposed call)
        for transposed in (False, True, False):
            x = torch.randn(3, 4, 5)
            x = x.transpose(0, -1).contiguous().transpose(0, -1) if transposed else x
            got, ref = compiled(x), model(x)
            assert relative_error(got, ref) <= 1e-6
            shared = got[0].data_ptr() == got[1].data_ptr()
            assert shared == (ref[0].data_ptr() == ref[1].data_ptr()) == (not transposed)


def _check_mode_switches(device: str) -> None:
    """A model compiled in eval mode, then switched with `.train()` and back with `.eval()`: each call
    computes what eager computes in the mode the model is in (batch statistics, updated running ones)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 4)).to(device).eval()
    twin = copy.deepcopy(model)
    target = "cuda" if device == "cuda" else "emulator"
    compiled = pygraph.export_and_compile(model, (torch.randn(16, 8, device=device),), target=target)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for mode in (False, True, True, False, True):
            model.train(mode)
            twin.train(mode)
            x = torch.randn(16, 8, device=device)
            assert relative_error(compiled(x), twin(x)) <= 1e-5
            assert torch.allclose(model[1].running_mean, twin[1].running_mean, atol=1e-6)
    compiled_again = [w for w in caught if "changed the mode of its modules" in str(w.message)]
    assert len(compiled_again) == 1 and len(compiled._ways) == 2


def test_a_model_switched_to_training_mode_after_compiling_computes_in_that_mode():
    _check_mode_switches("cpu")


@pytest.mark.gpu
@needs_gpu
def test_gpu_a_model_switched_to_training_mode_after_compiling(no_tf32):
    _check_mode_switches("cuda")


class CheckedPiece(nn.Module):
    """`.type(dtype)` of a value leaves a metadata check behind: a cat's piece (LongT5's position bias) and a
    matrix-vector kernel's row that only such a check reads besides are computed in that kernel."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        piece = (a + b).type(torch.float32)
        row = nn.functional.gelu(c[0, :1]).type(torch.float32)
        return torch.cat([piece, c[..., :3]], -1) + c, self.linear(row)


def test_values_only_a_metadata_check_reads_are_no_kernel_outputs():
    torch.manual_seed(0)
    model = CheckedPiece()

    def inputs() -> tuple[torch.Tensor, ...]:
        return torch.randn(1, 4, 5), torch.randn(4, 1, 5), torch.randn(4, 4, 8)

    compiled = pygraph.export_and_compile(model, inputs(), target="emulator")
    for _ in range(2):
        args = inputs()
        assert relative_error(compiled(*args), model(*args)) <= 1e-6


class RescalesItsWeight(nn.Module):
    """Writes its own parameter in place in every call."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.linear.weight.div_(2)
        return self.linear(x)


def test_a_write_to_a_parameter_is_made_in_every_call_as_eager_makes_it():
    torch.manual_seed(0)
    model = RescalesItsWeight()
    eager = copy.deepcopy(model)
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (torch.randn(2, 4),), target="emulator")
        for _ in range(3):
            x = torch.randn(2, 4)
            assert relative_error(compiled(x), eager(x)) <= 1e-6
    torch.testing.assert_close(model.linear.weight, eager.linear.weight, rtol=0, atol=0)


class RebindsItsBuffer(nn.Module):
    """Assigns a float32 tensor to a float16 buffer (Llama's long-rope frequencies in a half-precision model):
    eager rebinds the attribute to the new tensor; torch.export records a buffer mutation."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("scale", torch.ones(4, dtype=torch.float16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.scale = x.float().mean(0)
        return x * 2


def test_a_buffer_rebound_to_another_dtype_is_refused_by_node_and_line():
    with torch.no_grad(), pytest.raises(UnsupportedError) as error:
        pygraph.export_and_compile(
            RebindsItsBuffer(), (torch.randn(3, 4, dtype=torch.float16),), target="emulator"
        )
    message = str(error.value)
    assert "test_model_constructs.py:" in message and "'scale' (float16[4])" in message
    assert "float32[4] tensor" in message


class NormedHeads(nn.Module):
    """Gemma3's RMSNorm of query and key heads ends in `type_as(x)`, which returns its input itself; a
    one-operand `einsum` returns a view (here a permutation and a diagonal). As library calls their
    results aliased bytes that memory planning gave the next kernel."""

    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(16, 16)
        self.k = nn.Linear(16, 16)
        self.weight = nn.Parameter(torch.randn(4))

    def norm(self, x: torch.Tensor) -> torch.Tensor:
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        return (y * (1.0 + self.weight)).type_as(x)

    def forward(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q = self.norm(self.q(h).view(2, 5, 4, 4).transpose(1, 2))
        k = self.norm(self.k(h).view(2, 5, 4, 4).transpose(1, 2))
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k)
        return torch.einsum("bhqk->bqhk", scores * 2) + 1, torch.einsum("bhii->bhi", scores[..., :4, :4] + 1)


def test_ops_that_return_their_input_are_no_library_calls():
    torch.manual_seed(0)
    model = NormedHeads()
    compiled = pygraph.export_and_compile(model, (torch.randn(2, 5, 16),), target="emulator")
    assert "type_as" not in compiled.ir("plan") and "einsum" not in compiled.ir("plan")
    for _ in range(2):
        h = torch.randn(2, 5, 16)
        assert relative_error(compiled(h), model(h)) <= 1e-5


class IntegerPowers(nn.Module):
    """Integers to tensor powers: products over every bit of the exponent, wrapping as ATen's do."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        i = (x * 9).to(torch.int32)
        return 2**i + 1, i**i, (-3) ** (i % 5), (i * 7).to(torch.int64) ** 40, 2.5**i


def test_integers_to_tensor_powers_compute_eagers_values():
    model = IntegerPowers()
    compiled = pygraph.export_and_compile(model, (torch.rand(6, 8),), target="emulator")
    for _ in range(2):
        x = torch.rand(6, 8)
        got, want = compiled(x), model(x)
        for g, w in zip(got[:4], want[:4], strict=True):  # (the integers exactly, overflow wrapped alike)
            assert g.dtype == w.dtype and torch.equal(g, w)
        torch.testing.assert_close(got[4], want[4], rtol=1e-6, atol=0)


class BitCasts(nn.Module):
    """`view(dtype)` of an expanded and of a transposed tensor, read by kernels and returned: eager's alias
    their inputs (stride 0 for the expanded one), pygraph's compute fresh tensors of the same bits."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            x[:, None].expand(3, 4, 5).view(torch.int32) ^ 3,
            x.t().view(torch.int32),
            (x * 2).view(torch.int32),
        )


def test_bit_casts_of_views_compute_eagers_bits():
    model, x = BitCasts(), torch.randn(3, 5)
    compiled = pygraph.export_and_compile(model, (x,), target="emulator")
    for _ in range(2):
        x = torch.randn(3, 5)
        assert all(torch.equal(g, r) for g, r in zip(compiled(x), model(x), strict=True))


class Norms(nn.Module):
    """Vector norms of every order pygraph writes apart, over one dim, several, all, and a dim of one
    element (torch 2.11's own decomposition kept that dim)."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        norm = torch.linalg.vector_norm
        return (
            F.normalize(x, dim=-1),
            norm(x, 1, 0, keepdim=True),
            norm(x, math.inf, (0, 1)),
            norm(x, -math.inf, -1),
            norm(x, 0, -1),
            norm(x, 3),
            norm(x[:, :1], dim=-1),
        )


def _check_norms(device: str, dtype: torch.dtype) -> None:
    model, target = Norms(), "cuda" if device == "cuda" else "emulator"
    x = torch.randn(4, 6, device=device, dtype=dtype)
    compiled = pygraph.export_and_compile(model, (x,), target=target)
    assert not [n.op for seg in compiled.plan.segments for n in seg.nodes if n.kind == "library"]
    x[0, 0] = 0
    got, ref = compiled(x), model(x)
    assert [t.shape for t in got] == [t.shape for t in ref]
    assert relative_error(got, ref) <= (1e-6 if dtype == torch.float32 else 1e-2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_vector_norms_are_reductions(dtype):
    _check_norms("cpu", dtype)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_gpu_vector_norms_are_reductions(dtype, no_tf32):
    _check_norms("cuda", dtype)


class ScaledNorm(nn.Module):
    """A norm over a leading dim of one element, scaled by a number the caller changes (traced again with
    the number as an input) and permuted: torch 2.11's meta kept a dim of one element given negative."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (torch.linalg.vector_norm(torch.expm1(x), dim=-4) * self.scale).permute(2, 1, 0)


def _check_scaled_norm(device: str) -> None:
    model, x = ScaledNorm(), torch.randn(1, 3, 17, 4, device=device)
    compiled = pygraph.export_and_compile(model, (x,), target="cuda" if device == "cuda" else "emulator")
    for scale in (0.5, -1.5, 2.0):
        model.scale = scale
        x = torch.randn(1, 3, 17, 4, device=device)
        got, ref = compiled(x), model(x)
        assert got.shape == ref.shape and relative_error(got, ref) <= 1e-6


def test_norm_over_a_dim_of_one_element_scaled_by_an_attribute():
    _check_scaled_norm("cpu")


@pytest.mark.gpu
@needs_gpu
def test_gpu_norm_over_a_dim_of_one_element_scaled_by_an_attribute(no_tf32):
    _check_scaled_norm("cuda")


def test_diagonal_and_unfold_are_views():
    """Both returned a view of their input as library calls (the emulator refuses that now)."""
    model = Fn(
        lambda x: (
            x.diagonal(1, -2, -1) * 2,
            x.diagonal(-1, 0, 2) + 1,
            torch.diagonal(x[0]).exp(),
            x.unfold(2, 3, 2).sum(-1),
            x.transpose(0, 1).unfold(1, 2, 1) * 3,
        )
    )
    compiled = pygraph.export_and_compile(model, (torch.randn(3, 4, 5),), target="emulator")
    assert "aten.diagonal" not in compiled.ir("plan") and "aten.unfold" not in compiled.ir("plan")
    for _ in range(2):
        x = torch.randn(3, 4, 5)
        assert relative_error(compiled(x), model(x)) <= 1e-6


class OverlappingChunks(nn.Module):
    """Longformer's and LED's chunking: `as_strided` windows that overlap by half, from a projection and from
    a transposed view of it (no view of the standard kind expresses either)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)  # [batch, 16, 8]
        windows = h.as_strided((h.shape[0], 3, 8, 8), (128, 32, 8, 1))  # 3 windows of 8 rows, step 4
        columns = h.transpose(1, 2).as_strided((h.shape[0], 3, 8, 8), (128, 32, 1, 8), 0)
        return (windows * columns).sum(-1) + windows.mean(1, keepdim=True)[..., 0]


def test_as_strided_windows_stay_views():
    torch.manual_seed(0)
    model = OverlappingChunks()
    compiled = pygraph.export_and_compile(model, (torch.randn(2, 16, 8),), target="emulator")
    torch_ir = compiled.ir("torch")
    assert torch_ir.count("torch.aten.as_strided ") == 2 and "torch.aten.index.Tensor" not in torch_ir
    for _ in range(2):
        x = torch.randn(2, 16, 8)
        assert relative_error(compiled(x), model(x)) <= 1e-6


class WritesThroughAHolder(nn.Module):
    """A cache registered as a buffer that forward writes through another object holding the same tensor
    (transformers' StaticCache under `TorchExportableModuleWithStaticCache`), at a position given by a
    tensor. (Made on its device: `.to()` would replace the buffer but not the holder's tensor.)"""

    def __init__(self, device: str = "cpu") -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4, device=device)
        self.register_buffer("cache", torch.zeros(6, 4, device=device), persistent=False)
        self.holder = types.SimpleNamespace(cache=self.cache)

    def forward(self, x: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        self.holder.cache.index_copy_(0, position, self.proj(x))
        return self.holder.cache.sum(0) * self.cache[0]


def _check_writes_through_a_holder(device: str) -> None:
    torch.manual_seed(0)
    model = WritesThroughAHolder(device)
    reference = copy.deepcopy(model)
    reference.holder.cache = reference.cache  # (deepcopy copies the namespace's tensor apart)
    target = "cuda" if device == "cuda" else "emulator"
    position = torch.tensor([0], device=device)
    compiled = pygraph.export_and_compile(model, (torch.randn(1, 4, device=device), position), target=target)
    with torch.no_grad():
        for i in (0, 3, 5, 0):
            x, position = torch.randn(1, 4, device=device), torch.tensor([i], device=device)
            assert relative_error(compiled(x, position), reference(x, position)) <= 1e-6
            assert relative_error(model.cache, reference.cache) <= 1e-6 and model.holder.cache is model.cache
    assert not model.cache.requires_grad  # (tracing records the write on the real tensor)


def test_state_written_through_another_object_is_that_state():
    _check_writes_through_a_holder("cpu")


@pytest.mark.gpu
@needs_gpu
def test_gpu_state_written_through_another_object(no_tf32):
    _check_writes_through_a_holder("cuda")


class ReadsASliceThroughAHolder(WritesThroughAHolder):
    """Writes the buffer and reads a slice of it that another object holds: a program would read the slice
    as a constant apart from the buffer, before the write reaches it."""

    def __init__(self) -> None:
        super().__init__()
        self.holder.cache = self.cache[1:]

    def forward(self, x: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        self.cache.index_copy_(0, position, self.proj(x))
        return self.holder.cache.sum(0)


def test_a_slice_of_written_state_read_through_another_object_is_refused():
    model = ReadsASliceThroughAHolder()
    with (
        torch.no_grad(),
        pytest.raises(pygraph.frontend.ExportError, match="overlaps buffer cache in another"),
    ):
        pygraph.export_and_compile(model, (torch.randn(1, 4), torch.tensor([0])), target="emulator")


class DecodingStep(nn.Module):
    def __init__(self, step: nn.Module) -> None:
        super().__init__()
        self.step = step

    def forward(self, ids: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        return self.step(input_ids=ids, cache_position=position)


def _check_static_cache_decoding(device: str) -> None:
    """Llama decoding one token at a time into transformers' StaticCache (its export recipe): logits and
    the cache written in place match eager's at each position."""
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    def build() -> nn.Module:
        torch.manual_seed(0)
        config = transformers.LlamaConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=100, max_position_embeddings=16,
        )  # fmt: skip
        llama = transformers.LlamaForCausalLM(config).to(device)
        llama.generation_config.use_cache = True
        llama.generation_config.cache_implementation = "static"
        step = TorchExportableModuleWithStaticCache(llama, batch_size=1, max_cache_len=16)
        return DecodingStep(step).eval()

    model, reference = build(), build()
    target = "cuda" if device == "cuda" else "emulator"

    def token(i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randint(0, 100, (1, 1), device=device), torch.tensor([i], device=device)

    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, token(0), target=target)
        for i in range(5):
            ids, position = token(i)
            assert relative_error(compiled(ids, position), reference(ids, position)) <= 1e-5
        caches = [(a, b) for a, b in zip(model.buffers(), reference.buffers(), strict=True) if a.dim() == 4]
        assert caches and all(relative_error(a, b) <= 1e-5 and a[:, :, :5].abs().min() > 0 for a, b in caches)


def test_static_cache_decoding():
    _check_static_cache_decoding("cpu")


@pytest.mark.gpu
@needs_gpu
def test_gpu_static_cache_decoding(no_tf32):
    _check_static_cache_decoding("cuda")


class GaussianProcess(nn.Module):
    """A Gaussian process's marginal likelihood: a kernel matrix's Cholesky factor, solves, its inverse and
    log-determinant. linalg_cholesky, linalg_solve and linalg_inv each stay one ATen call (decomposed, their
    raise on a singular matrix would be an effect with a token export threads through the program)."""

    def forward(self, x: torch.Tensor, y: torch.Tensor, noise: torch.Tensor) -> tuple[torch.Tensor, ...]:
        k = torch.exp(-torch.cdist(x, x).pow(2)) + noise * torch.eye(x.shape[-2], device=x.device)
        alpha = torch.cholesky_solve(y, torch.linalg.cholesky(k))
        return (
            (y * alpha).sum((-2, -1)) + torch.linalg.slogdet(k)[1],
            torch.linalg.solve(k, y),
            torch.linalg.inv(k),
        )


def _check_linear_algebra(device: str) -> None:
    model = GaussianProcess()
    target = "cuda" if device == "cuda" else "emulator"

    def draw() -> tuple[torch.Tensor, ...]:
        return (
            torch.randn(2, 6, 3, device=device),
            torch.randn(2, 6, 2, device=device),
            torch.tensor(0.5, device=device),
        )

    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, draw(), target=target)
        for _ in range(2):
            inputs = draw()
            assert relative_error(compiled(*inputs), model(*inputs)) <= 1e-5
        x, y, _ = draw()
        singular = torch.tensor(-1.0, device=device)  # (kernel minus the identity: not positive definite)
        with pytest.raises(torch.linalg.LinAlgError):
            model(x * 0, y, singular)
        with pytest.raises(torch.linalg.LinAlgError):
            compiled(x * 0, y, singular)


def test_linear_algebra_raises_as_eager():
    _check_linear_algebra("cpu")


@pytest.mark.gpu
@needs_gpu
def test_gpu_linear_algebra_raises_as_eager(no_tf32, kernel_cache):
    _check_linear_algebra("cuda")


class ConvertedInForward(nn.Module):
    """A router converting its classifier in forward (SwitchTransformers, NLLB-MoE), to the dtype it has
    (a no-op) or, `to`, to another."""

    def __init__(self, to: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.classifier = nn.Linear(8, 4)
        self.to_dtype = to

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.classifier = self.classifier.to(self.to_dtype)
        return self.classifier(x.to(self.to_dtype)).softmax(-1)


def test_a_module_converted_in_forward_to_what_it_is():
    """Export failed swapping fake parameters for themselves (`_apply(): Couldn't swap Linear.weight`);
    the no-op conversion is skipped, and the compiled model follows later changes of the weights. A
    conversion to another dtype is refused with torch's error."""
    torch.manual_seed(0)
    model = ConvertedInForward().eval()
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (torch.randn(3, 8),), target="emulator")
        for _ in range(2):
            x = torch.randn(3, 8)
            assert relative_error(compiled(x), model(x)) <= 1e-6
            model.classifier.weight.mul_(-2)
        with pytest.raises(pygraph.frontend.ExportError, match="Couldn't swap"):
            pygraph.export_and_compile(ConvertedInForward(torch.float64), (torch.randn(3, 8),))
