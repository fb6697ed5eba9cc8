"""Small Hugging Face models import through pygraph's hooks (torch-mlir's frozen importer fails on BERT)."""

import re

import pytest
import torch
from torch import nn

from pygraph.frontend import export_program, import_program
from pygraph.ir.context import make_context, print_module

transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed (pip install transformers)"
)


class Logits(nn.Module):
    """Returns the first output as a tensor, as the benchmark wraps every Hugging Face model."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids, return_dict=False)[0]


def import_text(model):
    ids = torch.randint(0, 100, (2, 8))
    program = import_program(export_program(Logits(model.eval()), (ids,)), make_context())
    program.module.operation.verify()
    text = print_module(program.module)
    tensor_ops = [line for line in text.splitlines() if re.search(r"= torch\..* -> \(?!torch\.vtensor", line)]
    assert tensor_ops and not [line for line in tensor_ops if "pygraph.layouts" not in line]
    return program, text


def test_bert_with_non_persistent_buffers():
    config = transformers.BertConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, vocab_size=100
    )
    program, text = import_text(transformers.BertModel(config))
    roles = {a.name: a.role for a in program.arguments}
    assert roles["model.embeddings.position_ids"] == "buffer"  # persistent=False: in ep.constants
    assert "dense_resource" not in text and "torch.vtensor.literal" not in text
    assert "torch.aten.scaled_dot_product_attention" in text and "torch.operator" not in text


def test_gpt2():
    config = transformers.GPT2Config(
        n_embd=32, n_layer=2, n_head=2, vocab_size=100, n_positions=64, use_cache=False
    )
    program, text = import_text(transformers.GPT2LMHeadModel(config))
    assert "dense_resource" not in text and "torch.vtensor.literal" not in text
    assert [str(t) for t in program.module.body.operations[0].type.results] == [
        "!torch.vtensor<[2,8,100],f32>"
    ]
    assert sum(a.role == "parameter" for a in program.arguments) > 20
