"""`export_and_compile`: the public entry point, and the compiled model it returns."""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import itertools
import threading
import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.utils._pytree as pytree
from torch.autograd.graph import increment_version
from torch.utils.hooks import RemovableHandle

from .backend import AssumptionFailed, UnrecordableCall
from .backend.cuda.arena import Arenas
from .backend.random import draws_random_numbers, generator_states, restore_generators
from .frontend import (
    MISSING,
    AssignedTensors,
    AttributeChange,
    AttributeRead,
    DerivedState,
    DynamicDim,
    ExportError,
    ImportedProgram,
    InputStructure,
    ModuleTree,
    Settings,
    SharedValues,
    StateValueRead,
    StateValues,
    UnsupportedError,
    argument_names,
    bytes_and_layout,
    called_op,
    declared_dims,
    export_program,
    held_tensors,
    hoist_derived_state,
    import_program,
    keep_outside_graphs,
    layouts_only,
    per_call_check,
    probing_counters,
    set_items,
    watching_attributes,
)
from .frontend import settings as global_settings
from .frontend.row_prefixes import Padding
from .frontend.settings import pygraphs_own_ops
from .ir import aten
from .ir.context import make_context, parse, print_module
from .ir.explain import Explanation, explain_plan, node_name, source_location
from .ir.plan import Plan, read_plan, writes_before_a_check
from .knobs import knobs
from .padding import PaddedCall, bucket
from .passes.base import PassError
from .passes.pipeline import PLAN_PIPELINE, TENSOR_PIPELINE, Instrumentation, parse_pipeline, run_pipeline

STAGES = ("torch", "pygraph", "plan")

# The reads of the settings a program bakes in (`frontend/settings.py`) that every call makes.
_any_autocast = torch._C._is_any_autocast_enabled
_cublas_tf32 = torch._C._get_cublas_allow_tf32
_cudnn_tf32 = torch._C._get_cudnn_allow_tf32
_default_dtype = torch.get_default_dtype


class _StateWatch:
    """Counts events that may replace or move a model's parameters and buffers, so that a compiled model
    rebinds them only after one, instead of checking every parameter on every call.

    Counted: registering a parameter, buffer or submodule (assigning a new `nn.Parameter`,
    `load_state_dict(assign=True)`, replacing a layer), deleting one or setting a parameter to None, `Module._apply` (`.to()`, `.cuda()`, `.half()`,
    ...), `Module.train` (`.train()`, `.eval()`: a compiled model then checks that its modules are in
    the modes it was traced in), assignments to the attributes of modules and objects that a traced
    forward read plain attributes of (`watch`: a compiled model then checks the values it read), and hooks
    registered or removed (any `RemovableHandle` made or removed: a compiled model then checks its modules
    and their forward hooks, `frontend/module_tree.py`). Not needed: `load_state_dict()` copies values
    into the tensors the graphs already read. Not seen: assigning `param.data = other`,
    `param.set_(other)` or `module.training` directly; call `compiled.rebind()` after doing that.

    An int or float assigned to a watched attribute (a temperature set before each call) counts apart, in
    `assigned`: it can replace no tensor, module or hook, so a compiled model checks only the values its
    program read after one (`CompiledModel._run`), and a program taking those numbers as inputs
    (`python_state.attributes_as_inputs`) pays no more per call. A tensor that a compiled call sets in an
    attribute its program takes as an input (a streaming model's state) counts apart too, in `replaced`:
    only programs reading tensor attributes as constants look again at which tensors they hold.
    """

    epoch = 0
    assigned = 0
    replaced = 0  # tensors compiled calls set in attributes their programs take as inputs (`_set_assigned`)
    installed = False
    watched: ClassVar[dict[int, weakref.ref]] = {}  # id -> the object whose assignments count
    assignments_seen: ClassVar[set[type]] = set()  # classes whose `__setattr__` counts them

    @classmethod
    def bump(cls, *args: Any) -> None:
        cls.epoch += 1

    @classmethod
    def watch(cls, holder: Any) -> None:
        """Counts assignments to `holder`'s attributes from now on (where its class lets that be seen)."""
        kind = type(holder)
        if kind not in cls.assignments_seen:
            original = kind.__setattr__

            def __setattr__(self: Any, name: str, value: Any) -> None:
                original(self, name, value)
                ref = cls.watched.get(id(self))
                if ref is not None and ref() is self:
                    if type(value) in (int, float):
                        cls.assigned += 1
                    else:
                        cls.epoch += 1

            try:
                kind.__setattr__ = __setattr__
            except TypeError:  # (a built-in type: its objects' attributes are not watched)
                return
            cls.assignments_seen.add(kind)
        with contextlib.suppress(TypeError):  # (an object without weak references is not watched)
            key = id(holder)
            cls.watched[key] = weakref.ref(holder, lambda _: cls.watched.pop(key, None))

    @classmethod
    def install(cls) -> None:
        if cls.installed:
            return
        from torch.nn.modules import module

        module.register_module_parameter_registration_hook(cls.bump)
        module.register_module_buffer_registration_hook(cls.bump)
        module.register_module_module_registration_hook(cls.bump)
        original = torch.nn.Module._apply

        def _apply(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
            try:
                return original(self, *args, **kwargs)
            finally:
                cls.bump()

        torch.nn.Module._apply = _apply
        original_train = torch.nn.Module.train

        def train(self: torch.nn.Module, mode: bool = True) -> torch.nn.Module:
            try:
                return original_train(self, mode)
            finally:
                cls.bump()

        torch.nn.Module.train = train
        # Deleting a submodule, parameter or buffer (`del layers[0]`, `ModuleList.pop`), and setting a
        # parameter to None, reach no registration hook.
        for method in ("__delattr__", "register_parameter"):
            original_method = getattr(torch.nn.Module, method)

            def counted(self: torch.nn.Module, *args: Any, original: Any = original_method) -> Any:
                try:
                    return original(self, *args)
                finally:
                    cls.bump()

            setattr(torch.nn.Module, method, counted)
        handle_init, handle_remove = RemovableHandle.__init__, RemovableHandle.remove

        def __init__(self: RemovableHandle, *args: Any, **kwargs: Any) -> None:
            handle_init(self, *args, **kwargs)
            cls.bump()

        def remove(self: RemovableHandle) -> None:
            handle_remove(self)
            cls.bump()

        RemovableHandle.__init__, RemovableHandle.remove = __init__, remove
        cls.installed = True


def _tied(model: torch.nn.Module) -> list[list[str]]:
    """Groups of parameter and buffer names that share one tensor (tied embeddings): torch.export keeps
    one of each group, which the program then reads for all of them."""
    by_tensor: dict[int, list[str]] = {}
    for name, tensor in [
        *model.named_parameters(remove_duplicate=False),
        *model.named_buffers(remove_duplicate=False),
    ]:
        by_tensor.setdefault(id(tensor), []).append(name)
    return [names for names in by_tensor.values() if len(names) > 1]


def _tensor_at(model: torch.nn.Module, name: str) -> Any:
    module, _, attribute = name.rpartition(".")
    try:
        return getattr(model.get_submodule(module), attribute)
    except AttributeError:
        return None


def _same_tensor(value: Any, tensor: torch.Tensor) -> bool:
    """`value` is `tensor` or a view of the same bytes in the same layout (export detaches constants)."""
    return isinstance(value, torch.Tensor) and (
        value is tensor or bytes_and_layout(value) == bytes_and_layout(tensor)
    )


def _described(value: Any) -> str:
    if not isinstance(value, torch.Tensor):
        return repr(value)
    strides = "" if value.is_contiguous() else f" with strides {list(value.stride())}"
    return f"a {str(value.dtype).removeprefix('torch.')}{list(value.shape)} tensor on {value.device}{strides}"


@dataclass(frozen=True)
class _Parameters:
    """forward's parameters as keywords bind to them, read once from its signature (`inspect.signature`
    costs tens of microseconds, which a model called with keywords would pay on every call)."""

    model: str
    positional: tuple[str, ...]  # the positional parameters' names, in order
    positional_only: frozenset[str]
    defaults: dict[str, Any]  # name -> default, for every named parameter that has one
    named: frozenset[str]  # every parameter a keyword may name
    any_keyword: bool  # forward takes `**kwargs`

    @staticmethod
    def of(model: torch.nn.Module) -> _Parameters:
        parameters = list(inspect.signature(model.forward).parameters.values())
        positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        named = [p for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        return _Parameters(
            type(model).__name__,
            tuple(p.name for p in positional),
            frozenset(p.name for p in positional if p.kind == p.POSITIONAL_ONLY),
            {p.name: p.default for p in named if p.default is not p.empty},
            frozenset(p.name for p in named),
            any(p.kind == p.VAR_KEYWORD for p in parameters),
        )

    def by_position(self, arity: int, args: tuple, kwargs: dict[str, Any]) -> tuple:
        """A call's keyword arguments moved to the positions of the `arity` arguments the program was
        traced with, as Python binds them to `forward` (`compiled(input_ids=ids, attention_mask=mask)`, as
        Hugging Face models are called). The trace left forward's other parameters at their defaults: a
        keyword naming one of them must pass that default, or the call raises naming it."""
        name, positional = self.model, self.positional
        values = [*args, *[MISSING] * (min(arity, len(positional)) - len(args))]
        for key, value in kwargs.items():
            if key not in self.named and not self.any_keyword:
                raise TypeError(f"{name}.forward() got an unexpected keyword argument `{key}`")
            if key in self.positional_only:
                raise TypeError(f"{name}.forward() takes `{key}` by position only")
            # (a keyword-only parameter or one `**kwargs` takes: past every position)
            index = positional.index(key) if key in positional else len(positional) + arity
            if index < len(args):
                raise TypeError(f"{name}.forward() got multiple values for argument `{key}`")
            if index < arity:
                values[index] = value
            elif key not in self.named or not _is_default(value, self.defaults.get(key, MISSING)):
                traced = "no other keyword arguments" if key not in self.named else f"`{key}` at its default"
                default = f" ({self.defaults[key]!r})" if key in self.defaults else ""
                raise TypeError(
                    f"the compiled {name} was traced with {traced}{default}; this call passes `{key}` as "
                    f"{_kind(value)}: compile with it among the example inputs, in its position, for a "
                    "program that takes it"
                )
        missing = [positional[i] for i, value in enumerate(values) if value is MISSING]
        if missing:
            raise TypeError(
                f"the compiled {name} was traced with {arity} arguments; this call gives none for "
                f"{', '.join(f'`{m}`' for m in missing)}"
            )
        return tuple(values)


def _is_default(value: Any, default: Any) -> bool:
    """Whether a keyword argument passes its parameter's default (None, a flag or a number as written)."""
    atoms = (bool, int, float, str)
    return value is default or (type(value) is type(default) and type(value) in atoms and value == default)


def _kind(value: Any) -> str:
    """What `value` is, without its values: "a float", "a float32[2, 4] tensor", "a tuple of 2 tensors"."""
    if isinstance(value, torch.Tensor):
        return f"a {str(value.dtype).removeprefix('torch.')}{list(value.shape)} tensor"
    if type(value) in (list, tuple, dict):
        return f"a {type(value).__name__} of {len(pytree.tree_leaves(value))} tensors"
    return f"a {type(value).__name__}"


class CompileError(Exception):
    """The model cannot be compiled; the message names each op and where it comes from in the user's code."""


def export_and_compile(
    model: torch.nn.Module,
    example_inputs: Sequence[torch.Tensor],
    *,
    dynamic_shapes: Any = None,
    target: str = "auto",
    freeze: bool = False,
    static_outputs: bool = False,
    profile: bool = False,
) -> CompiledModel:
    """Compiles `model` for calls shaped like `example_inputs`; the result computes what `model` computes.

    `example_inputs`: a tuple of forward's positional arguments (tensors, numbers, and lists, tuples and
    dicts of them). `dynamic_shapes`: torch.export's specification; the dims it declares may take other
    sizes within their ranges (a call of a new size runs a padded program or compiles one for its size,
    at most `PYGRAPH_MAX_VARIANTS`; all of them share one arena). `target`: "cuda" (CUDA graphs on the
    model's GPU), "emulator" (the CPU emulator executing the same plan) or "auto" (CUDA where the model or
    the inputs are on a GPU). `freeze=True` folds eval batch norms into the convolutions before them at
    compile time: faster, but the compiled model no longer follows later changes of those parameters.
    `static_outputs=True` returns the graphs' own buffers, which the next call overwrites (no allocation
    per call, reduce-overhead's contract); by default every call returns fresh tensors that stay valid.
    `profile=True` measures each segment as a graph and as eager launches on the GPU and keeps the
    faster (stored per device and versions, so a later compilation reuses the figures without measuring).
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(example_inputs, (tuple, list)):
        raise TypeError(
            f"example_inputs must be a tuple of forward's arguments, e.g. (x,), got {type(example_inputs).__name__}"
        )
    example_inputs = tuple(example_inputs)
    target = _choose_target(target, model, example_inputs)
    if profile and target == "emulator":
        raise ValueError("profile=True measures on a GPU; the emulator has nothing to measure")
    dynamic, padding = (
        ({}, {}) if dynamic_shapes is None else declared_dims(model, example_inputs, dynamic_shapes)
    )
    # (every program of the compiled model is built with these: shape variants, ways, settings)
    options = {"target": target, "freeze": freeze, "static_outputs": static_outputs, "profile": profile}
    options["arenas"] = Arenas()  # the programs' one arena per device (`backend/cuda/arena.py`)
    compiled = _compile(model, example_inputs, options, {})
    compiled._dynamic, compiled._padding, compiled._dynamic_shapes = dynamic, padding, dynamic_shapes
    return compiled


def _traceable(value: Any) -> Any:
    """An example input as torch.export can trace it: a view of another dtype's tensor (`view_as_complex` of a
    real one, a padded call's complex input) as a tensor of its own (the guards of export's decomposition
    read the view's base and fail); its values and layout are the same."""
    base = value._base if isinstance(value, torch.Tensor) else None
    return value.clone() if base is not None and base.dtype != value.dtype else value


def _compile(
    model: torch.nn.Module,
    example_inputs: tuple[Any, ...],
    options: dict[str, Any],
    outside: dict[str, str],
    variant: bool = False,
    attributes: tuple[AttributeRead, ...] = (),
) -> CompiledModel:
    """`export_and_compile` for a checked target, and for the shape variants of a compiled model (which do
    not repeat its warnings); calls of the ops named in `outside` (op name -> why) run between graphs (a
    recording of one failed before); the numbers in `attributes` are inputs of the program, which each
    call reads from the model (`python_state.attributes_as_inputs`)."""
    target, name = options["target"], type(model).__name__
    example_inputs = pytree.tree_map(_traceable, example_inputs)
    traced = global_settings.current()  # (read before the trace: its casts are in the program after it)
    # for the example's sizes
    export = functools.partial(_export_watched, model, example_inputs, options["freeze"])
    program, changed, reads, assigned, to_take = export(warn=not variant, attributes=attributes)
    # Attributes holding tensors that forward reads and replaces are inputs of the program as well: each
    # call passes the tensors the attribute holds then (those the last call left, or ones the caller set)
    if to_take or any(change.before is MISSING for change in changed):
        # (torch.export keeps the plain attributes forward added, so later calls find them: trace from there)
        attributes += to_take
        program, changed, reads, assigned, _ = export(warn=False, attributes=attributes)
    changed = _counting(model, example_inputs, options["freeze"], program, changed, attributes)
    if any(change.step is None for change in changed) and not variant:
        warnings.warn(
            f"{name} changes Python attributes in forward: {', '.join(c.describe() for c in changed)}. "
            "pygraph compiled the call that finds them as they are now and leaves them as that call does; "
            "a call finding other values is traced and compiled again (state kept in a buffer, "
            "`register_buffer`, compiles once)",
            stacklevel=3,
        )
    with pygraphs_own_ops():  # the program holds the casts autocast made in the trace
        derived = hoist_derived_state(program)
        context = make_context()
        imported = import_program(program, context, derived.names if derived else ())
        if imported.copied_views and not variant:
            warnings.warn(
                f"{name} returns views of its inputs or state at places its data decide: "
                f"{', '.join(imported.copied_views)}. pygraph returns copies of their values (it knows the "
                "place only once the call has run), which later writes to what they view do not change and "
                "writes into which do not reach it",
                stacklevel=3,
            )
        keep_outside_graphs(imported.module, outside)
        cost_key = _cost_key(target, model)
        pipelines = (_tensor_pipeline(cost_key), _plan_pipeline(cost_key, options["static_outputs"]))
        stages: dict[str, str] = {}
        module = _lower(name, imported.module, context, pipelines, stages)
        structure = InputStructure.of(argument_names(model, len(example_inputs)), example_inputs)
        compiled = CompiledModel(
            model,
            imported,
            read_plan(module),
            stages,
            target,
            traced,
            derived,
            changed,
            reads,
            structure,
            options["arenas"],
        )
        compiled._arity = len(example_inputs)
        compiled._take_attributes(attributes)
        compiled._assigns = _assigns(imported.out_spec, assigned, attributes)
        # (static outputs are the graphs' own buffers, which the next call overwrites: state gets copies)
        compiled._copy_assigned = options["static_outputs"]
        compiled._variant_options, compiled._pipelines, compiled._outside = options, pipelines, dict(outside)
        compiled._warned_autograd = variant  # (a variant's or a way's calls come through a model that warned)
        if options["profile"]:
            while True:  # each failed recording re-plans once, with one more op between graphs
                try:
                    compiled._profile(compiled._flat(example_inputs), cost_key)
                    break
                except UnrecordableCall as exc:
                    compiled._keep_outside_graphs(exc)
    return compiled


def _counting(
    model: torch.nn.Module,
    example_inputs: tuple[Any, ...],
    freeze: bool,
    program: torch.export.ExportedProgram,
    changed: tuple[AttributeChange, ...],
    attributes: tuple[AttributeRead, ...],
) -> tuple[AttributeChange, ...]:
    """`changed` with a step each where all are ints that only count (`python_state.probing_counters`: a
    trace with stand-ins for them used no value and made the same program), else as it is."""
    if not changed or not all(change.counts() for change in changed):
        return changed
    with probing_counters(model, list(changed)) as probe:
        try:
            probed = _export_watched(model, example_inputs, freeze, warn=False, attributes=attributes)[0]
        except ExportError:  # (a value was used, or something else failed with stand-ins in place)
            return changed
    counters = probe.counters()
    if counters is None or probed.graph_module.code != program.graph_module.code:
        return changed
    return tuple(counters)


def _export_watched(
    model: torch.nn.Module,
    example_inputs: tuple[Any, ...],
    freeze: bool,
    warn: bool,
    attributes: tuple[AttributeRead, ...],
) -> tuple[
    torch.export.ExportedProgram,
    tuple[AttributeChange, ...],
    tuple[AttributeRead, ...],
    tuple[AttributeRead, ...],
    tuple[AttributeRead, ...],
]:
    """`export_program`, and the plain Python attributes the traced forward changed, those it read
    (`python_state.py`), but for the `attributes` the program takes as inputs, those it set to other
    tensors (which the program returns after the output's results, `python_state.AssignedTensors`), and
    those of the latter that a program should take as inputs (`Watched.tensors_to_take`) but does not."""
    state_values = StateValues.of(model)
    with watching_attributes(model) as watched:
        program = export_program(
            model, example_inputs, freeze=freeze, warn=warn, attributes=attributes, state_values=state_values
        )
    inputs = {(id(a.holder), a.name) for a in attributes}
    reads = tuple(r for r in watched.reads if (id(r.holder), r.name) not in inputs)
    reads += state_values.reads() if state_values.known else ()
    to_take = tuple(layouts_only(a) for a in watched.tensors_to_take if (id(a.holder), a.name) not in inputs)
    return program, tuple(watched.changes), reads, tuple(watched.tensors_assigned), to_take


def _assigns(
    out_spec: pytree.TreeSpec, assigned: tuple[AttributeRead, ...], inputs: tuple[AttributeRead, ...]
) -> tuple[tuple[Any, str, bool, bool], ...]:
    """(holder, name, whether the program takes it as an input, whether forward changed the list or dict it
    holds in place) for each attribute whose new tensors are the program's results after the output's
    (`out_spec` an `AssignedTensors` spec), in order."""
    if out_spec.type is not AssignedTensors:
        return ()
    by_path = {a.path: a for a in assigned}
    taken = {(id(a.holder), a.name) for a in inputs}
    paths, in_place = out_spec.context
    return tuple(
        (a.holder, a.name, (id(a.holder), a.name) in taken, changed_in_place)
        for a, changed_in_place in zip((by_path[path] for path in paths), in_place, strict=True)
    )


def _lower(name: str, module: Any, context: Any, pipelines: tuple[str, str], stages: dict[str, str]) -> Any:
    """The torch stage through the tensor and plan pipelines; each stage's text into `stages`."""
    module = _stage(name, "torch", module, context, stages)
    module = _run(name, "pygraph", module, pipelines[0], context, stages)
    return _run(name, "plan", module, pipelines[1], context, stages)


def _cost_key(target: str, model: torch.nn.Module) -> str:
    """Which cost figures the passes read: calibrated for this GPU (measured once, then cached), or defaults."""
    if target != "cuda":
        return "default"
    from .backend.cuda.calibrate import costs_for

    return costs_for(_device(model, target))


def _tensor_pipeline(cost_key: str) -> str:
    """The tensor pipeline with its options: cost figures, products of one row generated or left to the vendor
    (PYGRAPH_MATVEC), which products of more rows are generated with their epilogue (PYGRAPH_MATMUL) and in
    which precision (torch's TF32 setting for matmuls, read now)."""
    if knobs.matvec not in ("auto", "vendor"):
        raise ValueError(f"PYGRAPH_MATVEC must be auto or vendor, not {knobs.matvec!r}")
    if knobs.matmul not in ("auto", "all", "off"):
        raise ValueError(f"PYGRAPH_MATMUL must be auto, all or off, not {knobs.matmul!r}")
    options = [
        *(["matvec=false"] if knobs.matvec == "vendor" else []),
        *([f"matmul={knobs.matmul}"] if knobs.matmul != "auto" else []),
        *(["matmul-precision=tf32"] if torch.backends.cuda.matmul.allow_tf32 else []),
    ]
    pipeline = TENSOR_PIPELINE.replace("pad-selections", f"pad-selections{{costs={cost_key}}}")
    if not options:
        return pipeline
    return pipeline.replace("classify-ops", f"classify-ops{{{' '.join(options)}}}")


def _plan_pipeline(cost_key: str, static_outputs: bool) -> str:
    """The plan pipeline with its options: cost figures, output mechanism, forced graph modes (PYGRAPH_GRAPHS),
    products in phases of rows where TF32 matmuls are allowed, attentions' keys split (PYGRAPH_SPLIT_KEYS)."""
    force = {"auto": "", "all": " force=graph", "none": " force=eager"}.get(knobs.graphs)
    if force is None:
        raise ValueError(f"PYGRAPH_GRAPHS must be auto, all or none, not {knobs.graphs!r}")
    indirection = (
        f"parameter-indirection{{costs={cost_key}{' static-outputs=true' if static_outputs else ''}}}"
    )
    pipeline = (
        PLAN_PIPELINE.replace("parameter-indirection", indirection)
        .replace("select-graphs", f"select-graphs{{costs={cost_key}{force}}}")
        .replace("plan-memory", f"plan-memory{{costs={cost_key}}}")
    )
    if torch.backends.cuda.matmul.allow_tf32:  # read now, as the tensor pipeline's matmul precision
        pipeline = pipeline.replace("row-phases", "row-phases{matmul-precision=tf32}")
    if knobs.split_keys != "auto":
        pipeline = pipeline.replace("split-keys", f"split-keys{{keys={knobs.split_keys}}}")
    return pipeline


def _modes(model: torch.nn.Module) -> tuple[bool, ...]:
    return tuple(module.training for module in model.modules())


def _strided_as(x: Any, layout: Any) -> bool:
    """Whether tensor `x` (of `layout`'s shape) has `layout`'s strides where they matter: dims of one
    element may have any."""
    return all(n == 1 or a == b for n, a, b in zip(layout.shape, x.stride(), layout.strides, strict=True))


def _device(model: torch.nn.Module, target: str) -> torch.device:
    device = next(
        (t.device for t in itertools.chain(model.parameters(), model.buffers())), torch.device("cpu")
    )
    return (
        device
        if target != "cuda" or device.type == "cuda"
        else torch.device("cuda", torch.cuda.current_device())
    )


def _choose_target(target: str, model: torch.nn.Module, inputs: tuple[Any, ...]) -> str:
    if target not in ("auto", "cuda", "emulator"):
        raise ValueError(f'target must be "auto", "cuda" or "emulator", not "{target}"')
    tensors = (
        [t for t in pytree.tree_leaves(inputs) if isinstance(t, torch.Tensor)]
        + list(model.parameters())
        + list(model.buffers())
    )
    on_cuda = [t.is_cuda for t in tensors]
    if target == "auto":
        target = "cuda" if any(on_cuda) else "emulator"
    if target == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError('target="cuda" needs a CUDA GPU, and torch sees none')
        if not any(on_cuda):  # host tensors of a GPU program (CPU scalars, CPU buffers) are welcome
            raise ValueError('target="cuda" needs the model or the example inputs on a CUDA device')
    elif any(on_cuda):
        raise ValueError("the emulator runs on the CPU: move the model and the example inputs to the CPU")
    return target


def _override(name: str, stage: str) -> Path | None:
    path = Path(knobs.override_dir) / f"{name}.{stage}.mlir" if knobs.override_dir else None
    return path if path is not None and path.exists() else None


def _stage(name: str, stage: str, module: Any, context: Any, stages: dict[str, str]) -> Any:
    """Records a stage's text; PYGRAPH_OVERRIDE_DIR replaces it, PYGRAPH_DUMP_DIR keeps a copy."""
    override = _override(name, stage)
    if override is not None:
        module = parse(override.read_text(), context)
    text = print_module(module, debug_info=True)
    stages[stage] = text
    if knobs.dump_dir:
        Path(knobs.dump_dir).mkdir(parents=True, exist_ok=True)
        (Path(knobs.dump_dir) / f"{name}.{stage}.mlir").write_text(text)
    return module


def _run(name: str, stage: str, module: Any, pipeline: str, context: Any, stages: dict[str, str]) -> Any:
    if _override(name, stage) is None:
        items = parse_pipeline(pipeline)
        try:
            run_pipeline(module, items, Instrumentation(verify_each=knobs.verify >= 1))
        except PassError as exc:
            raise CompileError(_format_errors(exc)) from None
    return _stage(name, stage, module, context, stages)


def _format_errors(exc: PassError) -> str:
    lines = ["pygraph cannot compile the model:"]
    for loc, message in exc.errors:
        lines.append(f"  {user_location(loc)}: {message}")
    return "\n".join(lines)


def user_location(loc: Any) -> str:
    """`model.py:12 (node linear_1)`: the innermost frame outside torch, and the FX node's name."""
    return source_location(str(loc))


class CompiledModel:
    """What `export_and_compile` returns: call it like the model."""

    def __init__(
        self,
        model: torch.nn.Module,
        imported: ImportedProgram,
        plan: Plan,
        stages: dict[str, str],
        target: str,
        settings: Settings,
        derived: DerivedState | None = None,
        attributes: tuple[AttributeChange, ...] = (),
        reads: tuple[AttributeRead | StateValueRead, ...] = (),
        structure: InputStructure | None = None,
        arenas: Arenas | None = None,
    ) -> None:
        self.model, self.target, self._stages = model, target, stages
        self._arenas = arenas or Arenas()  # shared with the other programs of the model's compiled model
        self._lock = threading.RLock()  # one call at a time (`__call__`)
        self._thread = threading.local()  # marked on each thread that has called (`_enter_thread`)
        # The settings the trace baked in (`frontend/settings.py`), and the part of them every call compares
        # with its own (None where traced under autocast: such calls compare them all); the programs traced
        # under other settings, shared by all of them, by settings.
        self._settings = settings
        self._plain_settings = None if settings[0] else settings[1:]
        self._by_settings: dict[Settings, CompiledModel] = {settings: self}
        # Arguments nested in lists, tuples or dicts, or holding None or strings (frontend/structure.py):
        # how a call's arguments flatten into the plan's inputs; None where they are those inputs.
        self._structure = structure
        # The plain Python attributes the traced call changed (frontend/python_state.py): a call runs this
        # program only if it finds them as the trace did, and leaves them as the traced call did.
        self._attributes = attributes
        # Those it read (and did not change): checked after an assignment to one (`_StateWatch`), and on
        # every call those no assignment announces (`AttributeRead.per_call`).
        self._reads = tuple(read for read in reads if not isinstance(read, StateValueRead))
        self._reads_per_call = tuple(read for read in self._reads if read.per_call)
        self._reads_per_call_hold = per_call_check(self._reads_per_call)  # (the native replay's check)
        # The values of small buffers the program holds (frontend/state_values.py): checked on every call
        # by their versions (the native replay hands a change to `_call`).
        self._state_reads = tuple(read for read in reads if isinstance(read, StateValueRead))
        # Numbers in attributes that the program takes as inputs after the call's, read from the model on
        # each call (`python_state.attributes_as_inputs`; set by `_compile`).
        self._lifted: tuple[AttributeRead, ...] = ()
        self._lifted_structures: tuple[pytree.TreeSpec | None, ...] = ()  # (of lists, tuples, dicts)
        self._lifted_leaves: tuple[AttributeRead, ...] = ()  # the read of each input they are
        # The attributes forward set to other tensors, which the program returns after the output's results
        # and each call sets (`_set_assigned`): (holder, name, whether the program takes it as an input,
        # whether forward changed the list or dict it holds in place); set by `_compile`.
        self._assigns: tuple[tuple[Any, str, bool, bool], ...] = ()
        self._copy_assigned = False
        # How many arguments the example passed (set by `_compile`), and forward's parameters (read at the
        # first call passing keywords): a call's keywords map onto them.
        self._arity = 0
        self._parameters: _Parameters | None = None
        self._modes = _modes(model)  # each module's `training` flag, as traced (checked after `.train()`)
        self._tied = _tied(model)  # names sharing one tensor, as traced: the program reads it once
        self._tree = ModuleTree.of(model)  # its modules and forward hooks, as traced (checked after events)
        self._out_spec = imported.out_spec
        self._regenerated = imported.regenerated
        self._number_results = imported.numbers
        self._complex_results = imported.complex_results
        self._complex_inputs = imported.complex_inputs  # (positions among the plan's inputs)
        self._input_names = imported.input_names
        self._input_devices = [spec.device for spec in imported.arguments if spec.role == "input"]
        self._device = _device(model, target)
        # Constants as compiled: tensors made in forward, and tensor attributes of the model's modules that
        # are not buffers (`self.table = torch.randn(...)`), which calls read from the model (`_state`).
        self._constants = {
            **(derived.constants if derived is not None else {}),
            **{a.name: a.value for a in imported.arguments if a.role == "constant"},
        }
        self._attribute_constants = {
            n for n, t in self._constants.items() if _same_tensor(_tensor_at(model, n), t)
        }
        # And those held in lists, tuples or dicts in plain attributes (`self.pair = (a, b)`): a call reads
        # them there too, and checks each call that they are the ones bound (no assignment announces a
        # change inside a list).
        self._held_constants = held_tensors(
            model, {n: t for n, t in self._constants.items() if n not in self._attribute_constants}
        )
        # Derived state (frontend/derived_state.py): its current values, and the model's tensors they were
        # computed from with the versions they had then. First the values export computed (computing them
        # again would hold two copies of, say, every convolution weight in NHWC at once).
        self._derived = derived
        self._derived_values = {a.name: a.value for a in imported.arguments if a.role == "derived"}
        self._derived_from: list[tuple[torch.Tensor, int]] = []
        # Host tensors the plan places on the GPU (constants, CPU buffers the model copies there): by name,
        # (the model's tensor, its version when copied, the copy the graphs read).
        self._placed: dict[str, tuple[torch.Tensor, int, torch.Tensor]] = {}
        # Dims `dynamic_shapes` declared, and how `_other_shapes` compiles a variant for other sizes of them;
        # by symbol, whether calls of other sizes may run a variant of more (`frontend/row_prefixes.py`), and
        # how calls of each set of shapes that do run (`padding.py`).
        self._dynamic: dict[tuple[int, int], DynamicDim] = {}
        self._padding: dict[str, Padding] = {}
        self._dynamic_shapes: Any = None  # as `export_and_compile` was given them (ways prove padding anew)
        self._padded_calls: dict[tuple[tuple[int, ...], ...], PaddedCall] = {}
        self._variant_options: dict[str, Any] = {}
        self._variants: dict[tuple[tuple[int, ...], ...], CompiledModel] = {}
        # Programs for calls whose inputs that the model writes or whose results alias come in other strides
        # than the example's (`_other_strides`), by those inputs' strides.
        self._stride_variants: dict[tuple[tuple[int, ...], ...], CompiledModel] = {}
        # The programs for these shapes that calls whose data (or Python attributes) decide their way ran
        # (`_another_way`), in the order a call tries them (`_took`): None stands for the traced one, the
        # others were traced from a call that took another way. None in such a program itself.
        self._ways: list[CompiledModel | None] | None = [None]
        self._last_way: CompiledModel | None = None
        self._warned_eager = self._warned_autograd = False  # (`_eagerly`, `_outside_autograd`)
        # The pipelines the stages went through, and the ops kept between graphs because recording a call
        # of theirs failed (op name -> why): a re-plan and each shape variant go the same way.
        self._pipelines: tuple[str, str] = (TENSOR_PIPELINE, PLAN_PIPELINE)
        self._outside: dict[str, str] = {}
        self._single_output = self._out_spec.is_leaf() and not (
            self._regenerated or self._number_results or self._complex_results
        )
        _StateWatch.install()
        holders = [model.get_submodule(name.rpartition(".")[0]) for name in self._attribute_constants]
        holders += [held.holder for held in self._held_constants.values()]
        for watched in [
            *(read.holder for read in reads),
            *(change.module for change in attributes),
            *holders,
        ]:
            _StateWatch.watch(watched)  # (a counter is checked only after an assignment to it)
        if derived is not None:
            sources = self._derived_sources()
            self._derived_from = [(t, t._version) for t in sources]
            values = [self._derived_values[name] for name in derived.names]
            values = SharedValues.of(model, settings).share(derived, sources, values)
            self._derived_values = dict(zip(derived.names, values, strict=True))
        self._backend: Any = None
        self._use_plan(plan)

    def _use_plan(self, plan: Plan) -> None:
        """Runs `plan` from now on: a backend of its own (the previous one dropped first, so that two are
        never held at once), the inputs it takes, the model's state bound to it."""
        if self._backend is not None:
            self._backend = None
            gc.collect()  # the runtime's runners are closures over it: only the collector frees its arena
        self.plan = plan
        self._inputs = [a for a in plan.arguments if a.role == "input"]
        if self.target == "cuda":
            from .backend.cuda.runtime import CudaRuntime

            self._backend = CudaRuntime(plan, self._device, self._arenas)
        else:
            from .backend.emulator import Emulator

            self._backend = Emulator(plan)
        self._expected = [
            (
                torch.Size(plan.buffers[a.buffer].layout.shape),
                getattr(torch, plan.buffers[a.buffer].layout.dtype.name),
                self._device.index if self.target == "cuda" and device == "cuda" else -1,  # -1: the CPU
            )
            for a, device in zip(self._inputs, self._input_devices, strict=True)
        ]
        self._complex_dtypes = [(i, self._expected[i][1].to_complex()) for i in self._complex_inputs]
        # Inputs that may be Python numbers (0-d host tensors: the frontend lifts numbers into them).
        self._numbers = [
            (i, dtype) for i, (shape, dtype, index) in enumerate(self._expected) if not shape and index < 0
        ]
        written = {plan.root(b).id for seg in plan.segments for n in seg.nodes for b in n.writes}
        self._mutated_inputs = [i for i, a in enumerate(self._inputs) if a.buffer in written]
        # Inputs whose strides decide what eager computes (`_other_strides`): those the model writes and
        # those its results alias, with the example's strides; all of them where a result aliases another:
        # a reshape of it is a view or a copy by its strides, which follow the inputs' in eager, and it may
        # be a `contiguous()` of the tensor that others view (`y.contiguous()` is `y` itself where the
        # trace found `y` contiguous, a copy elsewhere: `y.contiguous(), y[0]` share memory only there).
        aliased = {r.source[1] for r in self._regenerated if r.source is not None and r.source[0] == "input"}
        results_alias = any(r.source is not None and r.source[0] == "result" for r in self._regenerated)
        self._stride_keyed = [
            (i, plan.buffers[a.buffer].layout)
            for i, a in enumerate(self._inputs)
            if results_alias or i in aliased or i in self._mutated_inputs
        ]
        # The state the graphs write (bound by `_bind_state`): their version counters move each call.
        self._written_state_mask = [
            a.buffer in written for a in plan.arguments if a.role not in ("input", "rng")
        ]
        self._writes = bool(self._mutated_inputs) or any(self._written_state_mask)
        self._written_state: list[torch.Tensor] = []
        # A call whose data fail a check may run again another way (`_another_way`) if it has changed
        # nothing outside itself by then (isolate-data-dependent schedules writes after the checks where it
        # can); the generators it drew from are set back first (`restore_generators`).
        self._rerunnable = not writes_before_a_check(plan)
        self._decides = any(n.op == aten.CHECK for step in plan.steps for n in step.nodes)
        self._draws = self._decides and draws_random_numbers(plan)
        # The backend's native replay (CUDA: `CudaRuntime._native_replay`) takes calls of tensors and Python
        # numbers, unless an input the model writes may alias another (`_refuse_aliased_inputs`).
        self._replay: Any = None
        self._replayable = not (self._mutated_inputs and len(self._inputs) > 1) and all(
            change.step is not None for change in self._attributes
        )
        self._bind_state(derive=False)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The hot path: the backend's native replay where it takes the call (`_replay`), else `_call`;
        calls under other settings than the trace's go to the program traced under theirs. One call at a
        time per compiled model (threads share its buffers and parameter words); a thread's first call
        makes the device's context current on it, as torch's first CUDA call on a thread does."""
        if kwargs:
            if self._parameters is None:
                self._parameters = _Parameters.of(self.model)
            args = self._parameters.by_position(self._arity, args, kwargs)
        with self._lock:
            if not self._thread.__dict__:
                self._enter_thread()
            if _any_autocast() or (_cublas_tf32(), _cudnn_tf32(), _default_dtype()) != self._plain_settings:
                program = self._under_settings(args)
                if program is None:
                    return self._eagerly(args, None, self._too_many_settings())
                if program is not self:
                    return program(*args)
            flat = args if self._structure is None else self._structure.flatten(args)
            if self._complex_inputs:
                flat = self._as_pairs(flat)
            if self._lifted:
                try:
                    flat = self._with_attributes(flat)
                except AssumptionFailed as exc:
                    return self._another_way(args, flat, exc, None)
            if torch.is_grad_enabled():
                flat = self._outside_autograd(flat)
            replay = self._replay
            if (
                replay is not None
                and replay is self._backend.native
                and self._epoch == _StateWatch.epoch
                and self._replaced == _StateWatch.replaced
                and (self._assigned == _StateWatch.assigned or self._reads_hold())
                and (self._reads_per_call_hold is None or self._reads_per_call_hold())
                and not (self._held_constants and self._held_constants_moved())
            ):
                out = replay(flat)
                if out is not None:
                    if self._writes:
                        self._move_versions(flat)
                    for change in self._attributes:  # (counters only: `_replayable`)
                        change.apply()
                    if self._single_output:
                        return out
                    return self._structured(out if type(out) is list else [out], flat)
            return self._call(args, flat)

    def _reads_hold(self) -> bool:
        """After numbers were assigned to watched attributes (a caller setting the temperature a program
        takes as an input): whether the values this program read, and its counters, still hold, noted as
        `_run` notes it."""
        if not all(read.holds() for read in self._reads) or not all(c.holds() for c in self._attributes):
            return False
        if not all(
            isinstance(_tensor_at(self.model, name), torch.Tensor) for name in self._attribute_constants
        ):
            return False  # (a number where the program reads a tensor attribute: `_run` says so)
        self._assigned = _StateWatch.assigned
        return True

    def _enter_thread(self) -> None:
        if self.target == "cuda":
            from .backend.cuda import driver

            with torch.cuda.device(self._device):
                driver.current_context(self._device.index)
        self._thread.entered = True

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        raise TypeError(
            "a compiled model holds device buffers and graphs and cannot be copied: copy the model "
            "(copy.deepcopy(model)) and compile the copy"
        )

    def __reduce__(self) -> Any:
        raise TypeError(
            "a compiled model holds device buffers and graphs and cannot be pickled: save the model's "
            "state_dict and compile again where it is loaded"
        )

    def _under_settings(self, args: tuple[Any, ...]) -> CompiledModel | None:
        """The program traced under the settings of this call, compiled from it if there is none yet (with
        a warning), or None past PYGRAPH_MAX_VARIANTS such programs besides the trace's."""
        now = global_settings.current()
        program = self._by_settings.get(now)
        if program is not None:
            return program
        flat = self._flat(args)
        self._explain_bad_inputs(self._numbers_as_tensors(flat) if self._numbers else flat)
        if len(self._by_settings) > knobs.max_variants:
            return None
        program = _compile(self.model, args, self._variant_options, self._outside, variant=True)
        program._dynamic, program._padding, program._by_settings = (
            self._dynamic,
            self._padding,
            self._by_settings,
        )
        self._by_settings[now] = program
        warnings.warn(
            f"{type(self.model).__name__}: this call runs under other settings than the compiled model was "
            f"traced under ({global_settings.differences(self._settings, now)}); pygraph traced and "
            "compiled the model again under these",
            stacklevel=3,
        )
        return program

    def _too_many_settings(self) -> str:
        return (
            f"calls come under more than PYGRAPH_MAX_VARIANTS={knobs.max_variants} settings besides the "
            f"trace's ({'; '.join(global_settings.describe(s) for s in self._by_settings)})"
        )

    def _outside_autograd(self, flat: tuple[Any, ...]) -> tuple[Any, ...]:
        """A call with grad mode on. pygraph compiles inference: its results carry no autograd history, so
        where eager would record one (a parameter or an input requiring grad) the call warns, once, rather
        than let gradients silently miss the model; inputs requiring grad are read detached."""
        recorded = [isinstance(x, torch.Tensor) and x.requires_grad for x in flat]
        if (self._trainable or any(recorded)) and not self._warned_autograd:
            self._warned_autograd = True
            warnings.warn(
                f"{type(self.model).__name__}: pygraph's results carry no autograd history (it compiles "
                "inference), so no gradient flows through the compiled model to its parameters or inputs; "
                "call it under torch.no_grad() or torch.inference_mode()",
                stacklevel=3,
            )
        if not any(recorded):
            return flat
        return tuple(x.detach() if r else x for x, r in zip(flat, recorded, strict=True))

    def _flat(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """The plan's inputs in a call's arguments (`InputStructure.flatten`), and in the model's attributes."""
        flat = args if self._structure is None else self._structure.flatten(args)
        if self._complex_inputs:
            flat = self._as_pairs(flat)
        return self._with_attributes(flat) if self._lifted else flat

    def _as_pairs(self, flat: tuple[Any, ...]) -> tuple[Any, ...]:
        """`flat` with each complex input as the real pair the program takes (`complex_as_real.py`): a view of
        the caller's tensor (of its resolved conjugate, where it has the conjugate bit)."""
        flat = list(flat)
        for i, want in self._complex_dtypes:
            x = flat[i]
            if not isinstance(x, torch.Tensor) or x.dtype != want:
                raise TypeError(
                    f"input '{self._inputs[i].name}' must be a {want} tensor, got {_described(x)}"
                )
            flat[i] = torch.view_as_real(x.resolve_conj())
        return tuple(flat)

    def _with_attributes(self, flat: tuple[Any, ...]) -> tuple[Any, ...]:
        """`flat` and the numbers and tensors of the attributes the program takes as inputs, as the model
        holds them now (a list, tuple or dict of tensors flattened); a number of another type than traced
        (an int for a float), a container of another structure, or a tensor of another shape, dtype or
        device, fails this program's assumption."""
        values: list[Any] = []
        for read, structure in zip(self._lifted, self._lifted_structures, strict=True):
            value = read.current()
            if type(value) is not type(read.value):
                raise self._other_attribute(read, value)
            if structure is None:
                values.append(value)
                continue
            leaves, found = pytree.tree_flatten(value)
            if found != structure:
                raise self._other_attribute(read, value)
            values.extend(leaves)
        expected = self._expected[len(self._expected) - len(values) :]
        for read, value, (shape, dtype, index) in zip(self._lifted_leaves, values, expected, strict=True):
            if isinstance(value, torch.Tensor) and not (
                value.shape == shape
                and value.dtype == dtype
                and (value.get_device() == index if index >= 0 else value.is_cpu)
            ):
                raise self._other_attribute(read, value)
        return (*flat, *values)

    def _other_attribute(self, read: AttributeRead, value: Any) -> AssumptionFailed:
        """The assumption failed where an attribute the program takes as an input holds `value`, or holds a
        tensor that does not fit (`value` one of its tensors)."""
        return AssumptionFailed(
            f"the program takes the attribute `{read.path}` as {_kind(read.value)}; this call finds "
            f"{_kind(value) if type(value) in (list, tuple, dict) else _described(value)}"
        )

    def _call(self, args: tuple[Any, ...], flat: tuple[Any, ...]) -> Any:
        """Cheap checks of the inputs (`flat`, those of the arguments `args` the plan takes), state rebound
        only after an event that may have moved it (see `_StateWatch`), then the backend; the output
        structure is rebuilt unless it is one tensor. Inputs of other shapes go to `_other_shapes`."""
        inputs = self._numbers_as_tensors(flat) if self._numbers else flat
        if len(inputs) != len(self._expected):
            self._explain_bad_inputs(inputs)
        for x, (shape, dtype, index) in zip(inputs, self._expected, strict=True):  # a loop: no generator
            if not (
                isinstance(x, torch.Tensor)
                and x.shape == shape
                and x.dtype == dtype
                and (x.get_device() == index if index >= 0 else x.is_cpu)
            ):
                return self._other_shapes(args, inputs)
        if self._stride_keyed and not all(_strided_as(inputs[i], layout) for i, layout in self._stride_keyed):
            return self._other_strides(args, inputs)
        if self._mutated_inputs and len(inputs) > 1:
            self._refuse_aliased_inputs(inputs)
        generators = generator_states(self._device) if self._draws else None
        if self._ways is not None and self._ways[0] is not None:  # recent calls took another way
            return self._another_way(args, inputs, None, generators)
        try:
            result = self._run(inputs)
        except AssumptionFailed as exc:
            return self._another_way(args, inputs, exc, generators)
        if (self._decides or self._attributes or self._reads) and self._ways is not None:
            self._took(None)
        return result

    def _run(self, inputs: Sequence[Any]) -> Any:
        """The traced program on inputs it takes."""
        failure = self._failure()
        if failure is not None:
            raise AssumptionFailed(failure)
        if self._state_reads:  # (one may have found its value in a replaced tensor: watched from now on)
            self._watch_state()
        assigned = _StateWatch.assigned
        if self._assigned != assigned:  # (a number where the program reads a tensor attribute: not a rebind)
            for name in [*self._attribute_constants, *self._held_constants]:
                self._attribute_tensor(name)
        self._assigned = assigned
        if (
            self._epoch != _StateWatch.epoch
            or (self._replaced != _StateWatch.replaced and self._attribute_constants_replaced())
            or (self._held_constants and self._attribute_constants_moved())
        ):
            self._bind_state()
        if self._derived_from and any(t._version != v for t, v in self._derived_from):
            self._derive(refresh=True)
        for name, (source, version, copy) in self._placed.items():
            if source._version != version:  # changed in place (load_state_dict): the copy follows, in order
                copy.copy_(source)
                self._placed[name] = (source, source._version, copy)
                self._watch_state()
        try:
            with pygraphs_own_ops():  # (a call under autocast: the program holds the casts it wants)
                results = self._backend(inputs)
        except UnrecordableCall as exc:  # the first call: its results stand, the next call runs a new plan
            results = exc.results
            self._keep_outside_graphs(exc)
        if self._writes:
            self._move_versions(inputs)
        for change in self._attributes:
            change.apply()
        if self._backend.native is not self._replay and self._replayable:
            self._replay = self._backend.native  # built by the first call, rebuilt after a rebind
            self._watch_state()
        return results[0] if self._single_output else self._structured(results, inputs)

    def _failure(self) -> str | None:
        """Why the traced program no longer computes what the model would: an attribute forward changes or
        reads found otherwise, buffers whose values it holds changed, its modules, hooks, shared tensors or
        modes changed; None where it holds."""
        for state in self._state_reads:
            if not state.holds():
                return (
                    f"forward computed a size or a condition from the buffer {state.describe()} in the call "
                    f"the program was traced from; this call finds {state.current()}"
                )
        for change in self._attributes:
            if not change.holds():
                return (
                    f"forward changes the Python attribute {change.describe()} in the call the program was "
                    f"traced from; this call finds {_described(change.module.__dict__.get(change.name, MISSING))}"
                )
        stale = self._epoch != _StateWatch.epoch or self._assigned != _StateWatch.assigned
        for read in self._reads if stale else self._reads_per_call:
            if not read.holds():
                return (
                    f"forward read the Python attribute {read.describe()} in the call the program was "
                    f"traced from; this call finds {_described(read.current())}"
                )
        if self._epoch == _StateWatch.epoch:
            return None
        changed = self._tree.difference(self.model)
        if changed is not None:
            return f"{changed}: a call now runs a program traced through the modules and hooks it finds"
        for names in self._tied:
            if len({id(_tensor_at(self.model, name)) for name in names}) != 1:
                return (
                    f"{', '.join(f'`{n}`' for n in names)} shared one tensor when the program was traced "
                    "and no longer do: a call runs a program traced from the model as it is now"
                )
        if _modes(self.model) != self._modes:
            return (
                f"{type(self.model).__name__} was compiled in "
                f"{'training' if self._modes[0] else 'eval'} mode and `.train()` or `.eval()` changed "
                "the mode of its modules since: a call in the new modes runs a program traced in them"
            )
        return None

    def _structured(self, flat: list[Any], inputs: Sequence[Any]) -> Any:
        """The model's output structure around a call's flat results, with the results the call rebuilds
        from its `inputs` and the model's state (`frontend/outputs.py`) in their places, and its numbers
        as numbers."""
        flat = list(flat)
        for result in self._regenerated:
            flat.insert(result.position, None)
        for result in self._regenerated:  # (from results the program computed, all in place by now)
            flat[result.position] = result.value(inputs, flat, self.model)
        for position in self._complex_results:  # (pairs of reals in the program: `complex_as_real.py`)
            if not flat[position].is_complex():  # (a complex state tensor returned as it is already is)
                flat[position] = torch.view_as_complex(flat[position])
        for position in self._number_results:  # (one the caller passed, returned: a number on the native
            # replay, else the 0-d tensor holding it exactly)
            if isinstance(flat[position], torch.Tensor):
                flat[position] = flat[position].item()
        out = pytree.tree_unflatten(flat, self._out_spec)
        return self._set_assigned(out) if self._assigns else out

    def _set_assigned(self, out: AssignedTensors) -> Any:
        """Sets the attributes forward set to other tensors to this call's (`out.values`), as eager's call
        leaves them, and returns the model's output. One the program takes as an input is set in place of
        an assignment (the next call passes it again), and a list or dict that forward changed in place is
        changed in place; programs that read their tensors as constants see the change through
        `_StateWatch.replaced`. Any other (it held None, a number or nothing before) is assigned as a caller
        would: programs that read it, as a number say, check it again."""
        current = self._replaced == _StateWatch.replaced
        values = pytree.tree_map(torch.clone, out.values) if self._copy_assigned else out.values
        for (holder, name, taken, in_place), value in zip(self._assigns, values, strict=True):
            held = vars(holder).get(name)
            if in_place and type(held) is type(value):  # (a list or dict: the object eager's call keeps)
                set_items(held, value)
                _StateWatch.replaced += 1
            elif taken:
                vars(holder)[name] = value
                _StateWatch.replaced += 1
            else:
                setattr(holder, name, value)
        if current:  # (this program takes those as inputs: what it set moves nothing it reads)
            self._replaced = _StateWatch.replaced
        return out.output

    def _another_way(
        self,
        args: tuple[Any, ...],
        inputs: Sequence[Any],
        failure: AssumptionFailed | None,
        generators: list[Any] | None,
    ) -> Any:
        """A call of a model whose data decide its way through conditions on data (`frontend/branches.py`),
        or whose Python attributes do (`frontend/python_state.py`): the traced program failed a check or
        found other attribute values (`failure`), or recent calls took a way traced later.
        Runs the call with the programs traced so far, in that order (`_ways`, None standing for the traced
        one), or traces one from this call (as a shape variant is compiled, with a warning), at most
        PYGRAPH_MAX_VARIANTS programs (past it, where no program can be traced from the call, and where the
        program traced from the call takes another way on it than the model did, the model runs the call
        itself); each try with the generators as the call
        found them (`generators`, where it draws random numbers). A program that wrote an input or its state
        before the check that failed cannot run the call again: then that failure is raised."""
        if self._ways is None:  # (a way's own program: the model that traced it tries the others)
            raise failure
        failed = None  # the program that failed last: None, the traced one
        first = failure  # why the program the call came to first does not hold (what the warnings say)
        for way in [w for w in self._ways if failure is None or w is not None]:
            if failure is not None:
                self._refuse_running_again(failed, failure)
            if generators is not None:
                restore_generators(generators)
            try:
                result = (
                    self._run(inputs) if way is None else way(*args)
                )  # (its native replay, where it has one)
            except AssumptionFailed as exc:
                failure, failed, first = exc, way, first or exc
                continue
            self._took(way)
            return result
        self._refuse_running_again(failed, failure)
        if len(self._ways) >= knobs.max_variants:
            return self._eagerly(
                args,
                generators,
                f"calls take more than PYGRAPH_MAX_VARIANTS={knobs.max_variants} ways ({first})",
            )
        try:
            way = self._compile_way(args)
            way._ways = None
            if generators is not None:
                restore_generators(generators)
            result = way._call(args, way._flat(args))
        except ExportError as exc:  # no program takes this way: the model runs the call (eager raises
            # what it raises on it, a failing torch._check's error; torch's own tracing failures pass)
            return self._eagerly(args, generators, f"{first}\n(no program could be traced from it: {exc})")
        except AssumptionFailed as exc:
            way._refuse_running_again(None, exc)
            return self._eagerly(
                args,
                generators,
                f"{exc}\n(the program traced from this very call fails its own check on it: the model "
                "may raise on this call (eager's error follows if so), or the value decided on lies where "
                "the compiled program's rounding and the model's differ; computing both ways and choosing "
                "with torch.where avoids deciding in Python)",
            )
        self._ways.append(way)
        self._took(way)
        inputs_now = (
            f" with {', '.join(f'`{read.path}`' for read in way._lifted)} as inputs of the program, which "
            "then runs calls finding any values there"
            if way._lifted
            else ""
        )
        warnings.warn(
            f"{type(self.model).__name__}: {first}\npygraph traced and compiled the way this call takes "
            f"as well{inputs_now} ({len(self._ways)} ways for these input shapes now, at most "
            "PYGRAPH_MAX_VARIANTS)",
            stacklevel=4,
        )
        return result

    def _compile_way(self, args: tuple[Any, ...]) -> CompiledModel:
        """The program for a call that no way traced so far takes: where it finds numbers in attributes
        that the trace read as others, one taking them as inputs, unless forward uses them in Python (or
        where an op needs them known when compiled: `PassError`, `UnsupportedError`). With dims declared
        dynamic, the way proves anew along which calls of other sizes may pad (`declared_dims`, on the model
        as it is now), so that such calls pad with it (`_other_shapes`)."""
        changed = tuple(sorted((r for r in self._reads if r.number_changed()), key=lambda r: r.path))
        way = None
        if changed:
            with contextlib.suppress(ExportError, PassError, UnsupportedError):
                way = _compile(
                    self.model, args, self._variant_options, self._outside, variant=True, attributes=changed
                )
        if way is None:
            way = _compile(self.model, args, self._variant_options, self._outside, variant=True)
        if self._dynamic_shapes is not None:
            try:
                way._dynamic, way._padding = declared_dims(self.model, args, self._dynamic_shapes)
            except ExportError:  # (no symbolic trace of the model as it is now: each size compiles)
                way._dynamic = self._dynamic
        return way

    def _eagerly(self, args: tuple[Any, ...], generators: list[Any] | None, why: str) -> Any:
        """A call that no compiled program takes and for which none is compiled (`why`): the model runs it
        itself, as it would without pygraph (warned once per compiled model), with the generators as the
        call found them (`generators`)."""
        if not self._warned_eager:
            self._warned_eager = True
            warnings.warn(
                f"{type(self.model).__name__}: {why}\npygraph runs such calls eagerly, without graphs",
                stacklevel=5,
            )
        if generators is not None:
            restore_generators(generators)
        return self.model(*args)

    def _took(self, way: CompiledModel | None) -> None:
        """Orders the ways after a call that `way` ran: by their last use, except that the first changes
        only when two calls in a row took another way. So a rare call taking another way, or calls
        alternating between two (which no order serves better), leave the first as it is, and a run of
        calls taking another way tries it first from its third call."""
        ways, last = self._ways, self._last_way
        self._last_way = way
        if way is ways[0]:
            return
        ways.remove(way)
        ways.insert(0 if way is last else 1, way)

    def _refuse_running_again(self, program: CompiledModel | None, failure: AssumptionFailed) -> None:
        """Raises `failure` where `program` (None: the traced one) writes an input or its state before its
        checks: the call that failed one has written them already."""
        if (self if program is None else program)._rerunnable:
            return
        raise AssumptionFailed(
            f"{failure}\n(pygraph runs such a call again, traced the other way, only where the program "
            "writes no input or buffer before its checks of the data; this one does, and this call has "
            "written them already)"
        ) from None

    def _watch_state(self) -> None:
        """Gives the native replay the tensors whose change it must hand to `_call` (derived state's sources,
        host tensors placed on the GPU, buffers whose values the program holds), with the versions their
        copies and values follow."""
        if self._replay is not None:
            placed = tuple((source, version) for source, version, _ in self._placed.values())
            held = tuple((state.tensor, state.version) for state in self._state_reads)
            self._replay.set_watch(tuple(self._derived_from) + placed + held)

    def _move_versions(self, inputs: Sequence[torch.Tensor]) -> None:
        """Moves the version counters of the buffers and inputs the call wrote, as eager's in-place ops do:
        another compiled model's derived state read from them (`_derive`) and autograd's checks of saved
        tensors see the change."""
        increment_version([*self._written_state, *(inputs[i] for i in self._mutated_inputs)])

    def _refuse_aliased_inputs(self, inputs: tuple[torch.Tensor, ...]) -> None:
        """The model writes an input in place: if it shares memory with another input, eager would let the
        write show through the other one mid-call, which a compiled program cannot reproduce."""
        spans = [
            (x.untyped_storage().data_ptr(), x.untyped_storage().data_ptr() + x.untyped_storage().nbytes(), i)
            for i, x in enumerate(inputs)
        ]
        for i in self._mutated_inputs:
            start, stop, _ = spans[i]
            for other_start, other_stop, j in spans:
                if j != i and start < other_stop and other_start < stop:
                    raise ValueError(
                        f"input '{self._inputs[i].name}' is written in place by the model and shares memory with "
                        f"input '{self._inputs[j].name}'; pass separate tensors"
                    )

    def _numbers_as_tensors(self, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
        """Python numbers for host scalar inputs, as 0-d tensors of the traced dtype (their bits go into the
        table); a float where an integer was traced is refused rather than truncated."""
        converted = list(inputs)
        for i, dtype in self._numbers:
            value = converted[i] if i < len(converted) else None
            if isinstance(value, (bool, int, float)):
                if isinstance(value, float) and not dtype.is_floating_point:
                    raise TypeError(
                        f"input '{self._inputs[i].name}' was traced as {dtype}, got the float {value}"
                    )
                converted[i] = torch.scalar_tensor(value, dtype=dtype)
        return tuple(converted)

    def _bind_state(self, derive: bool = True) -> None:
        """Parameters, buffers and constants as the model holds them now (the backend rebuilds graphs whose
        addresses changed); done again only after something may have replaced or moved them, which may
        have replaced the tensors derived state reads too (`derive`)."""
        self._epoch, self._assigned, self._replaced = (
            _StateWatch.epoch,
            _StateWatch.assigned,
            _StateWatch.replaced,
        )
        self._bound_attributes = {
            name: self._held_now(name) for name in [*self._attribute_constants, *self._held_constants]
        }
        self._trainable = any(p.requires_grad for p in self.model.parameters())  # (`_outside_autograd`)
        if self._derived is not None and derive:
            self._derive(refresh=False)
        tensors = self._state_tensors()
        self._backend.bind_state(tensors)
        self._written_state = [t for t, w in zip(tensors, self._written_state_mask, strict=True) if w]
        self._watch_state()

    def _take_attributes(self, reads: tuple[AttributeRead, ...]) -> None:
        """Calls pass the attributes of `reads` after their own inputs (`_with_attributes`)."""
        self._lifted = reads
        self._lifted_structures = tuple(
            pytree.tree_structure(r.value) if type(r.value) in (list, tuple, dict) else None for r in reads
        )
        self._lifted_leaves = tuple(r for r in reads for _ in pytree.tree_leaves(r.value))

    def _attribute_constants_replaced(self) -> bool:
        """After a compiled call set tensors in attributes (`_StateWatch.replaced`): whether one that this
        program reads as a constant holds another tensor than the one bound."""
        self._replaced = _StateWatch.replaced
        return self._attribute_constants_moved()

    def _attribute_constants_moved(self) -> bool:
        return any(self._held_now(name) is not t for name, t in self._bound_attributes.items())

    def _held_constants_moved(self) -> bool:
        """Whether a list, tuple or dict in an attribute holds another tensor than the one bound where the
        program reads a constant (no assignment says so: the replay asks every call)."""
        bound = self._bound_attributes
        return any(held.current() is not bound[name] for name, held in self._held_constants.items())

    def _derived_sources(self) -> list[torch.Tensor]:
        """The tensors derived state reads, parameters as the model holds them (not detached: their identity
        tells `SharedValues` that two programs read the same tensor; the recipe runs without autograd)."""
        return [self._state(role, name, detached=False) for role, name in self._derived.sources]

    def _derive(self, refresh: bool) -> None:
        """Computes the derived state from the model's tensors; `refresh` writes the new values into the
        tensors the graphs already read (in stream order, before the next launch)."""
        derived, sources = self._derived, self._derived_sources()
        shared = SharedValues.of(self.model, self._settings)
        with pygraphs_own_ops():
            values = derived.compute(sources)
        if refresh:  # (another program may hold the same tensors: it sees their versions and refreshes too)
            for name, key, reads, value in zip(
                derived.names, derived.keys, derived.reads, values, strict=True
            ):
                self._derived_values[name].copy_(value)
                shared.record(key, [sources[i] for i in reads], self._derived_values[name])
        else:
            values = shared.share(derived, sources, values)
            self._derived_values = dict(zip(derived.names, values, strict=True))
        self._derived_from = [(t, t._version) for t in sources]
        self._watch_state()

    def _state_tensors(self) -> list[torch.Tensor]:
        """The tensors of the plan's parameters, buffers and constants, where the plan places them."""
        return [
            self._placed_state(a.name, self._state(a.role, a.name), a.device)
            for a in self.plan.arguments
            if a.role not in ("input", "rng")
        ]

    def _placed_state(self, name: str, tensor: torch.Tensor, device: str) -> torch.Tensor:
        """The tensor where the plan places it: a host tensor of a GPU program that the plan puts on the GPU
        is copied there once, and again only when the model changes it (see `__call__`)."""
        if self.target != "cuda" or device != "cuda" or tensor.is_cuda:
            return tensor
        known = self._placed.get(name)
        if known is None or known[0] is not tensor:
            known = (tensor, tensor._version, tensor.to(self._device))
            self._placed[name] = known
        return known[2]

    def _explain_bad_inputs(self, inputs: tuple[Any, ...]) -> None:
        """Raises naming the first input, and what of it, that the plan does not take; sizes of dims
        declared dynamic are `_other_shapes`'s to judge."""
        if len(inputs) != len(self._inputs):
            raise TypeError(
                f"the compiled model takes {len(self._inputs)} inputs ({', '.join(self._input_names)}), got {len(inputs)}"
            )
        for i, (spec, value) in enumerate(zip(self._inputs, inputs, strict=True)):
            layout = self.plan.buffers[spec.buffer].layout
            if not isinstance(value, torch.Tensor):
                raise TypeError(f"input '{spec.name}' must be a tensor, got {type(value).__name__}")
            if str(value.dtype) != f"torch.{layout.dtype.name}":
                raise TypeError(
                    f"input '{spec.name}' has dtype {value.dtype}, expected torch.{layout.dtype.name}"
                )
            index = self._expected[self._inputs.index(spec)][2]
            want_device = torch.device("cpu") if index < 0 else torch.device("cuda", index)
            if value.device != want_device:
                raise ValueError(f"input '{spec.name}' is on {value.device}, expected a {want_device} tensor")
            if value.dim() != layout.rank:
                raise ValueError(
                    f"input '{spec.name}' has {value.dim()} dims, expected {layout.rank} (shape {list(layout.shape)})"
                )
            for dim, (got, want) in enumerate(zip(value.shape, layout.shape, strict=True)):
                if got != want and (i, dim) not in self._dynamic:
                    raise ValueError(
                        f"dimension {dim} of input '{spec.name}' is {got}, the compiled graphs were built for {want}; "
                        "declare it in dynamic_shapes to compile graphs for other sizes"
                    )

    def _other_shapes(self, args: tuple[Any, ...], inputs: tuple[Any, ...]) -> Any:
        """Inputs the plan does not take: the variant compiled for their shapes, if any (its own checks
        judge the rest), else `_padded`'s or `_new_variant`'s. Calls pad only while the traced program
        holds for the model as it is (`_failure`): the proof that they may is that program's."""
        key = tuple(tuple(x.shape) if isinstance(x, torch.Tensor) else () for x in inputs)
        # (a program that sets attributes to its results would set them to padded ones: such calls compile)
        pads = bool(self._padding) and not self._assigns and self._failure() is None
        if self._padding and not pads and self._ways:  # (the model's Python state moved on since the trace)
            way = next((w for w in self._ways if w is not None and w._failure() is None), None)
            if way is not None:  # the way traced from the model as it is now pads by its own proof
                return way._call(args, way._flat(args))
        padded = self._padded_calls.get(key) if pads else None
        if padded is not None:
            return self._run_padded(padded, args, inputs)
        variant = self._variants.get(key)
        if variant is None:
            sizes = self._declared_sizes(inputs, key)
            padded = self._padded(args, inputs, key, sizes) if pads else None
            if padded is not None:
                return self._run_padded(padded, args, inputs)
            variant = self._new_variant(args, key)
        return variant(*args) if variant is not None else self._eagerly(args, None, self._too_many_shapes())

    def _other_strides(self, args: tuple[Any, ...], inputs: tuple[Any, ...]) -> Any:
        """A call whose inputs that the model writes or that its results alias (all of them, where results
        alias each other) come in other strides than the example's. Eager's `reshape`, `flatten` and
        `contiguous()` return a view of a tensor or a copy by the strides they find, so where the model
        writes an input, or returns one (`x.contiguous()` is `x` itself only where `x` is contiguous), or
        returns a tensor beside a view or reshape of it, what a call computes or aliases depends on them:
        such calls run the program traced from inputs of their strides (compiled once, as a shape
        variant, with a warning)."""
        key = tuple(inputs[i].stride() for i, _ in self._stride_keyed)
        variant = self._stride_variants.get(key)
        if variant is None:
            if len(self._stride_variants) >= knobs.max_variants:
                return self._eagerly(
                    args,
                    None,
                    f"inputs the model writes or returns come in more than PYGRAPH_MAX_VARIANTS="
                    f"{knobs.max_variants} strides besides the example's",
                )
            variant = _compile(self.model, args, self._variant_options, self._outside, variant=True)
            variant._dynamic, variant._padding = self._dynamic, self._padding
            self._stride_variants[key] = variant
            names = ", ".join(f"'{self._inputs[i].name}'" for i, _ in self._stride_keyed)
            warnings.warn(
                f"{type(self.model).__name__}: this call's inputs {names}, which the model writes, returns "
                f"views of or computes results that alias each other from, come with other strides than the example's "
                f"({key}); eager's reshapes alias or copy by strides, so pygraph traced and compiled the "
                "model again for these",
                stacklevel=4,
            )
        return variant(*args)

    def _too_many_shapes(self) -> str:
        return (
            f"calls come with more than PYGRAPH_MAX_VARIANTS={knobs.max_variants} input shapes besides the "
            f"example's (compiled for {', '.join(str(key) for key in self._variants)})"
        )

    def _declared_sizes(self, inputs: tuple[Any, ...], key: tuple[tuple[int, ...], ...]) -> dict[str, int]:
        """The sizes of the symbols of dims declared in `dynamic_shapes` in inputs where only such dims differ
        from the example's, within the ranges export kept for them and equal where they share a symbol; for
        anything else an error naming the input and what differs."""
        self._explain_bad_inputs(inputs)
        sizes: dict[str, tuple[int, str]] = {}
        for (i, dim), spec in self._dynamic.items():
            if spec.formula is not None:
                continue  # a derived dim: its formula is checked below, once its symbols' sizes are known
            got, where = inputs[i].shape[dim], f"dimension {dim} of input '{self._inputs[i].name}'"
            if got < spec.lower or (spec.upper is not None and got > spec.upper):
                upper = "inf" if spec.upper is None else spec.upper
                raise ValueError(
                    f"{where} is {got}, outside the range [{spec.lower}, {upper}] of dynamic_shapes"
                )
            seen = sizes.setdefault(spec.symbol, (got, where))
            if seen[0] != got:
                raise ValueError(
                    f"{where} is {got} and {seen[1]} is {seen[0]}: dynamic_shapes made them one dim"
                )
        known = {symbol: size for symbol, (size, _) in sizes.items()}
        for (i, dim), spec in self._dynamic.items():
            want = spec.expected(known)
            if want is not None and inputs[i].shape[dim] != want:
                names = ", ".join(
                    f"{s} is {sizes[str(s)][1]}" for s in sorted(spec.formula.free_symbols, key=str)
                )
                raise ValueError(
                    f"dimension {dim} of input '{self._inputs[i].name}' is {inputs[i].shape[dim]}, "
                    f"dynamic_shapes made it {spec.formula} = {want} ({names})"
                )
        if key == self._example_key():
            raise AssertionError("inputs were refused but no check fails")  # unreachable: the checks agree
        return known

    def _example_key(self) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(shape) for shape, _, _ in self._expected)

    def _padded(
        self,
        args: tuple[Any, ...],
        inputs: tuple[Any, ...],
        key: tuple[tuple[int, ...], ...],
        sizes: dict[str, int],
    ) -> PaddedCall | None:
        """How calls of these inputs' shapes run padded (`padding.py`), with the program of the padded shapes
        (compiled now where there is none), kept for later calls; None where no symbol they size pads (a
        size of 1, one at its bucket already, a symbol along which ops mix entries), where results alias
        each other (a cut result might have to be a copy), where the program decides on values of the data
        (the proof covers the way the example took), or past PYGRAPH_MAX_VARIANTS."""
        if self._decides or any(r.source is not None and r.source[0] == "result" for r in self._regenerated):
            return None
        example = {
            s.symbol: self._expected[i][0][d] for (i, d), s in self._dynamic.items() if s.formula is None
        }
        upper = {s.symbol: s.upper for s in self._dynamic.values() if s.formula is None}
        buckets = {}
        for symbol, n in sizes.items():
            padding = self._padding.get(symbol)
            m = bucket(n, example[symbol], upper[symbol])
            if padding is not None and padding.refusal is None and n >= 2 and m != n:
                buckets[symbol] = (n, m)
        if not buckets:
            return None
        pads = []
        for (i, dim), spec in self._dynamic.items():
            for symbol in (s for s in spec.symbols() if s in buckets):
                n, m = buckets[symbol]
                pads.append((i, dim, inputs[i].shape[dim] // n, n, m))
        cuts = [
            (leaf, dim, *buckets[symbol])
            for symbol in buckets
            for leaf, dims in enumerate(self._padding[symbol].outputs)
            for dim in dims
        ]
        padded = PaddedCall(pads, cuts, len(self._padding[next(iter(buckets))].outputs))
        replaced = padded.padded(inputs)
        padded_key = tuple(tuple(replaced[i].shape) if i in replaced else k for i, k in enumerate(key))
        padded.program = self if padded_key == self._example_key() else self._variants.get(padded_key)
        if padded.program is None:
            padded.program = self._new_variant(self._replaced_args(args, replaced), padded_key)
            if padded.program is None:
                return None
        self._padded_calls[key] = padded
        return padded

    def _run_padded(self, padded: PaddedCall, args: tuple[Any, ...], inputs: tuple[Any, ...]) -> Any:
        """A call run by the program of its padded shapes, its results cut to its own sizes."""
        return padded.cut(padded.program(*self._replaced_args(args, padded.padded(inputs))))

    def _replaced_args(self, args: tuple[Any, ...], replaced: dict[int, torch.Tensor]) -> tuple[Any, ...]:
        """`args` with the plan's inputs at the indices of `replaced` replaced."""
        replaced = {
            i: torch.view_as_complex(x) if i in self._complex_inputs else x for i, x in replaced.items()
        }  # (a complex input's padded pair, as the caller's tensor it replaces)
        if self._structure is None:
            return tuple(replaced.get(i, a) for i, a in enumerate(args))
        return self._structure.replaced(args, replaced)

    def _new_variant(self, args: tuple[Any, ...], key: tuple[tuple[int, ...], ...]) -> CompiledModel | None:
        """A variant compiled for inputs of shapes `key` (checked by `_declared_sizes`), kept for later
        calls; None past PYGRAPH_MAX_VARIANTS variants: compiling one per call of a workload whose sizes keep
        changing would cost far more than it saves, so such calls run eagerly."""
        if len(self._variants) >= knobs.max_variants:
            return None
        variant = self._variants[key] = _compile(
            self.model, args, self._variant_options, self._outside, variant=True
        )
        return variant

    def _state(self, role: str, name: str, detached: bool = True) -> torch.Tensor:
        try:
            if role == "parameter":
                parameter = self.model.get_parameter(name)
                return parameter.detach() if detached else parameter
            if role == "buffer":
                return self.model.get_buffer(name)
        except AttributeError as exc:  # deleted, or set to None, since the trace
            raise AssumptionFailed(
                f"the {role} `{name}` the program reads is gone from the model ({exc}): a call runs a "
                "program traced from the model as it is now"
            ) from None
        if role == "derived":
            return self._derived_values[name]
        if name in self._attribute_constants or name in self._held_constants:
            return self._attribute_tensor(name)
        return self._constants[name]

    def _held_now(self, name: str) -> Any:
        """What the model holds now where the program reads the constant `name`: a module's attribute, or
        an item of a list, tuple or dict in one."""
        held = self._held_constants.get(name)
        return _tensor_at(self.model, name) if held is None else held.current()

    def _attribute_tensor(self, name: str) -> torch.Tensor:
        """The tensor an attribute of a module holds now where the program reads the constant `name`, where
        it has the layout the program was compiled for."""
        compiled, now = self._constants[name], self._held_now(name)
        if not (
            isinstance(now, torch.Tensor)
            and (now.shape, now.dtype, now.device, now.stride())
            == (compiled.shape, compiled.dtype, compiled.device, compiled.stride())
        ):
            where = self._held_constants[name].path if name in self._held_constants else name
            raise AssumptionFailed(
                f"the tensor attribute `{where}` the program reads was {_described(compiled)} when the program "
                f"was traced and is {_described(now)} now: a call runs a program traced from the model as it is now"
            )
        return now.detach()

    def ir(self, stage: str) -> str:
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {STAGES}, not {stage!r}")
        return self._stages[stage]

    def _profile(self, example_inputs: tuple[torch.Tensor, ...], cost_key: str) -> None:
        """Measures each segment as a graph and as eager launches, stores the figures for later
        compilations, and lets select-graphs choose again from them; records how each input and output is
        reached, as the all-graphs runtime measured it (`explain().io`)."""
        from .backend.cuda.profile import profile_segments
        from .ir import costs

        state, inputs = self._state_tensors(), self._numbers_as_tensors(example_inputs)
        device = self._backend.device
        # The measuring runtimes each hold an arena and recordings: dropping this one first (a cycle: its
        # runners are closures over it) keeps the build's peak memory at one runtime's, not two or three.
        self._backend = None
        gc.collect()
        segments, io = profile_segments(self._stages["plan"], state, inputs, device, self._arenas)
        costs.record_segments(cost_key, segments)
        module = parse(self._stages["plan"])
        run_pipeline(module, parse_pipeline(f"select-graphs{{costs={cost_key}}}"))
        self._stages["plan"] = print_module(module, debug_info=True)
        self._record_io(*io)
        self._use_plan(read_plan(parse(self._stages["plan"])))

    def _keep_outside_graphs(self, failure: UnrecordableCall) -> None:
        """An op whose call could not be recorded runs between graphs from now on, every call of it, as if
        tagged `cudagraph_unsafe`: the torch stage is lowered again with those calls marked
        `pygraph.outside_graphs`, and a warning says so. Raises `failure` where that would change nothing
        (the location names no FX node, or the op is marked already: an overridden stage)."""
        context = make_context()
        module = parse(self._stages["torch"], context)
        op = called_op(module, node_name(failure.location) or "")
        if op is None or op in self._outside:
            raise failure
        warnings.warn(
            f"{type(self.model).__name__}: {user_location(failure.location)}: {op} cannot be recorded into a "
            f"CUDA graph ({failure.cause}); compiled again with every call of it between graphs (an op tagged "
            "torch.Tag.cudagraph_unsafe is put there from the start)",
            stacklevel=4,
        )
        self._outside[op] = f"recording it into a CUDA graph failed: {failure.cause}"
        keep_outside_graphs(module, self._outside)
        stages: dict[str, str] = {}
        module = _lower(type(self.model).__name__, module, context, self._pipelines, stages)
        self._stages = stages
        self._use_plan(read_plan(module))

    def _record_io(
        self, measured_inputs: list[dict[str, float]], measured_outputs: list[dict[str, float]]
    ) -> None:
        """The measured cost of each input's and output's mechanism, into the plan's text (`pygraph.io_measured`)."""
        from .ir import attrs
        from .ir import dialect as d
        from .ir._mlir import ir
        from .passes.base import main_function

        module = parse(self._stages["plan"])
        main = main_function(module)

        def annotated(attr: ir.Attribute, measured: dict[str, float]) -> ir.DictAttr:
            fields = {a.name: a.attr for a in ir.DictAttr(attr)}
            fields[d.IO_MEASURED] = ir.DictAttr.get({k: attrs.f64(v) for k, v in measured.items()})
            return ir.DictAttr.get(fields)

        with module.context, main.location:
            args = list(ir.ArrayAttr(main.attributes["arg_attrs"]))
            positions = [a.buffer for a in self.plan.arguments]
            inputs = [a for a in self.plan.arguments if a.role == "input"]
            for arg, measured in zip(inputs, measured_inputs, strict=True):
                i = positions.index(arg.buffer)
                args[i] = annotated(args[i], measured)
            results = [
                annotated(r, m)
                for r, m in zip(ir.ArrayAttr(main.attributes["res_attrs"]), measured_outputs, strict=True)
            ]
            main.attributes["arg_attrs"] = ir.ArrayAttr.get(args)
            main.attributes["res_attrs"] = ir.ArrayAttr.get(results)
        self._stages["plan"] = print_module(module, debug_info=True)

    def rebind(self) -> None:
        """Rebinds parameters and buffers at the next call of every program compiled for the model (for
        other settings, shapes and ways too), after it checks its assumptions as after any event: needed
        only after `param.data = other` (see `_StateWatch`)."""
        for program in self._by_settings.values():
            program._as_after_an_event()

    def _as_after_an_event(self) -> None:
        self._epoch = self._assigned = -1  # (never a count: the next call checks and rebinds, `_run`)
        for program in [*self._variants.values(), *self._stride_variants.values(), *(self._ways or ())]:
            if program is not None:
                program._as_after_an_event()

    def stats(self) -> dict[str, Any]:
        return self._backend.stats()

    def explain(self) -> Explanation:
        explanation = explain_plan(self.plan, parse(self._stages["plan"]))
        for symbol in sorted({spec.symbol for spec in self._dynamic.values() if spec.formula is None}):
            padding = self._padding.get(symbol)
            explanation.dynamic.append(
                {
                    "symbol": symbol,
                    "dims": [
                        f"dim {dim} of '{self._inputs[i].name}'"
                        for (i, dim), spec in self._dynamic.items()
                        if symbol in spec.symbols()
                    ],
                    "refusal": "PYGRAPH_PADDING=off" if padding is None else padding.refusal,
                }
            )
        for state in self._state_reads:  # (frontend/state_values.py)
            explanation.transforms.append(
                {
                    "pass": "state-values",
                    "what": f"sizes or conditions computed from the buffer {state.describe()} are held by the "
                    "program; each call checks the buffer's version",
                    "location": f"{type(self.model).__name__}.forward",
                }
            )
        return explanation
