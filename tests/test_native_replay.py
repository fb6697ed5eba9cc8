"""The native replay (backend/cuda/replay.c) on the CPU: driver functions stood in for by ctypes callbacks
that record their calls, CPU tensors for inputs and outputs. The GPU tests run it on real graphs."""

import ctypes
import shutil

import pytest
import torch

from pygraph.backend.cuda import native
from pygraph.knobs import knobs

pytestmark = pytest.mark.skipif(
    shutil.which("cc") is None and shutil.which("gcc") is None,
    reason="needs a C compiler to build the helper",
)

SetParams = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
Launch = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
EXEC, STREAM = 0x1000, 0x7


class FakeDriver:
    """Records `cuGraphExecKernelNodeSetParams` and `cuGraphLaunch` calls; `set_result` fails updates."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.set_result = 0
        self._set = SetParams(self._set_params)
        self._launch = Launch(self._launch_graph)

    def _set_params(self, graph_exec: int, node: int, params: int) -> int:
        self.calls.append(("set", node))
        return self.set_result

    def _launch_graph(self, graph_exec: int, stream: int) -> int:
        self.calls.append(("launch", graph_exec, stream))
        return 0

    def pointers(self) -> tuple[int, int]:
        return ctypes.cast(self._set, ctypes.c_void_p).value, ctypes.cast(self._launch, ctypes.c_void_p).value

    def take(self) -> list[tuple]:
        calls, self.calls = self.calls, []
        return calls


class Failed(RuntimeError):
    pass


def fail(call: str, result: int) -> None:
    raise Failed(f"{call}: {result}")


def _replay(input_device: int) -> tuple:
    """Two inputs of [4, 8] float32 on the device of index `input_device` (-1: the CPU) and one output:
    input 0 goes to word 0 (group 1, a patched node) and word 1 at +16 bytes (group 2); input 1 and the
    output to table words 2 and 3 (group 0, the writer)."""
    module = native.replay_module()
    assert module is not None
    driver = FakeDriver()
    words = (ctypes.c_uint64 * 4)()
    base = ctypes.addressof(words)
    places = ((base, 0, 1), (base + 8, 16, 2), (base + 16, 0, 0), (base + 24, 0, 0))
    spec = ((4, 8), torch.float32, input_device, (8, 1), 16)
    device, stream = [0], [STREAM]
    replay = module.Replay(
        *driver.pointers(),
        lambda: device[0],
        lambda index: stream[0],
        0,
        torch.Tensor,
        ((*spec, 0, 2), (*spec, 2, 3)),
        ((torch.empty(0), (4, 8), (8, 1), 3, 4),),
        places,
        ((EXEC, 0xA, 0x1, 0), (EXEC, 0xB, 0x2, 1), (EXEC, 0xC, 0x3, 2)),
        (EXEC,),
        3,
        True,
        fail,
        None,
    )
    replay.stream = STREAM  # (the runtime sets the stream its last call ran on)
    return replay, driver, words, device, stream


@pytest.fixture
def setup():
    return _replay(-1)


def test_a_call_writes_addresses_updates_changed_nodes_and_launches(setup):
    replay, driver, words, *_ = setup
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    out = replay((a, b))
    assert out.shape == (4, 8) and out.stride() == (8, 1) and out.dtype == torch.float32
    assert list(words) == [a.data_ptr(), a.data_ptr() + 16, b.data_ptr(), out.data_ptr()]
    assert driver.take() == [("set", 0xA), ("set", 0xB), ("set", 0xC), ("launch", EXEC, STREAM)]
    out2 = replay((a, b))  # the output's block is still held: a new address, only the writer updates
    assert out2.data_ptr() != out.data_ptr() and words[3] == out2.data_ptr()
    assert driver.take() == [("set", 0xA), ("launch", EXEC, STREAM)]
    del out2
    c = torch.randn(4, 8)
    replay((c, b))  # input 0 moved: its two nodes update; the writer's words are unchanged
    calls = driver.take()
    assert ("set", 0xB) in calls and ("set", 0xC) in calls and calls[-1] == ("launch", EXEC, STREAM)


def test_inputs_the_graphs_were_not_built_for_go_back_to_python(setup):
    replay, driver, words, device, _ = setup
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    before = list(words)
    refused = [
        (a,),
        (a, b, b),
        [a, b],  # not a tuple
        (a, 3.0),
        (a, torch.randn(4, 9)),
        (a, torch.randn(4, 8, dtype=torch.float64)),
        (a, torch.randn(8, 4).t()),  # strides
        (a, torch.randn(4 * 8 + 1)[1:].view(4, 8)),  # 4 bytes past a 16-byte boundary
    ]
    for inputs in refused:
        assert replay(inputs) is None
    device[0] = 1
    assert replay((a, b)) is None
    assert driver.take() == [] and list(words) == before
    on_a_gpu, driver, words, *_ = _replay(0)  # a plan for GPU 0 refuses tensors elsewhere (here the CPU's)
    assert on_a_gpu((a, b)) is None and driver.take() == [] and list(words) == [0, 0, 0, 0]


def test_python_numbers_write_their_bits_into_the_table():
    """Host scalars traced as float32, float64, int64 and bool (table words 0-3, the writer's group): a
    number of its kind writes its bits and updates the writer once; another kind goes back to Python."""
    module = native.replay_module()
    driver = FakeDriver()
    words = (ctypes.c_uint64 * 4)()
    base = ctypes.addressof(words)
    replay = module.Replay(
        *driver.pointers(),
        lambda: 0,
        lambda index: STREAM,
        0,
        torch.Tensor,
        (("f", 0, 1), ("d", 1, 2), ("q", 2, 3), ("?", 3, 4)),
        ((torch.empty(0), (2,), (1,), 0, 0),),
        tuple((base + 8 * k, 0, 0) for k in range(4)),
        ((EXEC, 0xA, 0x1, 0),),
        (EXEC,),
        1,
        True,
        fail,
        None,
    )
    replay.stream = STREAM
    numbers = (0.7, -1.5e300, -3, True)
    assert replay(numbers).shape == (2,)
    tensors = [
        torch.tensor(n, dtype=d)
        for n, d in zip(numbers, (torch.float32, torch.float64, torch.int64, torch.bool), strict=True)
    ]
    assert list(words) == [_bits(t) for t in tensors]
    assert driver.take() == [("set", 0xA), ("launch", EXEC, STREAM)]
    replay((2, -1.5e300, -3, True))  # an int where a float was traced: converted, as torch does
    assert words[0] == _bits(torch.tensor(2.0)) and driver.take() == [("set", 0xA), ("launch", EXEC, STREAM)]
    for refused in [
        (0.7, 1.0, 3.0, True),
        (0.7, 1.0, True, True),
        (0.7, 1.0, 3, 1),
        (torch.tensor(0.7), 1.0, 3, True),
        (0.7, 1.0, 1 << 64, True),
    ]:
        assert replay(refused) is None
    assert driver.take() == []


def _bits(t: torch.Tensor) -> int:
    """A one-element tensor's bytes as the zero-extended little-endian word a table slot holds."""
    return int.from_bytes(bytes(t.reshape(1).view(torch.uint8).tolist()), "little")


def test_a_watched_tensor_changed_in_place_goes_back_to_python(setup):
    replay, *_ = setup
    weight = torch.randn(3)
    replay.set_watch(((weight, weight._version),))
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    assert replay((a, b)) is not None
    weight.add_(1)
    assert replay((a, b)) is None
    replay.set_watch(((weight, weight._version),))
    assert replay((a, b)) is not None
    with pytest.raises(TypeError):
        replay.set_watch([weight])


def test_a_failed_update_raises_and_the_next_call_updates_again(setup):
    replay, driver, words, *_ = setup
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    driver.set_result = 700
    with pytest.raises(Failed, match="cuGraphExecKernelNodeSetParams: 700"):
        replay((a, b))
    assert list(words) == [0, 0, 0, 0]  # no word claims what a node may not hold
    assert all(call[0] == "set" for call in driver.take())  # nothing launched
    driver.set_result = 0
    replay((a, b))
    calls = driver.take()
    assert calls == [("set", 0xA), ("set", 0xB), ("set", 0xC), ("launch", EXEC, STREAM)]


def test_a_call_on_another_stream_goes_back_to_python(setup):
    """The runtime orders a new stream after the last call's (they share the arena), then moves the
    replay's stream to it."""
    replay, driver, words, _, stream = setup
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    stream[0] = STREAM + 0x100
    assert replay((a, b)) is None
    assert driver.take() == [] and list(words) == [0, 0, 0, 0]
    replay.stream = STREAM + 0x100
    assert replay((a, b)) is not None
    assert driver.take()[-1] == ("launch", EXEC, STREAM + 0x100)


def test_bad_construction_is_refused():
    module = native.replay_module()
    driver = FakeDriver()
    words = (ctypes.c_uint64 * 1)()
    args = [
        *driver.pointers(),
        lambda: 0,
        lambda i: 0,
        0,
        torch.Tensor,
        (),
        (),
        ((ctypes.addressof(words), 0, 5),),
    ]
    with pytest.raises(ValueError, match="group"):
        module.Replay(*args, (), (), 1, False, fail, None)
    with pytest.raises(ValueError, match="single-output"):
        module.Replay(*args[:-1], (), (), (), 1, True, fail, None)


def test_the_knob_turns_it_off_and_checks_its_value():
    with knobs.scope(native="off"):
        assert native.replay_module() is None
    with knobs.scope(native="maybe"), pytest.raises(ValueError, match="PYGRAPH_NATIVE"):
        native.replay_module()
