"""MLIR contexts with everything pygraph needs, and parsing and printing of modules."""

from __future__ import annotations

from . import dialect
from ._mlir import ir, torch_dialect


def make_context() -> ir.Context:
    """A context with the torch dialect registered (it must come first) and pygraph loaded."""
    context = ir.Context()
    torch_dialect.register_dialect(context)
    dialect.load(context)
    return context


def parse(text: str, context: ir.Context | None = None) -> ir.Module:
    context = context or make_context()
    with context:
        return ir.Module.parse(text)


def print_module(module: ir.Module | ir.Operation, debug_info: bool = False) -> str:
    return module.operation.get_asm(enable_debug_info=debug_info, large_elements_limit=None)
