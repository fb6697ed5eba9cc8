"""The one module through which pygraph reaches the MLIR Python bindings (bundled with torch-mlir).

A change of bindings is an edit here. Importing this module does not import PyTorch.
"""

from torch_mlir import ir
from torch_mlir.dialects import ext, func
from torch_mlir.dialects import torch as torch_dialect
from torch_mlir.passmanager import PassManager

__all__ = ["PassManager", "ext", "func", "ir", "torch_dialect"]
