"""The modules and forward hooks a trace ran through, to tell when a later call would run others.

A trace follows the model's modules as they are (`model.act = nn.GELU()` after compiling swaps what a call
computes) and runs the forward hooks registered on them (a hook added later changes eager's results, one
removed leaves the program applying it). Parameters are another matter: a new tensor in a module the
trace saw is rebound, not traced again. A `ModuleTree` holds, for each module of the model, the module
itself (weakly) and the handles of its forward hooks, and the handles of the global ones. A compiled
model compares it with the model after an event that may have changed it (`api._StateWatch`), and runs a
call finding another with a program traced from it.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch
from torch.nn.modules import module as torch_module


def _handles(module: torch.nn.Module) -> tuple[int, ...]:
    return (*module._forward_pre_hooks, *module._forward_hooks)


def _global_handles() -> tuple[int, ...]:
    return (*torch_module._global_forward_pre_hooks, *torch_module._global_forward_hooks)


@dataclass(frozen=True)
class ModuleTree:
    """Each module's path, the module (a weak reference: a replaced one may be freed) and the handles of
    its forward hooks, and the handles of the global forward hooks."""

    modules: tuple[tuple[str, Any, tuple[int, ...]], ...]
    global_hooks: tuple[int, ...]

    @classmethod
    def of(cls, model: torch.nn.Module) -> ModuleTree:
        modules = tuple((path, weakref.ref(m), _handles(m)) for path, m in model.named_modules())
        return cls(modules, _global_handles())

    def difference(self, model: torch.nn.Module) -> str | None:
        """What differs in `model` now (the first difference, in words), or None."""
        now = list(model.named_modules())
        for (path, ref, hooks), (now_path, module) in zip(self.modules, now, strict=False):
            if path != now_path or ref() is not module:
                return f"module `{path or now_path}` is another one than when the program was traced"
            if hooks != _handles(module):
                return f"the forward hooks of module `{path or type(module).__name__}` changed"
        if len(now) != len(self.modules):
            return f"the model has {len(now)} modules, {len(self.modules)} when the program was traced"
        if self.global_hooks != _global_handles():
            return "the global forward hooks (`register_module_forward_hook`) changed"
        return None
