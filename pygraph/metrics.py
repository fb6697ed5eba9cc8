"""The error metric used everywhere (tests, benchmark, example): per output ||got - ref||_2 / ||ref||_2 in float64."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.utils._pytree as pytree


def relative_error(got: Any, ref: Any) -> float:
    """The worst per-output relative L2 error between two (nested) outputs of the same structure. NaN and
    infinities must sit where the reference has them (else the error is infinite); they are left out of
    the norms. A float is a 0-d value: its relative error, NaN and infinities where the reference's are.
    Other leaves (ints, bools, strings, None) must be equal and of the same type."""
    got_leaves, got_spec = pytree.tree_flatten(got)
    ref_leaves, ref_spec = pytree.tree_flatten(ref)
    if got_spec != ref_spec:
        raise ValueError(f"output structures differ: {got_spec} vs {ref_spec}")
    worst = 0.0
    for g, r in zip(got_leaves, ref_leaves, strict=True):
        if not isinstance(r, torch.Tensor):  # (a number: its type too, `True` is not `1`, nor `tensor(1)`)
            worst = max(worst, _leaf_error(g, r))
            continue
        if g.shape != r.shape or g.dtype != r.dtype:
            return float("inf")
        g64, r64 = g.detach().double().cpu(), r.detach().double().cpu()
        finite = r64.isfinite()
        same = (g64 == r64) | (g64.isnan() & r64.isnan())
        if not same[~finite].all() or not g64[finite].isfinite().all():
            return float("inf")
        g64, r64 = g64.where(finite, 0.0), r64.where(finite, 0.0)
        norm = r64.norm()
        diff = (g64 - r64).norm()
        worst = max(worst, float(diff / norm) if norm > 0 else float(diff))
    return worst


def _leaf_error(got: Any, ref: Any) -> float:
    if type(got) is not type(ref):
        return float("inf")
    if type(ref) is float and math.isfinite(ref):
        if not math.isfinite(got):
            return float("inf")
        return abs(got - ref) / abs(ref) if ref else abs(got)
    same = got == ref or (type(ref) is float and math.isnan(got) and math.isnan(ref))
    return 0.0 if same else float("inf")
