"""`freeze=True`: fold eval-mode batch norm into the convolution before it, at compile time.

`batch_norm(conv(x, W, b), gamma, beta, mean, var, training=False, eps)` equals `conv(x, W', b')` with
`scale = gamma / sqrt(var + eps)`, `W' = W * scale` per output channel and `b' = (b - mean) * scale + beta`.
The folded tensors are computed here, from the model's values now, and become lifted constants of the
exported program, so the importer makes them `constant` arguments that the runtime binds once like any
other constant: the batch norm costs nothing at run time, but the compiled model no longer follows
later changes of those parameters (which is why freezing is off by default).
"""

from __future__ import annotations

import operator

import torch
from torch.export.graph_signature import InputKind

from .rewrite import add_constant, state_value, written_placeholders

aten = torch.ops.aten
_CONVOLUTIONS = (aten.conv1d.default, aten.conv2d.default, aten.conv3d.default)
_STATE = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)


def fold_batch_norms(ep: torch.export.ExportedProgram) -> int:
    """Folds every eval batch norm whose input is a convolution used by nothing else, in place (the
    program as `torch.export.export` returns it, before decompositions); returns how many it folded."""
    graph = ep.graph
    specs = {spec.arg.name: spec for spec in ep.graph_signature.input_specs}
    written = written_placeholders(graph)  # by the model itself, in forward: those values change per call
    folded = 0
    for bn in list(graph.nodes):
        found = _batch_norm(bn)
        if found is None:
            continue
        conv, gamma, beta, mean, var, eps, results = found
        if conv.target not in _CONVOLUTIONS or len(conv.users) != 1:
            continue
        weight, bias = conv.args[1], conv.args[2] if len(conv.args) > 2 else None
        tensors = [weight, bias, gamma, beta, mean, var]
        if any(
            t is not None and (t.op != "placeholder" or specs[t.name].kind not in _STATE or t in written)
            for t in tensors
        ):
            continue
        w, b, g, bt, m, v = (None if t is None else state_value(ep, specs[t.name]) for t in tensors)
        with torch.no_grad():
            scale = torch.rsqrt(v + eps) * (1 if g is None else g)
            folded_weight = w * scale.view([-1] + [1] * (w.dim() - 1))
            folded_bias = ((0 if b is None else b) - m) * scale + (0 if bt is None else bt)
        new_weight = add_constant(ep, f"{conv.name}_frozen_weight", folded_weight)
        new_bias = add_constant(ep, f"{conv.name}_frozen_bias", folded_bias)
        conv.args = (conv.args[0], new_weight, new_bias, *conv.args[3:])
        for result in results:
            result.replace_all_uses_with(conv)
        folded += 1
    if folded:
        graph.eliminate_dead_code()
        ep.graph_module.recompile()
    return folded


def _batch_norm(node: torch.fx.Node) -> tuple | None:
    """(input, weight, bias, mean, var, eps, nodes holding its result) of an eval batch norm: export
    gives `batch_norm(..., training=False, ...)` or, in some torch versions, the getitem 0 of
    `_native_batch_norm_legit_no_training` (whose other results must be unused)."""
    if node.target is aten.batch_norm.default and not node.args[5]:
        x, weight, bias, mean, var, _, _, eps, _ = node.args
        return x, weight, bias, mean, var, eps, [node]
    if node.target is aten._native_batch_norm_legit_no_training.default:
        x, weight, bias, mean, var, _, eps = node.args
        users = list(node.users)
        if all(u.target is operator.getitem and u.args[1] == 0 for u in users):
            return x, weight, bias, mean, var, eps, users
    return None
