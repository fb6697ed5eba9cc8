"""The pass registry: every pass by its command-line name, imported only when asked for.

Keep the table alphabetical; `tests/test_registry.py` checks that each name matches its class and
has a FileCheck test `tests/filecheck/passes/<name>.mlir`.
"""

from __future__ import annotations

import importlib

from .base import Pass

_REGISTRY: dict[str, str] = {
    "classify-ops": "pygraph.passes.classify_ops:ClassifyOps",
    "codegen-triton": "pygraph.passes.codegen_triton:CodegenTriton",
    "elide-clones": "pygraph.passes.elide_clones:ElideClones",
    "form-segments": "pygraph.passes.form_segments:FormSegments",
    "fuse-pointwise": "pygraph.passes.fuse_pointwise:FusePointwise",
    "fuse-scatter-values": "pygraph.passes.fuse_scatter_values:FuseScatterValues",
    "hoist-host-copies": "pygraph.passes.hoist_host_copies:HoistHostCopies",
    "isolate-data-dependent": "pygraph.passes.isolate_data_dependent:IsolateDataDependent",
    "lower-to-plan": "pygraph.passes.lower_to_plan:LowerToPlan",
    "move-scales": "pygraph.passes.move_scales:MoveScales",
    "out-form": "pygraph.passes.out_form:OutForm",
    "pad-selections": "pygraph.passes.pad_selections:PadSelections",
    "parameter-indirection": "pygraph.passes.parameter_indirection:ParameterIndirection",
    "place-constants": "pygraph.passes.place_constants:PlaceConstants",
    "plan-memory": "pygraph.passes.plan_memory:PlanMemory",
    "prepare-attention-masks": "pygraph.passes.prepare_attention_masks:PrepareAttentionMasks",
    "row-phases": "pygraph.passes.row_phases:RowPhases",
    "seed-random": "pygraph.passes.seed_random:SeedRandom",
    "select-graphs": "pygraph.passes.select_graphs:SelectGraphs",
    "split-bias": "pygraph.passes.split_bias:SplitBias",
    "split-keys": "pygraph.passes.split_keys:SplitKeys",
    "write-in-place": "pygraph.passes.write_in_place:WriteInPlace",
}


def pass_names() -> list[str]:
    return list(_REGISTRY)


def get_pass(name: str) -> type[Pass]:
    try:
        module_name, class_name = _REGISTRY[name].split(":")
    except KeyError:
        raise KeyError(f"unknown pass '{name}' (known: {', '.join(_REGISTRY)})") from None
    return getattr(importlib.import_module(module_name), class_name)
