"""Time per call of a model whose caller sets a Python float attribute before each call (a temperature),
compiled once with the attribute as an input of the program (`python_state.attributes_as_inputs`), against
the same attribute left constant (the native replay), the number passed as an argument, and eager.

On the GPU machine: `python3 bench/probes/probe_attribute_numbers.py` (output:
bench/results/probe-attribute-numbers-*.log).
"""

import warnings
from collections.abc import Callable

import torch
from timing import queued_us
from torch import nn

import pygraph


class Tempered(nn.Module):
    """A small MLP whose logits are divided by `self.temperature`, or by the `temperature` argument."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(*(nn.Linear(256, 256) for _ in range(4)))
        self.temperature = 1.0

    def forward(self, x: torch.Tensor, temperature: float | None = None) -> torch.Tensor:
        t = self.temperature if temperature is None else temperature
        return (self.layers(x) / t).softmax(-1)


def per_call_us(call: Callable[[int], torch.Tensor]) -> float:
    """Per call of 2000 queued calls, after 50 untimed ones."""
    for i in range(50):
        call(i)
    return queued_us(call, 2000)


def main() -> None:
    torch.manual_seed(0)
    model, x = Tempered().cuda(), torch.randn(8, 256, device="cuda")
    temperatures = [0.5 + 0.01 * i for i in range(100)]

    def set_and_call(compiled: pygraph.CompiledModel) -> Callable[[int], torch.Tensor]:
        def call(i: int) -> torch.Tensor:
            model.temperature = temperatures[i % 100]
            return compiled(x)

        return call

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = pygraph.export_and_compile(model, (x,))
        constant = per_call_us(lambda i: compiled(x))
        changed = per_call_us(set_and_call(compiled))
        model.temperature = 0.77
        assert torch.allclose(compiled(x), model(x), rtol=1e-5, atol=1e-7)
        print(f"programs for the attribute set each call: {len(compiled._ways)}", flush=True)
        argument = pygraph.export_and_compile(model, (x, 1.0))
        passed = per_call_us(lambda i: argument(x, temperatures[i % 100]))
        eager = per_call_us(lambda i: model(x, temperatures[i % 100]))
    print(
        f"per call (us): attribute constant {constant:.1f}, attribute set each call {changed:.1f}, "
        f"number passed as an argument {passed:.1f}, eager {eager:.1f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
