"""export_program: inputs checked before tracing, failures wrapped, the decomposition table applied."""

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import pygraph
from pygraph.frontend import ExportError, export_program, import_program
from pygraph.frontend.decompositions import EXPLICIT, TABLE
from pygraph.frontend.export import _innermost_user_frame
from pygraph.frontend.rewrite import propagate_fake_tensors
from pygraph.ir.context import make_context, print_module

aten = torch.ops.aten


class Scaled(nn.Module):
    def forward(self, x, scale):
        return x * scale


def test_non_tensor_input_is_named():
    with pytest.raises(
        TypeError, match=r"argument 'scale' of Scaled.forward is complex; pygraph takes tensors"
    ):
        export_program(Scaled(), (torch.randn(3), 2j))


def test_python_numbers_become_0d_tensors_holding_them_exactly():
    program = export_program(Scaled(), (torch.randn(3), 2.0))
    scale = [n for n in program.graph.nodes if n.op == "placeholder"][1].meta["val"]
    assert scale.shape == () and scale.dtype == torch.float64 and scale.device.type == "cpu"


def test_example_inputs_must_be_a_tuple():
    with pytest.raises(TypeError, match="must be a tuple"):
        export_program(Scaled(), [torch.randn(3), torch.randn(3)])


class Fails(nn.Module):
    def forward(self, x):
        raise ValueError("the model refuses")


class FailsInsideTorch(nn.Module):
    def forward(self, x):
        y = x + 1
        return y.view(7)  # line FAILS


def test_export_failure_is_wrapped():
    with pytest.raises(ExportError, match=r"torch\.export failed for Fails") as info:
        export_program(Fails(), (torch.randn(3),))
    assert info.value.__cause__ is not None and str(info.value.__cause__).splitlines()[0] in str(info.value)


def test_a_failure_inside_torch_names_the_model_s_line():
    with pytest.raises(ExportError) as info:
        export_program(FailsInsideTorch(), (torch.randn(3, 2),))
    line = next(
        i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1) if "# line FAILS" in text
    )
    assert f"for FailsInsideTorch at {__file__}:{line} (`return y.view(7)  # line FAILS`)" in str(info.value)
    assert "shape '[7]' is invalid for input of size 6" in str(info.value)


class DataDependent(nn.Module):
    def forward(self, x):
        return x * 2 if x.sum() > 0 else x


def test_a_branch_on_the_data_is_traced_the_way_the_example_takes_with_a_check_naming_its_line():
    with pytest.warns(
        UserWarning, match=r"DataDependent decides in Python from values of its data at"
    ) as caught:
        program = export_program(DataDependent(), (torch.rand(3),))
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert "test_export_program.py:" in str(caught[0].message) and "`return x * 2 if" in str(
        caught[0].message
    )
    targets = [node.target for node in program.graph.nodes if node.op == "call_function"]
    assert aten.mul.Tensor in targets and torch.sym_ite not in targets  # the way taken; importable
    checks = [node for node in program.graph.nodes if node.target == aten._assert_scalar.default]
    assert checks and all("test_export_program.py:" in node.args[1] for node in checks)
    assert "torch.aten._assert_scalar" in print_module(import_program(program, make_context()).module)


def test_table_keeps_high_level_ops():
    kept = [
        aten.linear.default,
        aten.conv2d.default,
        aten.convolution.default,
        aten.layer_norm.default,
        aten.gelu.default,
        aten.silu.default,
        aten.hardswish.default,
        aten.softmax.int,
        aten._softmax.default,
        aten.scaled_dot_product_attention.default,
        aten.embedding.default,
        aten.addmm.default,
        aten.matmul.default,
        aten.group_norm.default,
    ]
    assert not [op for op in kept if op in TABLE]
    assert aten.diff.default in TABLE and aten.multiply.Tensor in TABLE and aten.index_copy.default in TABLE
    assert all(op in TABLE for op in EXPLICIT)
    # Eval batch norm would import as an opaque torch.operator: it becomes pointwise ops (fusible).
    assert aten._native_batch_norm_legit_no_training.default in TABLE


class InPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(4, 3))

    def forward(self, x, index):
        self.cache.index_copy_(0, index, x)
        x.mul_(2)
        return self.cache + 1


def test_in_place_ops_are_functionalized():
    ep = export_program(InPlace(), (torch.randn(2, 3), torch.tensor([0, 2])))
    targets = {str(node.target) for node in ep.graph.nodes if node.op == "call_function"}
    assert not [t for t in targets if t.split(".")[1].endswith("_")], targets  # no in-place op is left
    assert "aten.index_put.default" in targets
    mutations = {spec.kind.name: spec.target for spec in ep.graph_signature.output_specs if spec.target}
    assert mutations == {"BUFFER_MUTATION": "cache", "USER_INPUT_MUTATION": "x"}


class UsesDecomposedOps(nn.Module):
    def forward(self, x, i, b):
        return (
            torch.diff(x, dim=0),
            torch.multiply(x, 2) + torch.greater(x, 0) + torch.concat([x, x])[:4],
            x.index_copy(0, i, x[:2]) + x.index_add(0, i, x[:2]) + x.index_fill(1, i, 2.0),
            torch.take(x, i),
            torch.rsub(x, x[0]) + torch.sinc(x) + torch.addr(x, x[:, 0], x[0]),
            torch.nansum(x) + torch.std_mean(x, dim=0)[0],
            F.normalize(x, dim=-1) + torch.linalg.vector_norm(x[:, :1], dim=-1)[:, None],
            F.batch_norm(b, None, None, training=True),
            b[:1, :, :1].squeeze((0, 2)),
        )


def test_decomposed_ops_import_as_named_torch_ops():
    ep = export_program(UsesDecomposedOps(), (torch.randn(4, 4), torch.tensor([0, 2]), torch.randn(2, 3, 4)))
    text = print_module(import_program(ep, make_context()).module)
    assert "torch.operator" not in text
    decomposed = [
        "diff",
        "multiply",
        "greater",
        "concat",
        "index_copy",
        "index_add",
        "index_fill",
        "take",
        "linalg_vector_norm",
    ]
    assert not [name for name in decomposed if f"torch.aten.{name}" in text]
    assert "torch.aten.index_put" in text and "torch.aten.squeeze.dim " in text


class WritesByMask(nn.Module):
    """Wav2Vec2 zeroes padded positions with `h[~mask] = 0`; a learned row fills masked time steps."""

    def __init__(self):
        super().__init__()
        self.row = nn.Parameter(torch.randn(3))

    def forward(self, h, mask, index):
        a = h * 2
        a[~mask.bool()] = 0
        b = h + 1
        b[mask.bool()] = self.row
        c = h.clone()
        c.index_put_((mask.to(torch.uint8),), torch.tensor(0.5), accumulate=True)
        d = h.clone()
        d[index] = 7.0  # integer indices: stays index_put
        return a, b, c, d


def test_a_write_by_a_boolean_mask_becomes_where():
    """ATen's index_put finds a mask's elements with nonzero, a synchronisation no CUDA graph can hold."""
    model = WritesByMask()
    inputs = (torch.randn(2, 5, 3), torch.randint(0, 2, (2, 5)), torch.tensor([1, 0]))
    targets = [str(n.target) for n in export_program(model, inputs).graph.nodes if n.op == "call_function"]
    assert targets.count("aten.where.self") == 3 and targets.count("aten.index_put.default") == 1
    compiled = pygraph.export_and_compile(model, inputs, target="emulator")
    for _ in range(2):
        args = (torch.randn(2, 5, 3), torch.randint(0, 2, (2, 5)), torch.tensor([0, 1]))
        for got, want in zip(compiled(*args), model(*args), strict=True):
            torch.testing.assert_close(got, want, rtol=0, atol=0)


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, bidirectional=True)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return out, h, c


def test_lstm_final_states_keep_their_shape_when_torch_decomposes_them_wrongly(monkeypatch):
    """torch 2.11 traces a CUDA LSTM layer into a decomposition whose final states come out with an extra
    dim ([layers, 1, batch, hidden]); here the CPU takes that path (oneDNN off) with such a decomposition."""
    import torch._decomp.decompositions as torch_decompositions

    correct = torch_decompositions.one_layer_lstm

    def with_extra_dim(*args, **kwargs):
        out, (h, c) = correct(*args, **kwargs)
        return out, (h.unsqueeze(0), c.unsqueeze(0))

    monkeypatch.setattr(torch_decompositions, "one_layer_lstm", with_extra_dim)
    model = Recurrent().eval()
    with torch.no_grad(), torch.backends.mkldnn.flags(enabled=False):
        compiled = pygraph.export_and_compile(model, (torch.randn(5, 2, 8),), target="emulator")
        x = torch.randn(5, 2, 8)
        for got, want in zip(compiled(x), model(x), strict=True):
            assert got.shape == want.shape
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)


def test_the_branch_is_located_outside_torch_in_either_form_torch_quotes():
    caused_by = "Could not guard ...\nCaused by: (transformers/models/led/modeling_led.py:193 in forward)\n"
    internal = "Caused by: (_export/non_strict_utils.py:1205 in __torch_function__)\n"
    stack = (
        '  File "/site/torch/nn/modules/module.py", line 9, in f\n  File "/home/me/model.py", line 12, in g\n'
    )
    assert _innermost_user_frame(caused_by) == "transformers/models/led/modeling_led.py:193"
    assert _innermost_user_frame(internal + stack) == "/home/me/model.py:12"
    assert _innermost_user_frame(internal) == "a line torch does not name"


class RowsTheDataSize(nn.Module):
    """Positions interpolated to sizes read from the mask (a composite whose C++ kernel takes concrete sizes
    only), and a loop over the unique rows of `nonzero`'s result, whose count the trace checks (`u == 2`)."""

    def forward(self, positions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        grid = [
            F.pad(
                F.interpolate(positions, size=(h + 1, 4), mode="bilinear", align_corners=True),
                (0, 0, 0, 7 - h),
            )
            for h in mask.sum(1)
        ]
        valid = mask.nonzero()
        counts = torch.stack([(valid[:, 0] == row).sum() for row in valid[:, 0].unique()])
        return torch.cat(grid) * counts.sum()


def test_fake_tensors_propagate_through_sizes_the_data_decide():
    mask = (torch.arange(8) < torch.tensor([5, 3])[:, None]).long()
    with pytest.warns(UserWarning, match="decides in Python from values of its data"):
        program = export_program(RowsTheDataSize(), (torch.randn(1, 3, 4, 4), mask))
    symbolic = (torch.SymInt, torch.SymFloat, torch.SymBool)
    numbers = {n for n in program.graph.nodes if isinstance(n.meta.get("val"), symbolic)}
    assert any(n.target is torch.ops.aten.upsample_bilinear2d.vec for n in program.graph.nodes)
    propagate_fake_tensors(program)
    assert all(isinstance(n.meta["val"], symbolic) for n in numbers)  # (the checks keep what they compute)
