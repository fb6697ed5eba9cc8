"""Stage 1 against the contract (docs/architecture.md): arguments, mutations, layouts and locations."""

import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.export import Dim
from torch.utils import _pytree as pytree

from pygraph.frontend import UnsupportedError, export_program, import_program
from pygraph.ir import dialect
from pygraph.ir._mlir import ir
from pygraph.ir.context import make_context, print_module
from pygraph.ir.layout import Layout


def compile_ir(model, *inputs, dynamic_shapes=None):
    program = import_program(export_program(model, inputs, dynamic_shapes), make_context())
    program.module.operation.verify()
    return program, print_module(program.module)


def main_func(program):
    (func_op,) = program.module.body.operations
    return func_op


def argument_attrs(program):
    """(role, name, Layout, device) of each argument of @main."""
    result = []
    for attrs in main_func(program).attributes["arg_attrs"]:
        attrs = ir.DictAttr(attrs)
        result.append(
            (
                ir.StringAttr(attrs[dialect.ROLE]).value,
                ir.StringAttr(attrs[dialect.NAME]).value,
                Layout.from_attr(attrs[dialect.LAYOUT]),
                ir.StringAttr(attrs[dialect.DEVICE]).value,
            )
        )
    return result


def ops(program):
    return list(main_func(program).regions[0].blocks[0].operations)


def layouts_of(op):
    return [Layout.from_attr(a) for a in op.attributes[dialect.LAYOUTS]]


def op_named(program, node_name):
    """The op that computes FX node `node_name` (the importer emits its helpers first)."""
    found = [
        op for op in ops(program) if len(op.results) and str(op.location).startswith(f'loc("{node_name}"')
    ]
    return found[-1]


def assert_every_tensor_op_has_layouts(program):
    for op in ops(program):
        results = list(op.results)
        if results and all(str(r.type).startswith("!torch.vtensor") for r in results):
            assert dialect.LAYOUTS in op.attributes, op
            assert len(op.attributes[dialect.LAYOUTS]) == len(results), op


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def test_mlp():
    program, text = compile_ir(MLP(), torch.randn(4, 16))
    assert 'module attributes {pygraph.stage = "torch"}' in text
    assert "func.func @main(" in text and "private" not in text
    assert text.count("torch.aten.linear") == 2 and "torch.aten.relu" in text
    assert "torch.vtensor.literal" not in text and "dense_resource" not in text
    args = argument_attrs(program)
    assert [(role, name) for role, name, _, _ in args] == [
        ("input", "x"),
        ("parameter", "fc1.weight"),
        ("parameter", "fc1.bias"),
        ("parameter", "fc2.weight"),
        ("parameter", "fc2.bias"),
    ]
    assert args[0][2] == Layout((4, 16), (16, 1), 0, args[0][2].dtype) and args[0][2].dtype.name == "float32"
    assert args[1][2].shape == (32, 16) and all(device == "cpu" for *_, device in args)
    assert [(a.role, a.name, a.position) for a in program.arguments[:1]] == [("input", "x", 0)]
    assert program.input_names == ["x"]
    function_type = ir.FunctionType(ir.TypeAttr(main_func(program).attributes["function_type"]).value)
    assert len(function_type.inputs) == 5 and [str(t) for t in function_type.results] == [
        "!torch.vtensor<[4,8],f32>"
    ]
    assert_every_tensor_op_has_layouts(program)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        y = F.adaptive_avg_pool2d(torch.relu(self.bn(self.conv(x))), 1)
        return self.fc(y.flatten(1))


def test_cnn_with_eval_batch_norm():
    """Eval batch norm imports as pointwise ops in the convolution's shape (the table decomposes it)."""
    program, text = compile_ir(SmallCNN().eval(), torch.randn(2, 3, 8, 8))
    assert "torch.aten.conv2d" in text and "torch.operator" not in text
    names = [op.operation.name for op in ops(program)]
    assert "torch.aten.rsqrt" in names and "torch.aten.expand" in names
    (out,) = layouts_of(next(op for op in ops(program) if op.operation.name == "torch.aten.sub.Tensor"))
    assert out.shape == (2, 8, 8, 8) and out.strides == (512, 64, 8, 1)
    roles = {name: role for role, name, _, _ in argument_attrs(program)}
    assert roles["bn.running_mean"] == roles["bn.running_var"] == "buffer"
    assert roles["conv.weight"] == "parameter" and "bn.num_batches_tracked" not in roles
    assert_every_tensor_op_has_layouts(program)


class TransformerBlock(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (
            self.qkv(self.ln1(x)).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        )
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


def test_transformer_block():
    program, text = compile_ir(TransformerBlock().eval(), torch.randn(2, 8, 32))
    for name in ("layer_norm", "gelu", "scaled_dot_product_attention", "linear"):
        assert f"torch.aten.{name} " in text, name
    assert "torch.operator" not in text
    attention = next(
        op for op in ops(program) if op.operation.name == "torch.aten.scaled_dot_product_attention"
    )
    assert layouts_of(attention)[0].shape == (2, 4, 8, 8)
    # unbind becomes one select per piece (decompositions.py): each holds its view's layout
    q, k, v = (layouts_of(op)[0] for op in ops(program) if op.operation.name == "torch.aten.select.int")
    assert (q.offset, k.offset, v.offset) == (0, 32, 64) and q.strides == (768, 8, 96, 1)
    assert_every_tensor_op_has_layouts(program)


class BuffersAndConstants(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("position_ids", torch.arange(8).expand(2, -1), persistent=False)
        self.emb = nn.Embedding(8, 4)

    def forward(self, x):
        return (self.emb(self.position_ids) + x) * torch.tensor(3.0) * torch.tensor([True, False, True, True])


def test_non_persistent_buffer_and_lifted_constants():
    program, text = compile_ir(BuffersAndConstants(), torch.randn(2, 8, 4))
    args = {name: (role, layout) for role, name, layout, _ in argument_attrs(program)}
    assert args["position_ids"][0] == "buffer"
    assert args["position_ids"][1].strides == (0, 1)  # the expanded buffer keeps its layout
    (mask,) = (a for a in program.arguments if a.role == "constant")
    assert args[mask.name][0] == "constant" and args[mask.name][1].dtype.name == "bool"
    assert torch.equal(mask.value, torch.tensor([True, False, True, True]))
    # the 0-d tensor made in forward is folded (frontend/fold_constants.py): a number of its dtype
    assert re.search(r"torch\.prim\.NumToTensor\.Scalar %float3\.0+e00 .*-> !torch\.vtensor<\[\],f32>", text)
    assert "literal" not in text and "dense_resource" not in text and "convert_element_type" not in text


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x):
        self.count.add_(1)
        return x * self.count


def overwrites(program):
    """(what computes the value: an op's name or an argument's, target's name) of each pygraph.overwrite."""
    names = [name for _, name, _, _ in argument_attrs(program)]
    found = []
    for op in ops(program):
        if op.operation.name == "pygraph.overwrite":
            value, target = op.operands
            source = value.owner.name if isinstance(value, ir.OpResult) else names[value.arg_number]
            found.append((source, names[target.arg_number]))
    return found


def test_buffer_mutation_becomes_overwrite():
    program, text = compile_ir(Counter(), torch.randn(3))
    assert overwrites(program) == [("torch.aten.add.Scalar", "count")]
    assert "!torch.tensor" not in text and "torch.overwrite.tensor.contents" not in text
    # the multiplication reads the updated count, not the argument
    mul = next(op for op in ops(program) if op.operation.name == "torch.aten.mul.Tensor")
    assert mul.operands[1].owner.operation.name == "torch.aten.add.Scalar"


class SetState(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("state", torch.zeros(3))

    def forward(self, x):
        self.state.copy_(x)
        return x + 1


def test_buffer_set_to_an_input():
    # the new value is the input itself: no op produces it, the overwrite comes first
    program, _ = compile_ir(SetState(), torch.randn(3))
    assert overwrites(program) == [("x", "state")]
    assert ops(program)[0].operation.name == "pygraph.overwrite"


def test_train_mode_batch_norm_updates_running_statistics():
    program, text = compile_ir(nn.BatchNorm2d(3).train(), torch.randn(2, 3, 4, 4))
    targets = sorted(target for _, target in overwrites(program))
    assert targets == ["num_batches_tracked", "running_mean", "running_var"]
    assert "torch.operator" not in text  # training batch norm is decomposed


class InPlaceInput(nn.Module):
    def forward(self, x):
        x.add_(1)
        return x * 2


def test_input_mutation_is_value_semantics():
    program, text = compile_ir(InPlaceInput(), torch.randn(4))
    assert "!torch.tensor" not in text and "torch.copy.to_vtensor" not in text
    assert "torch.overwrite.tensor.contents" not in text
    assert overwrites(program) == [("torch.aten.add.Scalar", "x")]
    assert argument_attrs(program)[0][:2] == ("input", "x")


class KVCache(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(8, 4))

    def forward(self, x, index):
        self.cache.index_copy_(0, index, x)
        return self.cache.sum(0)


def test_index_copy_into_buffer_is_functionalized():
    program, text = compile_ir(KVCache(), torch.randn(2, 4), torch.tensor([1, 5]))
    assert "torch.operator" not in text and "index_copy" not in text
    assert overwrites(program) == [("torch.aten.index_put", "cache")]


class TiedWeights(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        return self.head(self.emb(ids))


def test_tied_weights_are_one_argument():
    program, _ = compile_ir(TiedWeights(), torch.tensor([[1, 2, 3]]))
    (_, (role, name, _, _)) = argument_attrs(program)
    assert role == "parameter" and name in ("emb.weight", "head.weight")
    linear = next(op for op in ops(program) if op.operation.name == "torch.aten.linear")
    assert linear.operands[1] == main_func(program).regions[0].blocks[0].arguments[1]


class Add(nn.Module):
    def forward(self, x, y):
        return x + y


def test_non_contiguous_input_keeps_its_strides():
    program, _ = compile_ir(Add(), torch.randn(3, 5).t(), torch.randn(5, 3))
    (_, _, x, _), (_, _, y, _) = argument_attrs(program)
    assert (x.shape, x.strides, y.strides) == ((5, 3), (1, 5), (3, 1))


def test_dynamic_batch_imports_with_specialized_layouts():
    batch = Dim("batch", min=1, max=64)
    program, text = compile_ir(MLP(), torch.randn(4, 16), dynamic_shapes={"x": {0: batch}})
    assert "!torch.vtensor<[?,16],f32>" in text and "torch.symbolic_int" in text
    assert argument_attrs(program)[0][2].shape == (4, 16)
    assert layouts_of(op_named(program, "linear_1"))[0] == Layout(
        (4, 8), (8, 1), 0, layouts_of(op_named(program, "linear_1"))[0].dtype
    )
    assert_every_tensor_op_has_layouts(program)


class Views(nn.Module):
    def forward(self, x):
        return x.t() + 1, x.t(), x[1:, 2:]


def test_op_layouts_are_eagers():
    x = torch.randn(4, 6)
    program, _ = compile_ir(Views(), x)
    eager = Views()(x)
    add, t, sliced = (layouts_of(op_named(program, name))[0] for name in ("add", "t", "slice_2"))
    assert add.strides == eager[0].stride() == (1, 6)  # eager keeps the transposed order
    assert (t.shape, t.strides) == (eager[1].shape, eager[1].stride())
    assert (sliced.strides, sliced.offset) == (eager[2].stride(), eager[2].storage_offset()) == ((6, 1), 8)


class Structured(nn.Module):
    def forward(self, x):
        return {"double": x * 2, "pair": (x + 1, x - 1)}


def test_output_structure_and_locations():
    program, _ = compile_ir(Structured(), torch.randn(3))
    rebuilt = pytree.tree_unflatten(["a", "b", "c"], program.out_spec)
    assert rebuilt == {"double": "a", "pair": ("b", "c")}
    assert re.fullmatch(
        r'loc\("mul"\("[^"]*test_import_program.py":\d+:0\)\)', str(op_named(program, "mul").location)
    )
    assert str(ops(program)[-1].location) == 'loc("output")'
    assert str(main_func(program).regions[0].blocks[0].arguments[0].location) == 'loc("x")'


class FirstUse(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3))
        self.register_buffer("b", torch.ones(3))

    def forward(self, x, y):
        return (x * torch.tensor([2.0, 2.0, 2.0]) + self.b) * self.w + y  # (a 0-d one would be folded)


def test_argument_order_is_inputs_then_first_use():
    program, _ = compile_ir(FirstUse(), torch.randn(3), torch.randn(3))
    roles = [role for role, *_ in argument_attrs(program)]
    assert roles == ["input", "input", "constant", "buffer", "parameter"]
    assert [a.position for a in program.arguments] == [0, 1, None, None, None]


class Branch(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x + 1, lambda x: x - 1, (x,))


def test_higher_order_operator_is_named_with_its_source_line():
    ep = export_program(Branch(), (torch.randn(3),))
    with pytest.raises(
        UnsupportedError, match=r"node 'cond' \(.*test_import_program.py:\d+\).*higher-order operator cond"
    ):
        import_program(ep, make_context())


class ReturnsSize(nn.Module):
    def forward(self, x):
        return x + 1, x.shape[0]


class ReturnsItem(nn.Module):
    def forward(self, x):
        return x + 1, x.sum().item()


def test_constant_outputs_leave_the_program_and_numbers_of_the_data_are_0_d_results():
    imported = import_program(export_program(ReturnsSize(), (torch.randn(3),)), make_context())
    assert [(r.position, r.constant, r.source) for r in imported.regenerated] == [(1, 3, None)]
    assert "-> !torch.vtensor<[3],f32>" in str(imported.module)  # the tensor only
    imported = import_program(export_program(ReturnsItem(), (torch.randn(3),)), make_context())
    assert imported.numbers == (1,)  # (the call returns its `.item()`)
    assert "!torch.vtensor<[],f32>" in str(imported.module).split("return")[-1]  # (the sum itself)
