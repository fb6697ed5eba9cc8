"""Calls of new sizes along a dim whose prefixes every op keeps (`frontend/row_prefixes.py`) run the program
of a larger size: each input padded with copies of its first entries, each result cut back to its prefix.

A size `n` pads to the next power of two (within the range `dynamic_shapes` declared), or to the example's
size where that lies between them, so a workload of any number of sizes compiles a program per power of
two at most, and a call computes at most twice the entries it asked for. Padding copies a padded input
(one gather kernel); results are views of the padded call's, copied only where the cut leaves one that is
not dense (a dim cut inside the memory order), which eager's never are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree

from .backend.tensors import layout_of


def bucket(n: int, example: int, upper: int | None) -> int:
    """The size a call of `n` entries runs at: the example's where it lies between `n` and the next power
    of two, else that power, at most `upper`."""
    power = 1 << (n - 1).bit_length()
    if upper is not None:
        power = min(power, upper)
    return example if n <= example <= power else power


@dataclass
class PaddedCall:
    """How calls of one set of input shapes run padded: the inputs' dims to pad (flat input, dim, the
    entries a unit of the symbol spans there, the call's and the padded size of the symbol), each result
    leaf's dims to cut (leaf, dim, the call's and the padded size), and the program of the padded shapes."""

    pads: list[tuple[int, int, int, int, int]]
    cuts: list[tuple[int, int, int, int]]
    leaves: int  # the results' leaves, as the analysis counted the program's outputs
    program: Any = None
    _indices: dict[tuple[int, int, int, torch.device], torch.Tensor] = field(default_factory=dict)

    def padded(self, inputs: Sequence[Any]) -> dict[int, torch.Tensor]:
        """The padded inputs by flat index: each padded dim read at its entries, then at its first block
        (the entries one unit of the symbol spans: 2 in a dim declared `2 * s`) once per unit added."""
        padded: dict[int, torch.Tensor] = {}
        for i, dim, block, n, m in self.pads:
            x = padded.get(i, inputs[i])
            padded[i] = x.index_select(dim, self._index(block, n, m, x.device))
        return padded

    def _index(self, block: int, n: int, m: int, device: torch.device) -> torch.Tensor:
        key = (block, n, m, device)
        index = self._indices.get(key)
        if index is None:
            first = torch.arange(block).repeat(m - n)
            index = self._indices[key] = torch.cat([torch.arange(block * n), first]).to(device)
        return index

    def cut(self, results: Any) -> Any:
        """The padded call's results cut to the call's sizes, dense in their own memory order."""
        leaves, spec = pytree.tree_flatten(results)
        if len(leaves) != self.leaves:  # (the analysis and the program disagree: never cut blindly)
            raise AssertionError(f"a padded call returned {len(leaves)} results where {self.leaves} were cut")
        for leaf, dim, n, m in self.cuts:
            x = leaves[leaf]
            leaves[leaf] = x.narrow(dim, 0, x.shape[dim] // m * n)
        for leaf in {leaf for leaf, *_ in self.cuts}:
            leaves[leaf] = _dense(leaves[leaf])
        return pytree.tree_unflatten(leaves, spec)


def _dense(x: torch.Tensor) -> torch.Tensor:
    """`x`, or a copy of it that is dense in the same memory order (dims by decreasing stride). (A complex
    result is dense where its real pair is.)"""
    if layout_of(torch.view_as_real(x) if x.is_complex() else x).is_dense():
        return x
    order = sorted(range(x.dim()), key=lambda d: -x.stride(d))
    out = torch.empty_permuted(x.shape, order, dtype=x.dtype, device=x.device)
    return out.copy_(x)
