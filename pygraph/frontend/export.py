"""torch.export with pygraph's settings: non-strict tracing, then pygraph's decomposition table."""

from __future__ import annotations

import contextlib
import inspect
import io
import sys
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import sympy
import torch
import torch._decomp.decompositions as torch_decompositions
from torch._subclasses.fake_tensor import FakeTensor
from torch._subclasses.functional_tensor import FunctionalTensor
from torch.export.graph_signature import InputKind, TensorArgument
from torch.fx.experimental.proxy_tensor import get_proxy_mode
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

from ..knobs import knobs
from .align_matmuls import align_matmul_outputs
from .arange_indexing import arange_indexing_as_slices
from .attention import route_attentions
from .branches import READS_DATA, check_branches, draft_export, failing_line, quiet_tracing, user_frames
from .channels_last import convolutions_channels_last
from .common_subexpressions import merge_common_subexpressions
from .complex_as_real import complex_as_real
from .decompositions import TABLE
from .fold_constants import fold_constants, fresh_constants
from .freeze import fold_batch_norms
from .numbers import lift_numbers, numbers_promoted_as_python, user_placeholders
from .pooling import pooling_as_views
from .python_state import (
    AttributeRead,
    attribute_holders,
    attributes_as_inputs,
    containers,
    put_back,
    refuse_values_read,
)
from .rewrite import keep_output_layouts, output_layouts
from .row_prefixes import Padding, paddable
from .settings import pygraphs_own_ops
from .slice_scatters import slice_scatters_as_concatenations
from .spatial_means import split_spatial_means
from .splits import splits_as_slices
from .state_aliases import constants_as_state
from .state_values import StateValues, knowing_state_values
from .structure import drop_constant_inputs
from .unbinds import unbinds_as_selects
from .unsqueeze_operands import unsqueeze_operands

# PYGRAPH_GPU_LAYOUTS: the devices whose programs get layouts and kernel choices meant for the GPU
# (channels_last.py, spatial_means.py, align_matmuls.py, attention.py)
_GPU_LAYOUT_DEVICES = {"auto": ("cuda",), "on": ("cuda", "cpu"), "off": ()}


class ExportError(Exception):
    """torch.export could not capture the model; the message carries torch's."""


def export_program(
    model: torch.nn.Module,
    example_inputs: tuple,
    dynamic_shapes: Any = None,
    freeze: bool = False,
    warn: bool = True,
    attributes: tuple[AttributeRead, ...] = (),
    state_values: StateValues | None = None,
) -> torch.export.ExportedProgram:
    """Exports `model` called with `example_inputs` (tensors; numbers become 0-d tensors, `numbers.py`) and
    decomposes with `TABLE`; tensors reached outside the module's attributes that are its state are that
    state (`state_aliases.py`). The numbers in the attributes of `attributes` are inputs after the
    example's (`python_state.attributes_as_inputs`). With `state_values`, a model computing sizes from its
    small buffers is traced knowing their values (`state_values.py`): `state_values.reads()` says which.

    Unbinds become one select per piece (`unbinds.py`), complex values pairs of reals (`complex_as_real.py`), and writes into slices of tensors the
    program computes concatenations (`slice_scatters.py`). A model that decides in Python from values of its data is traced the way `example_inputs` take, with
    checks that each call's data take it too (`branches.py`; a warning names those lines where `warn`).
    `dynamic_shapes` is passed to `torch.export.export` as is (e.g. `{"x": {0: Dim("batch")}}`);
    `freeze` folds eval batch norms into the convolutions before them (`freeze.py`); poolings become
    views and pointwise ops (`pooling.py`), indexing by an `arange` a slice (`arange_indexing.py`), 2-D convolutions on a GPU read NHWC inputs and weights
    (`channels_last.py`) and their means over few channels' pixels are summed in two steps
    (`spatial_means.py`), matmuls with unaligned output rows compute aligned ones (`align_matmuls.py`),
    attentions go to the generated kernel, a decomposition or ATen (`attention.py`); the results keep the
    layouts eager gives them. Last, numbers computed from compile-time constants alone become literals
    (`fold_constants.py`) and an op repeated on the same operands is computed once
    (`common_subexpressions.py`).
    """
    with _exporting(model, example_inputs, attributes) as (inputs, numbers):
        program = _export(model, inputs, numbers, dynamic_shapes, warn, state_values)
        if attributes:
            refuse_values_read(program, attributes, user_placeholders(program))
        constants_as_state(program)
        if freeze:
            fold_batch_norms(program)
        fresh = fresh_constants(program)
        unbinds_as_selects(program)
        splits_as_slices(program)
        program = program.run_decompositions(TABLE)
    with pygraphs_own_ops():  # the decomposed program holds autocast's casts (`settings.py`)
        check_branches(program)
        complex_as_real(program)
        devices = _GPU_LAYOUT_DEVICES.get(knobs.gpu_layouts)
        if devices is None:
            raise ValueError(f"PYGRAPH_GPU_LAYOUTS must be one of {', '.join(_GPU_LAYOUT_DEVICES)}")
        layouts = output_layouts(program)
        slice_scatters_as_concatenations(program)
        pooling_as_views(program)
        arange_indexing_as_slices(program)
        convolutions_channels_last(program, devices)
        split_spatial_means(program, devices)
        route_attentions(program, devices)
        align_matmul_outputs(program, devices)
        unsqueeze_operands(program)
        keep_output_layouts(program, layouts)
        fold_constants(program, fresh)
        merge_common_subexpressions(program)
        drop_constant_inputs(program)
    return program


@dataclass(frozen=True)
class DynamicDim:
    """A dim of a user input that `dynamic_shapes` declared: its symbol (dims sharing one must be equal)
    and the range export kept for it (`upper` None: unbounded), or for a derived dim (`2 * seq`) the
    formula of its size in the symbols of other dims."""

    symbol: str
    lower: int
    upper: int | None
    formula: Any = None  # a sympy expression, for a derived dim

    def symbols(self) -> list[str]:
        """The symbols whose sizes decide this dim's."""
        return [self.symbol] if self.formula is None else sorted(str(s) for s in self.formula.free_symbols)

    def expected(self, sizes: dict[str, int]) -> int | None:
        """A derived dim's size given the sizes of the symbols, if all are known."""
        if self.formula is None or any(str(s) not in sizes for s in self.formula.free_symbols):
            return None
        return int(self.formula.subs({s: sizes[str(s)] for s in self.formula.free_symbols}))


def dynamic_dims(program: torch.export.ExportedProgram) -> dict[tuple[int, int], DynamicDim]:
    """The dims of the user inputs whose size export kept symbolic, by (input index, dim). A dim given by
    an expression of symbols (a derived `Dim`) carries that formula instead of a range."""
    nodes = {node.name: node for node in program.graph.nodes}
    user_inputs = [
        s
        for s in program.graph_signature.input_specs
        if s.kind == InputKind.USER_INPUT and isinstance(s.arg, TensorArgument)
    ]
    dims = {}
    for i, spec in enumerate(user_inputs):
        value = nodes[spec.arg.name].meta.get("val")
        for dim, size in enumerate(getattr(value, "shape", ())):
            if not isinstance(size, torch.SymInt):
                continue
            expr = size.node.expr
            bounds = program.range_constraints.get(expr) if expr.is_Symbol else None
            if bounds is None:
                dims[i, dim] = DynamicDim(str(expr), 0, None, expr)
                continue
            upper = bounds.upper
            dims[i, dim] = DynamicDim(str(expr), int(bounds.lower), int(upper) if upper.is_Integer else None)
    return dims


def _dims_as_declared(
    model: torch.nn.Module, inputs: tuple, dynamic_shapes: Any
) -> dict[tuple[int, int], DynamicDim]:
    """The dims `dynamic_shapes` declares, read from the declaration alone (torch.export's own reading of
    it, no trace): a named dim with its range, a derived one with its formula, an unnamed one (`Dim.AUTO`)
    unbounded."""
    from torch.export.dynamic_shapes import (
        _combine_args,
        _DerivedConstraint,
        _process_dynamic_shapes,
        _RelaxedConstraint,
    )

    tensors = [leaf for leaf in torch.utils._pytree.tree_leaves(inputs) if isinstance(leaf, torch.Tensor)]
    index = {id(t): i for i, t in enumerate(tensors)}
    constraints = _process_dynamic_shapes(_combine_args(model, inputs, {}), dynamic_shapes)
    named = {(c.t_id, c.dim): c.name for c in constraints if not isinstance(c, _RelaxedConstraint)}
    dims = {}
    for c in constraints:
        key = (index[c.t_id], c.dim)
        if isinstance(c, _RelaxedConstraint):
            dims[key] = DynamicDim(f"input{key[0]}_dim{key[1]}", 0, None)
        elif isinstance(c, _DerivedConstraint):
            root = named.get((getattr(c.root, "t_id", None), getattr(c.root, "dim", None))) or c.root.name
            dims[key] = DynamicDim(c.name, 0, None, c.fn(sympy.Symbol(root, integer=True)))
        else:
            lower, upper = c.constraint_range.vr.lower, c.constraint_range.vr.upper
            dims[key] = DynamicDim(c.name, int(lower), int(upper) if upper.is_Integer else None)
    return dims


def declared_dims(
    model: torch.nn.Module, example_inputs: tuple, dynamic_shapes: Any
) -> tuple[dict[tuple[int, int], DynamicDim], dict[str, Padding]]:
    """The dims `dynamic_shapes` declares, as torch.export reads them (ranges, dims sharing a symbol), and
    whether calls may be padded along each symbol (`row_prefixes.py`, on the program decomposed as
    `export_program` decomposes; PYGRAPH_PADDING=off: none): traced once with them. The program pygraph
    compiles is exported for the example's sizes (`export_program` without `dynamic_shapes`): a plan is
    specialized to its shapes, and symbolic sizes in a traced model reach ops whose kernels need them
    known."""
    if knobs.padding not in ("auto", "off"):
        raise ValueError(f"PYGRAPH_PADDING must be auto or off, not {knobs.padding!r}")
    with _exporting(model, example_inputs) as (inputs, numbers):
        try:
            program = _export(model, inputs, numbers, dynamic_shapes, warn=False)
        except GuardOnDataDependentSymNode as exc:  # (symbolic sizes meet the data: Encodec's paddings)
            dims = _dims_as_declared(model, inputs, dynamic_shapes)
            why = (
                "torch.export cannot trace the model with them symbolic, as its sizes meet values of its "
                f"data there ({type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]})"
            )
            return dims, _each_size_compiles(model, dims.values(), why)
        dims = dynamic_dims(program)
        fixed = _fixed_dims(model, inputs, dynamic_shapes, dims)
        dims |= fixed
        symbols = sorted({spec.symbol for spec in dims.values() if spec.formula is None})
        why = (
            "the trace fixed them to the example's sizes (an op along them, `unbind`, needs their size known)"
        )
        unpadded = _each_size_compiles(model, fixed.values(), why)
        symbols = [s for s in symbols if s not in unpadded]
        if knobs.padding == "off" or not symbols:
            return dims, unpadded
        try:
            program = program.run_decompositions(TABLE)
        except Exception as exc:  # (a decomposition that needs sizes known): each size compiles
            why = f"the program traced with symbolic sizes does not decompose ({type(exc).__name__}: {exc})"
            return dims, {s: Padding(s, (), why) for s in symbols} | unpadded
    return dims, paddable(program, symbols) | unpadded


def _fixed_dims(
    model: torch.nn.Module,
    inputs: tuple,
    dynamic_shapes: Any,
    traced: dict[tuple[int, int], DynamicDim],
) -> dict[tuple[int, int], DynamicDim]:
    """Declared dims the trace made a number without torch.export's own refusal (an `unbind` along one in
    a model traced the way its decisions on the data take, `branches.py`: fuzz seed 67567), as the
    declaration states them: calls of other sizes compile programs of their own, not refused as sizes
    other than the traced one."""
    fixed = [k for k, spec in traced.items() if spec.formula is not None and not spec.formula.free_symbols]
    if not fixed:
        return {}
    declared = _dims_as_declared(model, inputs, dynamic_shapes)
    return {k: declared.get(k, DynamicDim(f"input{k[0]}_dim{k[1]}", 0, None)) for k in fixed}


def _each_size_compiles(model: torch.nn.Module, specs: Iterable[DynamicDim], why: str) -> dict[str, Padding]:
    """No padding for these dims' symbols, for `why`, with a warning that each size compiles a program of
    its own."""
    symbols = sorted({s for spec in specs for s in spec.symbols()})
    if not symbols:
        return {}
    warnings.warn(
        f"{type(model).__name__}: dims {', '.join(symbols)}: {why}: each size compiles a program of its own",
        stacklevel=4,
    )
    return {s: Padding(s, (), why) for s in symbols}


def _export(
    model: torch.nn.Module,
    inputs: tuple,
    numbers: tuple[torch.Tensor, ...],
    dynamic_shapes: Any,
    warn: bool = True,
    state_values: StateValues | None = None,
) -> torch.export.ExportedProgram:
    """torch.export, non-strict; a model that computes sizes or conditions from its small buffers alone (a
    trace that fails, or reads numbers from tensors) is traced again knowing their values
    (`state_values.py`, where `state_values` is given) and kept where that reads fewer; one that
    branches on values of its data is traced the way `inputs` take, with checks (`branches.py`), and a
    warning naming the branches where `warn`. `numbers`: the leaves of `inputs` that are lifted Python
    numbers."""
    try:
        program = _traced(model, inputs, numbers, dynamic_shapes)
    except GuardOnDataDependentSymNode:  # (draft export traces again, saying it all again)
        program = None
    if program is not None and not _reads_numbers(program):
        return program
    if state_values is not None and state_values.buffers:
        state_values.known = True
        try:
            known = _traced(model, inputs, numbers, dynamic_shapes, state_values)
            if state_values.kept(known) and (
                program is None or _reads_numbers(known) < _reads_numbers(program)
            ):
                return known
        except Exception:  # (the data decide, or the trace knowing the values failed: as without it)
            pass
        state_values.known = False
    return program if program is not None else draft_export(model, inputs, numbers, dynamic_shapes, warn)


def _reads_numbers(program: torch.export.ExportedProgram) -> int:
    """How many numbers `program` reads from its tensors (each a wait for the device, in every call)."""
    return sum(len(program.graph.find_nodes(op="call_function", target=op)) for op in READS_DATA)


def _traced(
    model: torch.nn.Module,
    inputs: tuple,
    numbers: tuple[torch.Tensor, ...],
    dynamic_shapes: Any,
    state_values: StateValues | None = None,
) -> torch.export.ExportedProgram:
    printed = io.StringIO()  # torch.export prints the partial graph of a failed trace to stderr
    try:
        with (
            contextlib.redirect_stderr(printed),
            _attributes_kept(model),  # (a trace that fails leaves nothing a later one, draft export's, reads)
            numbers_promoted_as_python(model, inputs, numbers),
            knowing_state_values(model, state_values),
        ):
            program = torch.export.export(model, inputs, dynamic_shapes=dynamic_shapes, strict=False)
    except GuardOnDataDependentSymNode:
        raise
    except Exception:
        sys.stderr.write(printed.getvalue())
        raise
    sys.stderr.write(printed.getvalue())
    return program


@contextlib.contextmanager
def _exporting(
    model: torch.nn.Module, example_inputs: tuple, attributes: tuple[AttributeRead, ...] = ()
) -> Iterator[tuple[tuple, tuple[torch.Tensor, ...]]]:
    """The example inputs, and the numbers of `attributes` after them, with Python numbers as 0-d tensors
    (`numbers.py`), and those tensors, for a trace of `model` (taking the attributes as arguments) whose
    failure is an ExportError carrying torch's, and which leaves the model's attributes as they were."""
    if not isinstance(example_inputs, tuple):
        raise TypeError(f"example_inputs must be a tuple of tensors, not {type(example_inputs).__name__}")
    names = argument_names(model, len(example_inputs))
    inputs, lifted = lift_numbers(
        model,
        [*names, *(f"self.{a.path}" for a in attributes)],
        (*example_inputs, *(a.current() for a in attributes)),
    )
    try:
        with (
            _attributes_kept(model),
            attributes_as_inputs(model, attributes, names),
            _buffers_left_untracked(model),
            _no_buffer_hooks_left_behind(),
            _real_buffers_registered_as_copies(model),
            _parameters_without_grad(model),
            _lstm_states_in_shape(),
            _vector_norm_meta_with_negative_dims(),
            _conversions_that_change_nothing_skipped(),
            _numbers_formatted_as_eager(),
            _seeding_refused(),
            quiet_tracing(),
            warnings.catch_warnings(),
        ):
            warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
            # (pygraph carries such tensors out of the call: `python_state.AssignedTensors`)
            warnings.filterwarnings("ignore", message="The tensor attributes? .* assigned during export")
            yield inputs, tuple(lifted.values())
    except Exception as e:
        hint = f" (Python numbers {list(lifted)} were passed as 0-d tensors)" if lifted else ""
        if isinstance(e, GuardOnDataDependentSymNode):
            hint += f" (at {_innermost_user_frame(str(e))}, {_BRANCH_ON_DATA})"
        elif line := failing_line(e):
            hint += f" at {line}"
        raise ExportError(
            f"torch.export failed for {type(model).__name__}{hint}: {type(e).__name__}: {e}"
        ) from e


_BRANCH_ON_DATA = (
    "the model decides something in Python from a value of its data: a condition such as `if x.any():`, "
    "or `.item()` or `.tolist()` used as a size or a condition; one traced program cannot follow both "
    "ways. Compute both branches and choose with `torch.where`, or state what always holds with "
    "`torch._check(...)` before it"
)


def _innermost_user_frame(message: str) -> str:
    """`file:line` of the innermost frame outside torch that torch's message quotes (its stack, or its
    "Caused by" frame, which is relative to site-packages)."""
    frames = user_frames(message)
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else "a line torch does not name"


@contextlib.contextmanager
def _attributes_kept(model: torch.nn.Module) -> Iterator[None]:
    """Removes the attributes holding fake tensors that tracing added to the modules and to the plain
    objects their attributes hold. Non-strict export runs `forward` as Python and restores the attributes a
    module had, but keeps those it added: a model that caches on its first call (`self.long_inv_freq = ...`,
    Llama's longrope; a `cached_property` of a helper object, Chameleon's vocabulary mapping) would keep the
    fake tensor from tracing, which its later eager calls, and a later trace, compute with. Other added
    attributes stay (transformers marks the hooks it installed once so). The lists, tuples and dicts the
    attributes held are the same objects afterwards, holding what they held (torch.export restores copies
    of them, and a hook holding the list a module appends to would append to one the module no longer
    reads)."""
    before = [(holder, dict(vars(holder))) for _, holder in attribute_holders(model).values()]
    contents = [c for _, held in before for value in held.values() for c in containers(value)]
    try:
        yield
    finally:
        for holder, held in before:
            attributes = vars(holder)
            for name in [n for n in attributes if n not in held]:
                leaves = torch.utils._pytree.tree_leaves(attributes[name])
                if any(isinstance(leaf, FakeTensor) for leaf in leaves):
                    del attributes[name]
            for name, value in held.items():  # torch.export puts back copies of lists, tuples and dicts
                if type(value) in (list, tuple, dict) and type(attributes.get(name)) is type(value):
                    attributes[name] = value
        put_back(contents)  # (as they were: a trace may have changed them in place)


@contextlib.contextmanager
def _no_buffer_hooks_left_behind() -> Iterator[None]:
    """Removes the global buffer-registration hooks that tracing left installed. torch.export installs one
    to see buffer assignments during its trace; with torch 2.11 (the GPU machine's) one was found left
    installed after compiling a model whose sizes come from its buffers (`state_values.py`), and every
    later assignment of a buffer to the model raised in it (`AssertionError: expected FakeTensor`)."""
    hooks = torch.nn.modules.module._global_buffer_registration_hooks
    before = set(hooks)
    try:
        yield
    finally:
        for key in set(hooks) - before:
            del hooks[key]


@contextlib.contextmanager
def _real_buffers_registered_as_copies(model: torch.nn.Module) -> Iterator[None]:
    """A buffer that forward registers with a real tensor (older transformers' longrope registers a plain
    tensor attribute, `register_buffer("inv_freq", self.long_inv_freq)`) is registered as a copy of it made
    in the trace: torch 2.13's export accepts only tensors of its trace there (`AssertionError: expected
    FakeTensor`), and the copy is one. The compiled call carries the buffer out as eager's leaves it (its
    values; the attribute and the buffer are two tensors then, one in eager)."""

    modules = {id(module) for module in model.modules()}

    def copied(module: torch.nn.Module, name: str, tensor: Any) -> Any:
        real = isinstance(tensor, torch.Tensor) and not isinstance(tensor, (FakeTensor, FunctionalTensor))
        tracing = id(module) in modules and get_proxy_mode() is not None
        return tensor.clone() if real and tracing else None

    handle = torch.nn.modules.module.register_module_buffer_registration_hook(copied)
    try:
        yield
    finally:
        handle.remove()


@contextlib.contextmanager
def _buffers_left_untracked(model: torch.nn.Module) -> Iterator[None]:
    """Detaches again the buffers that tracing left with autograd history. A buffer written in place
    through another object holding it (`state_aliases.py`) is a real tensor under non-strict export: the
    write's values are fake, but autograd records it on the real tensor, which then requires grad and
    carries a graph of fake tensors into the model's later eager calls."""
    untracked = [b for b in model.buffers() if b.grad_fn is None and not b.requires_grad and b._base is None]
    try:
        yield
    finally:
        for buffer in untracked:
            if buffer.grad_fn is not None or buffer.requires_grad:
                buffer.detach_()


@contextlib.contextmanager
def _parameters_without_grad(model: torch.nn.Module) -> Iterator[None]:
    """Traces with the parameters not requiring grad, as pygraph computes no gradients: torch's
    `run_decompositions` refuses a program returning a view of a parameter that it also writes in place
    ("A view was created in no_grad mode and its base ... modified inplace with grad mode enabled"), even
    under `torch.no_grad()`, where eager runs it."""
    tracked = [p for p in model.parameters() if p.requires_grad]
    for parameter in tracked:
        parameter.requires_grad_(False)
    try:
        yield
    finally:
        for parameter in tracked:
            parameter.requires_grad_(True)


@contextlib.contextmanager
def _lstm_states_in_shape() -> Iterator[None]:
    """Export traces `nn.LSTM` off the CPU into torch's `one_layer_lstm` per layer and direction, which in
    torch 2.11 squeezes the final states on the wrong dim: h_n and c_n of a CUDA LSTM came out
    [layers, 1, batch, hidden]. Each layer's final states have the shape of the initial ones it was given:
    while exporting, they are viewed so (a no-op where torch's are right)."""
    original = torch_decompositions.one_layer_lstm

    def one_layer_lstm(inp: Any, hidden: Any, *args: Any, **kwargs: Any) -> Any:
        out, (h, c) = original(inp, hidden, *args, **kwargs)
        return out, (h.reshape(hidden[0].shape), c.reshape(hidden[1].shape))

    torch_decompositions.one_layer_lstm = one_layer_lstm
    try:
        yield
    finally:
        torch_decompositions.one_layer_lstm = original


@contextlib.contextmanager
def _conversions_that_change_nothing_skipped() -> Iterator[None]:
    """A module converted in forward to the dtype or device it has (`self.classifier =
    self.classifier.to(self.dtype)`, the routers of SwitchTransformers and NLLB-MoE) is a no-op in eager,
    but while exporting its parameters are fake tensors, which torch (2.11, 2.13) swaps for the converted
    ones even where they are the same tensor, and export failed (`_apply(): Couldn't swap Linear.weight`).
    While exporting, a conversion leaving every tensor of the module as it is returns the module; one that
    changes a tensor goes to torch as before."""
    apply = torch.nn.Module._apply

    def applied(module: torch.nn.Module, fn: Any, recurse: bool = True) -> torch.nn.Module:
        tensors = [*module.parameters(recurse=recurse), *module.buffers(recurse=recurse)]
        with torch.no_grad():
            if all(fn(t) is t for t in tensors):
                return module
        return apply(module, fn, recurse)

    torch.nn.Module._apply = applied
    try:
        yield
    finally:
        torch.nn.Module._apply = apply


@contextlib.contextmanager
def _numbers_formatted_as_eager() -> Iterator[None]:
    """Eager formats a 0-d tensor as its number (`f"expert_{i}"`, how SwitchTransformers and NLLB-MoE pick
    an expert by name), but only a tensor of type exactly `torch.Tensor` (`Tensor.__format__`, torch 2.11 and
    2.13): while exporting, a fake tensor was formatted as its repr, and the name found no module. While
    exporting, a fake 0-d tensor is formatted as the number it holds, read as `.item()` reads it: a value
    from the data, which the trace then assumes and each call checks, as a branch on data. A fake standing for
    an `nn.Parameter` keeps its repr, as eager formats a parameter."""
    format_tensor = torch.Tensor.__format__

    def formatted(tensor: torch.Tensor, spec: str) -> str:
        if (
            not isinstance(tensor, FakeTensor)
            or isinstance(tensor, torch.nn.Parameter)
            or tensor.dim() != 0
            or tensor.is_complex()
        ):
            return format_tensor(tensor, spec)
        kind = bool if tensor.dtype == torch.bool else float if tensor.is_floating_point() else int
        return format(kind(tensor.item()), spec)

    torch.Tensor.__format__ = formatted
    try:
        yield
    finally:
        torch.Tensor.__format__ = format_tensor


# the functions that reseed torch's generators, by module
_SEEDING = {
    torch: ("manual_seed", "seed"),
    torch.random: ("manual_seed", "seed"),
    torch.cuda: ("manual_seed", "manual_seed_all", "seed", "seed_all"),
}


@contextlib.contextmanager
def _seeding_refused() -> Iterator[None]:
    """torch.export drops a call of `torch.manual_seed` in forward (Reformer's LSH attention with a
    `hash_seed`): the program would draw other numbers in every call where eager draws the same ones
    again, a wrong answer. While exporting, reseeding raises instead, and export fails naming the line."""
    saved = {(module, name): getattr(module, name) for module, names in _SEEDING.items() for name in names}

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "forward reseeds torch's random generator, which a traced program cannot do: its random numbers "
            "come from a seed and offset fed to each call, so every call would draw other numbers where "
            "eager draws the same ones again. Seed before calling the model, or draw the numbers outside "
            "forward and pass them in"
        )

    for module, name in saved:
        setattr(module, name, refuse)
    try:
        yield
    finally:
        for (module, name), function in saved.items():
            setattr(module, name, function)


@contextlib.contextmanager
def _vector_norm_meta_with_negative_dims() -> Iterator[None]:
    """torch 2.11's meta of `linalg_vector_norm` over dims of one element keeps them when they are given
    negative (`vector_norm(x, dim=-1)` of a [32, 1] x: [32, 1] where eager gives [32]), and export then
    fails at the next op that reads the shape. While exporting, the meta gets the dims non-negative (a
    no-op where torch is right)."""
    op = torch.ops.aten.linalg_vector_norm.default
    meta = op.py_kernels.get(torch._C.DispatchKey.Meta)
    if meta is None or meta(torch.empty(2, 1, device="meta"), 2, [-1], False).shape == (2,):
        yield
        return

    def dims_non_negative(x: torch.Tensor, ord: Any = 2, dim: Any = None, *args: Any, **kwargs: Any) -> Any:
        if dim is not None and x.dim() > 0:
            dim = [d % x.dim() for d in ([dim] if isinstance(dim, int) else dim)]
        return meta(x, ord, dim, *args, **kwargs)

    op.py_kernels[torch._C.DispatchKey.Meta] = dims_non_negative
    op._dispatch_cache.clear()
    try:
        yield
    finally:
        op.py_kernels[torch._C.DispatchKey.Meta] = meta
        op._dispatch_cache.clear()


def argument_names(model: torch.nn.Module, count: int) -> list[str]:
    """Names of the first `count` positional arguments of `model.forward` (`args[i]` past a `*args`)."""
    names: list[str] = []
    for parameter in inspect.signature(model.forward).parameters.values():
        if parameter.kind == parameter.VAR_POSITIONAL:
            names += [f"{parameter.name}[{i}]" for i in range(count - len(names))]
        elif parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            names.append(parameter.name)
    names += [f"argument {i}" for i in range(len(names), count)]
    return names[:count]
