"""pygraph: compiles PyTorch models into explicitly built CUDA graphs.

`pygraph.export_and_compile(model, example_inputs)` returns a callable that computes what `model`
computes; see README.md and docs/architecture.md. The API is imported lazily so that `pygraph-opt`
(which only needs the IR and the passes) starts without importing PyTorch.
"""

from typing import Any

__all__ = ["STAGES", "CompileError", "CompiledModel", "export_and_compile"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'pygraph' has no attribute {name!r}")
