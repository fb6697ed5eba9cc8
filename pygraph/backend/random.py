"""Each call's seed and offset for the plan's random kernels (the `rng` arguments), from torch's generator.

On a GPU, the CUDA default generator is Philox, like the kernels: the call uses its seed and current
offset and advances the offset past the numbers it draws (in steps of 4, as ATen does), so the next
call, and eager random ops after it, never reuse them. On the CPU (the emulator) the default generator
is a Mersenne twister: each call draws a fresh 64-bit seed from it, which advances it, at offset 0.
Either way, `torch.manual_seed(s)` makes the following calls draw the same numbers again.
"""

from __future__ import annotations

import torch

from ..ir.plan import Plan
from .aten_call import resolve


def seed_and_offset(device: torch.device, numbers: int) -> tuple[int, int]:
    if device.type == "cuda":
        generator = torch.cuda.default_generators[device.index or 0]
        offset = generator.get_offset()
        generator.set_offset(offset + -(-numbers // 4) * 4)
        return generator.initial_seed(), offset
    return int(torch.randint(-(2**63), 2**63 - 1, (), dtype=torch.int64)), 0


def draws_random_numbers(plan: Plan) -> bool:
    """Whether a call of `plan` advances a generator: random kernels (`rng` arguments), or an ATen call of
    a seeded op (`torch.Tag.nondeterministic_seeded`: `randperm`, `multinomial`, ...)."""
    return any(a.role == "rng" for a in plan.arguments) or any(
        node.op and torch.Tag.nondeterministic_seeded in resolve(node.op).tags
        for step in plan.steps
        for node in step.nodes
    )


def generator_states(device: torch.device) -> list[tuple[torch.Generator, torch.Tensor]]:
    """The states of the generators a call on `device` may draw from (the CPU's, and the GPU's), for
    `restore_generators`: a call that runs again another way draws its numbers once."""
    generators = [torch.default_generator]
    if device.type == "cuda":
        generators.append(torch.cuda.default_generators[device.index or 0])
    return [(g, g.get_state()) for g in generators]


def restore_generators(states: list[tuple[torch.Generator, torch.Tensor]]) -> None:
    for generator, state in states:
        generator.set_state(state)
