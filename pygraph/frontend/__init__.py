"""Stage 1: a PyTorch model to `.torch.mlir` (torch.export, pygraph's decompositions, FX import with hooks)."""

from .derived_state import DerivedState, SharedValues, hoist_derived_state
from .export import DynamicDim, ExportError, argument_names, declared_dims, export_program
from .importer import (
    ArgumentSpec,
    ImportedProgram,
    UnsupportedError,
    called_op,
    import_program,
    keep_outside_graphs,
)
from .module_tree import ModuleTree
from .python_state import (
    MISSING,
    AssignedTensors,
    AttributeChange,
    AttributeRead,
    bytes_and_layout,
    held_tensors,
    layouts_only,
    per_call_check,
    probing_counters,
    set_items,
    tensor_tree,
    watching_attributes,
)
from .settings import Settings
from .state_values import StateValueRead, StateValues
from .structure import InputStructure

__all__ = [
    "MISSING",
    "ArgumentSpec",
    "AssignedTensors",
    "AttributeChange",
    "AttributeRead",
    "DerivedState",
    "DynamicDim",
    "ExportError",
    "ImportedProgram",
    "InputStructure",
    "ModuleTree",
    "Settings",
    "SharedValues",
    "StateValueRead",
    "StateValues",
    "UnsupportedError",
    "argument_names",
    "bytes_and_layout",
    "called_op",
    "declared_dims",
    "export_program",
    "held_tensors",
    "hoist_derived_state",
    "import_program",
    "keep_outside_graphs",
    "layouts_only",
    "per_call_check",
    "probing_counters",
    "set_items",
    "tensor_tree",
    "watching_attributes",
]
