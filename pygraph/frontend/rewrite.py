"""Helpers for rewrites of an exported program's graph (pooling.py, channels_last.py)."""

from __future__ import annotations

import torch
from torch.export.graph_signature import TensorArgument
from torch.fx.passes.fake_tensor_prop import FakeTensorProp


def replace_node(ep: torch.export.ExportedProgram, old: torch.fx.Node, new: torch.fx.Node) -> None:
    """`new` takes `old`'s place, as an operand and as an output of the program (the signature names
    outputs by node), and `old` goes."""
    old.replace_all_uses_with(new)
    for spec in ep.graph_signature.output_specs:
        if isinstance(spec.arg, TensorArgument) and spec.arg.name == old.name:
            spec.arg = TensorArgument(name=new.name)
    ep.graph.erase_node(old)


def propagate_fake_tensors(ep: torch.export.ExportedProgram) -> None:
    """Every node's `meta["val"]` recomputed under the program's fake mode, so that shapes, dtypes and
    the eager layouts the importer annotates follow ATen's rules for the rewritten graph."""
    ep.graph_module.recompile()
    placeholders = [n.meta["val"] for n in ep.graph.nodes if n.op == "placeholder"]
    mode = torch._guards.detect_fake_mode(placeholders)
    FakeTensorProp(ep.graph_module, mode).propagate_dont_convert_inputs(*placeholders)
