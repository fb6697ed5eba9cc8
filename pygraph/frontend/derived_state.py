"""Derived state: computations on the model's own tensors alone, done once instead of in every call.

Some ops of a program read only parameters, buffers and constants: a convolution weight converted to
NHWC (channels_last.py), a weight padded so that a matmul writes aligned rows (align_matmuls.py), a model's
own `self.weight.t().contiguous()` or `self.log_scale.exp()`. Their results are the same in every call
until the model's tensors change. Each such result becomes a lifted constant of the program, which the
importer makes a `derived` argument; `DerivedState` keeps the ops that compute it (an FX graph of the
program's own nodes). The compiled model runs them with ATen when it binds the model's tensors, and again
(in place, so that graphs keep their addresses) when the version counter of a tensor they read says it
has changed since; so results follow `load_state_dict`, an optimizer step or `param.mul_(2)`.

What stays in the program: views (they cost nothing), random ops, ops that read an input or a buffer the
program writes, device moves (hoist-host-copies' business), lookups of more than `_SMALL` elements in the
model's tables that pointwise ops read (embeddings at fixed positions: their kernels gather those rows
as cheaply as they would read them held), results used as program outputs, and
results larger than the state they read (an `expand` made dense costs memory for the model's lifetime):
a derived tensor is memory held beside the model's, so it may be at most `_SLACK` larger than what it
reads (alignment padding), or `_SMALL` elements where it reads nothing (an `arange`).

Held state against memory (PYGRAPH_DERIVED): copies of the model's tensors (weights converted to NHWC,
padded) are held, smallest first, while their total stays within the program's working memory (the most
bytes its intermediate results hold at once); the largest beyond that are copied in each call instead,
into the arena, where they share bytes with each other and with the activations, as Inductor converts
weights in every call. resnet18 at batch 1 works in 4 MB and had 40 MB of NHWC weights; its largest are
converted in each call now. Where one copy dominates (a single padded embedding), copying it per call
would save little of its memory, so then all are held; other derived results are always held.

The programs of one model (one per size of a dim declared dynamic, per way through its data, per settings)
compute the same derived values from the same tensors: `SharedValues` lets them hold one copy (a model
compiled at 8 batch sizes held 8 NHWC copies of every converted weight before).
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import weakref
from collections.abc import Callable, Container, Hashable, Sequence
from dataclasses import dataclass, field

import torch
from torch.export.graph_signature import InputKind

from ..knobs import knobs
from ..passes.pointwise import POINTWISE
from .rewrite import MUTATIONS, add_constant, redirect_uses, state_value

aten = torch.ops.aten
_SLACK = 1 / 16
_SMALL = 1 << 16
# Lookups in the model's tables (position embeddings at fixed positions) that pointwise ops read: their
# kernel gathers the rows from the table, reading as many bytes as it would from held rows, so holding many
# rows would only cost memory. (A few are held: an index another lookup reads, which a kernel cannot
# compute in the same kernel. So are lookups read otherwise, through a view or by a vendor call or kernel
# template, which would need the rows made in each call by a kernel of their own.)
_LOOKUPS = {
    aten.embedding.default,
    aten.index_select.default,
    aten.gather.default,
    aten.index.Tensor,
}
_ROLES = {InputKind.PARAMETER: "parameter", InputKind.BUFFER: "buffer", InputKind.CONSTANT_TENSOR: "constant"}


@dataclass
class DerivedState:
    """The derived arguments of a program and how to compute them from the model's tensors."""

    names: list[str]  # the derived arguments, in the order `recipe` returns them
    sources: list[tuple[str, str]]  # (role, name) of each tensor `recipe` reads, in its argument order
    recipe: torch.fx.GraphModule
    constants: dict[str, torch.Tensor] = field(default_factory=dict)  # the values of `constant` sources
    # Per derived argument: its computation written out in terms of the sources' (role, name), and the
    # positions in `sources` of those it reads; the same key of the same tensors is the same value
    # (`SharedValues`).
    keys: list[str] = field(default_factory=list)
    reads: list[tuple[int, ...]] = field(default_factory=list)

    def compute(self, sources: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """The derived values, each in memory of its own: a recipe's result may be a view into a larger
        tensor (ConViT's relative indices on the GPU: one channel of a [1, N, N, 3] tensor, offset 2) or
        not, from one run to another, and the plan is built for the layout of the first values."""
        with torch.no_grad():
            return [_own_memory(value) for value in self.recipe(*sources)]


def _own_memory(value: torch.Tensor) -> torch.Tensor:
    """`value` itself where it fills a storage of its own from its start, else a copy that does: in its own
    dim order where it is dense, row-major where not (`empty_like`'s rule)."""
    owns = (
        value.storage_offset() == 0
        and value.untyped_storage().nbytes() == value.numel() * value.element_size()
    )
    return value if owns else torch.empty_like(value).copy_(value)


def state_only_nodes(ep: torch.export.ExportedProgram) -> dict[torch.fx.Node, frozenset[torch.fx.Node]]:
    """Every node computed from unwritten parameters, buffers and constants alone, deterministically,
    with the state placeholders it reads."""
    signature = ep.graph_signature
    written = {spec.target for spec in signature.output_specs if spec.kind in MUTATIONS}
    specs = {spec.arg.name: spec for spec in signature.input_specs}
    reads: dict[torch.fx.Node, frozenset[torch.fx.Node]] = {}
    for node in ep.graph.nodes:
        if node.op == "placeholder":
            spec = specs[node.name]
            if spec.kind in _ROLES and spec.target not in written:
                reads[node] = frozenset([node])
        elif node.op == "call_function" and deterministic(node):
            operands = node.all_input_nodes
            if all(o in reads for o in operands):
                reads[node] = frozenset().union(*(reads[o] for o in operands))
    return reads


def hoist_derived_state(ep: torch.export.ExportedProgram) -> DerivedState | None:
    """Moves the program's computations on state alone into a `DerivedState`, in place; None if none."""
    reads = state_only_nodes(ep)

    def hoistable(node: torch.fx.Node) -> bool:
        value = node.meta.get("val")
        if node not in reads or node.op != "call_function" or not isinstance(value, torch.Tensor):
            return False
        if node.target is aten.view_as_real.default:
            return True  # (complex state as the program reads it: the same memory, `complex_as_real.py`)
        if node.target.is_view or node.target is aten._to_copy.default:
            return False
        if node.target in _LOOKUPS and value.numel() > _SMALL and all(map(_pointwise, node.users)):
            return False
        if any(user.op == "output" for user in node.users) or not all(
            isinstance(s, int) for s in value.shape
        ):
            return False
        read = sum(source.meta["val"].numel() for source in reads[node])
        return value.numel() <= (read * (1 + _SLACK) if read else _SMALL)

    hoisted = {n for n in ep.graph.nodes if hoistable(n)}
    # what the program still computes and needs: a view of state that only hoisted ops read is not
    kept: set[torch.fx.Node] = set()
    for node in reversed(ep.graph.nodes):
        if node not in hoisted and (
            node.op == "output" or node.is_impure() or not kept.isdisjoint(node.users)
        ):
            kept.add(node)
    results = _held(
        [n for n in ep.graph.nodes if n in hoisted and not kept.isdisjoint(n.users)],
        lambda: working_bytes(ep, reads),
    )
    if not results:
        return None
    needed: set[torch.fx.Node] = set()
    pending = list(results)
    while pending:
        node = pending.pop()
        if node not in needed:
            needed.add(node)
            pending += node.all_input_nodes
    recipe = torch.fx.Graph()
    copied: dict[torch.fx.Node, torch.fx.Node] = {}
    sources = [n for n in ep.graph.nodes if n in needed and n.op == "placeholder"]
    for node in sources:
        copied[node] = recipe.placeholder(node.name)
    for node in ep.graph.nodes:
        if node in needed and node.op == "call_function":
            copied[node] = recipe.node_copy(node, copied.__getitem__)
    recipe.output(tuple(copied[n] for n in results))
    specs = {spec.arg.name: spec for spec in ep.graph_signature.input_specs}
    derived = DerivedState([], [], torch.fx.GraphModule(torch.nn.Module(), recipe))
    for node in sources:
        spec = specs[node.name]
        derived.sources.append((_ROLES[spec.kind], spec.target))
        if spec.kind == InputKind.CONSTANT_TENSOR:
            derived.constants[spec.target] = state_value(ep, spec)
    values = derived.compute([state_value(ep, specs[n.name]) for n in sources])
    written = _written_out(recipe, derived.sources)
    for node, value in zip(results, values, strict=True):
        name = f"derived_{node.name}"
        redirect_uses(ep, node, add_constant(ep, name, value))
        derived.names.append(name)
        derived.keys.append(written[copied[node]][0])
        derived.reads.append(written[copied[node]][1])
    ep.graph.eliminate_dead_code()
    for node in sources:  # complex state the recipe alone reads now: the program cannot hold it
        if not node.users and node.meta["val"].dtype.is_complex:
            ep.graph_signature.input_specs.remove(specs[node.name])
            ep.graph.erase_node(node)
    ep.graph_module.recompile()
    return derived


def _written_out(
    recipe: torch.fx.Graph, sources: list[tuple[str, str]]
) -> dict[torch.fx.Node, tuple[str, tuple[int, ...]]]:
    """Each node of `recipe` as a key naming its computation (a digest of its op, its operands' keys and
    its other arguments; the sources as their role and name), with the positions of the sources it reads."""
    written: dict[torch.fx.Node, tuple[str, tuple[int, ...]]] = {}
    positions = itertools.count()
    for node in recipe.nodes:
        if node.op == "placeholder":
            position = next(positions)
            written[node] = (f"{sources[position][0]}:{sources[position][1]}", (position,))
        elif node.op == "call_function":
            operands = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: written[n][0])
            text = f"{node.target}{operands}".encode()
            reads = sorted({r for n in node.all_input_nodes for r in written[n][1]})
            written[node] = (hashlib.sha256(text).hexdigest(), tuple(reads))
    return written


class SharedValues:
    """The derived values of one model's compiled programs traced under one set of settings (shape
    variants, ways through its data, other `export_and_compile` calls), so that programs computing the
    same thing from the same tensors hold one copy: a value is shared while the tensors it was computed
    from are the very ones a program reads, at the versions it was computed at, and another program's copy
    has its layout. (Programs of other settings hold their own: a product in the recipe computes under the
    TF32 setting of the program's calls.)"""

    _by_model: weakref.WeakKeyDictionary[torch.nn.Module, dict[Hashable, SharedValues]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self) -> None:
        # key -> (the value, the tensors it was computed from, their versions then); all held weakly, so an
        # entry lives only while some program holds its value and the model holds its sources
        self._entries: dict[str, tuple[weakref.ref, tuple[weakref.ref, ...], tuple[int, ...]]] = {}

    @classmethod
    def of(cls, model: torch.nn.Module, settings: Hashable) -> SharedValues:
        return cls._by_model.setdefault(model, {}).setdefault(settings, cls())

    def share(
        self, derived: DerivedState, sources: Sequence[torch.Tensor], values: Sequence[torch.Tensor]
    ) -> list[torch.Tensor]:
        """`values`, computed from `sources` as they are now, each replaced by another program's equal
        value where one is held; the others recorded for later programs."""
        shared = []
        for key, reads, value in zip(derived.keys, derived.reads, values, strict=True):
            read = [sources[i] for i in reads]
            held = self._held(key, read)
            if held is not None and _same_layout(held, value):
                shared.append(held)
                continue
            self.record(key, read, value)
            shared.append(value)
        return shared

    def record(self, key: str, read: Sequence[torch.Tensor], value: torch.Tensor) -> None:
        """`value` is `key` of `read` as they are now (computed, or written again in place)."""
        versions = tuple(t._version for t in read)
        self._entries[key] = (weakref.ref(value), tuple(weakref.ref(t) for t in read), versions)

    def _held(self, key: str, read: Sequence[torch.Tensor]) -> torch.Tensor | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        value, sources, versions = entry[0](), entry[1], entry[2]
        same = len(sources) == len(read) and all(s() is t for s, t in zip(sources, read, strict=False))
        if value is None or not same or versions != tuple(t._version for t in read):
            return None
        return value


def _same_layout(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (a.shape, a.stride(), a.dtype, a.device) == (b.shape, b.stride(), b.dtype, b.device)


def _held(results: list[torch.fx.Node], working: Callable[[], int]) -> list[torch.fx.Node]:
    """The results held between calls (the module docstring says which); the others stay in the program.
    Only copies of the model's tensors (a layout conversion, a padding) may move into the calls: one
    kernel each, bound by memory; longer computations (a projection of position embeddings) stay held."""
    mode = knobs.derived
    if mode not in ("auto", "all", "none"):
        raise ValueError(f"PYGRAPH_DERIVED must be auto, all or none, not {mode!r}")
    if mode != "auto":
        return results if mode == "all" else []
    copies = sorted((n for n in results if _copy_of_state(n)), key=_nbytes)
    if not copies:
        return results
    computed = copies[bisect.bisect_right(list(itertools.accumulate(map(_nbytes, copies))), working()) :]
    if not computed or sum(map(_nbytes, computed)) < 2 * _nbytes(computed[-1]):
        return results  # (one copy dominates: computing it per call would save little of its memory)
    return [n for n in results if n not in computed]


def _pointwise(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and str(node.target) in POINTWISE


def _copy_of_state(node: torch.fx.Node) -> bool:
    """A copy (in another layout, or padded) of a placeholder or of a view of one."""
    if node.target not in (aten.clone.default, aten.constant_pad_nd.default):
        return False
    source = node.args[0]
    while source.op == "call_function" and getattr(source.target, "is_view", False):
        source = source.args[0]
    return source.op == "placeholder"


def working_bytes(ep: torch.export.ExportedProgram, state_only: Container[torch.fx.Node]) -> int:
    """The most bytes the program's intermediate results hold at once, in program order: each result
    lives from its node to its last reader, a view keeps its base alive and costs nothing itself."""
    nodes = list(ep.graph.nodes)
    base: dict[torch.fx.Node, torch.fx.Node] = {}
    last: dict[torch.fx.Node, int] = {}
    for i, node in enumerate(nodes):
        for operand in node.all_input_nodes:
            if operand in base:
                last[base[operand]] = i
        if (
            node.op != "call_function"
            or node in state_only
            or not isinstance(node.meta.get("val"), torch.Tensor)
        ):
            continue
        if getattr(node.target, "is_view", False):  # a view of an input or of state costs nothing either
            if node.args[0] in base:
                base[node] = base[node.args[0]]
            continue
        base[node], last[node] = node, i
    change = [0] * (len(nodes) + 1)
    for i, node in enumerate(nodes):
        if base.get(node) is node:
            change[i] += _nbytes(node)
            change[last[node] + 1] -= _nbytes(node)
    live = peak = 0
    for delta in change:
        live += delta
        peak = max(peak, live)
    return peak


def _nbytes(node: torch.fx.Node) -> int:
    """A result's bytes for the example, or the fewest it can take where the data decide its size (rows a
    mask keeps): the working memory it measures is where copies may go, so it errs low."""
    value = node.meta["val"]
    count = value.numel()
    if isinstance(count, torch.SymInt):
        hint = count.node.hint
        if hint is None:
            lowest = count.node.shape_env.bound_sympy(count.node.expr).lower
            hint = int(lowest) if lowest.is_finite else 0
        count = int(hint)
    return count * value.element_size()


def deterministic(node: torch.fx.Node) -> bool:
    """An ATen op that writes nothing and draws no random numbers."""
    target = node.target
    return (
        isinstance(target, torch._ops.OpOverload)
        and not target._schema.is_mutable
        and torch.Tag.nondeterministic_seeded not in target.tags
    )
