"""Reading plans: dependencies derived from buffers, and located errors for bad hand-written plans."""

import pytest

from pygraph.ir.context import parse
from pygraph.ir.plan import PlanError, dependencies, pooled_results, read_plan

L4 = "#pygraph.layout<[4], [1], 0 : i64, f32>"
KERNEL = """
"pygraph.triton_kernel"() {{sym_name = "{name}", entry = "{name}", num_warps = 1 : i64, num_stages = 1 : i64,
  signature = ["*fp32:16", "*fp32:16"], source = "import triton\\n@triton.jit\\ndef {name}(a, b):\\n    pass\\n"}} : () -> ()
"""


def plan_text(body: str, arena: int = 1024) -> str:
    kernels = "".join(KERNEL.format(name=n) for n in ("k0", "k1", "k2", "k3"))
    return f"""
module {{
{kernels}
func.func @main(%x: !pygraph.buf {{pygraph.role = "input", pygraph.name = "x", pygraph.layout = {L4}}})
    -> !pygraph.buf attributes {{pygraph.arena_bytes = {arena} : i64}} {{
  %a = "pygraph.alloc"() {{layout = {L4}, arena_offset = 0 : i64}} : () -> !pygraph.buf
  %b = "pygraph.alloc"() {{layout = {L4}, arena_offset = 256 : i64}} : () -> !pygraph.buf
  %c = "pygraph.alloc"() {{layout = {L4}, arena_offset = 512 : i64}} : () -> !pygraph.buf
{body}
}}
}}
"""


SEGMENT = """
  %r = "pygraph.segment"() ({
    "pygraph.kernel"(%x, %a) {kernel = @k0, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    %r0 = "pygraph.library"(%a) {op = "aten.relu.default", args = [0 : index], layouts = [LAYOUT], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
    "pygraph.kernel"(%r0, %b) {kernel = @k1, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    "pygraph.kernel"(%x, %c) {kernel = @k2, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    %r1 = "pygraph.library"(%c) {op = "aten.relu.default", args = [0 : index], layouts = [LAYOUT], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
    "pygraph.kernel"(%x, %a) {kernel = @k3, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    "pygraph.yield"(%r1) {operandSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> ()
  }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 1>} : () -> !pygraph.buf
  return %r : !pygraph.buf
""".replace("LAYOUT", L4)


def test_dependencies_follow_buffers_and_library_order():
    plan = read_plan(parse(plan_text(SEGMENT)))
    (segment,) = plan.segments
    assert [n.kind for n in segment.nodes] == ["kernel", "library", "kernel", "kernel", "library", "kernel"]
    # k2 is independent; the second library call waits for k2 (data), the first (shared workspace) and
    # k1, the last reader of the first call's result, whose memory its recording may reuse (the first
    # call is implied through k1); k3 rewrites %a after the first library call read it (write-after-read;
    # k0 is implied through it).
    assert dependencies(plan, segment) == [[], [0], [1], [], [2, 3], [1]]


HOST_VIEW = """
  %v = "pygraph.host"(%a) {op = "aten.slice.Tensor", args = [0 : index, 0, 0, 2, 1], layouts = [#pygraph.layout<[2], [1], 0 : i64, f32>], reason = "its end is read from the data", slots = [-1], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
  "pygraph.segment"() ({
    "pygraph.kernel"(%v, %b) {kernel = @k0, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    "pygraph.kernel"(%x, %a) {kernel = @k1, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
  }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
  return %b : !pygraph.buf
"""


def test_a_host_op_s_view_conflicts_with_writes_to_the_buffer_it_views():
    """`%a[:n.item()]` is taken between graphs and lies in %a's bytes: k1, writing %a, waits for k0 to read
    the view (which `%v`'s own buffer, a host result, would not say)."""
    plan = read_plan(parse(plan_text(HOST_VIEW)))
    (segment,) = plan.segments
    assert dependencies(plan, segment) == [[], [0]]


def test_pooled_results_are_graphed_library_results_no_output_or_eager_step_keeps():
    plan = read_plan(parse(plan_text(SEGMENT)))
    (segment,) = plan.segments
    r0 = segment.nodes[1].results[0]
    assert pooled_results(plan) == {r0: (0, 2)}  # %r1 is returned: it stays
    eager = read_plan(parse(plan_text(SEGMENT.replace('mode = "graph"', 'mode = "eager"'))))
    assert pooled_results(eager) == {}
    assert dependencies(eager, eager.segments[0])[4] == [1, 3]  # nothing is freed, so no reuse to order


def test_segment_result_is_the_yielded_buffer():
    plan = read_plan(parse(plan_text(SEGMENT)))
    (segment,) = plan.segments
    assert plan.outputs[0].buffer == segment.yields[0] == segment.nodes[4].results[0]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("arena_offset = 512", "arena_offset = 1000"), "not a multiple of 256"),
        (lambda t: t.replace("pygraph.arena_bytes = 1024", "pygraph.arena_bytes = 520"), "past the arena"),
        (lambda t: t.replace("kernel = @k2", "kernel = @nope"), "kernel @nope is not defined"),
        (
            lambda t: t.replace(
                'signature = ["*fp32:16", "*fp32:16"], source = "import triton\\n@triton.jit\\ndef k1',
                'signature = ["*i64", "*fp32:16"], source = "import triton\\n@triton.jit\\ndef k1',
            ),
            r"argument 0 of @k1 is \*i64",
        ),
    ],
)
def test_bad_plans_fail_with_located_messages(edit, message):
    with pytest.raises(PlanError, match=message):
        read_plan(parse(edit(plan_text(SEGMENT))))


def test_node_outside_a_segment_is_rejected():
    body = """
  "pygraph.kernel"(%x, %a) {kernel = @k0, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
  return %a : !pygraph.buf
"""
    with pytest.raises(PlanError, match=r"must be inside a pygraph\.segment"):
        read_plan(parse(plan_text(body)))
