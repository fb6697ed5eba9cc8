"""Stage 1: a PyTorch model to `.torch.mlir` (torch.export, pygraph's decompositions, FX import with hooks)."""

from .export import ExportError, export_program
from .importer import ArgumentSpec, ImportedProgram, UnsupportedError, import_program

__all__ = [
    "ArgumentSpec",
    "ExportError",
    "ImportedProgram",
    "UnsupportedError",
    "export_program",
    "import_program",
]
