"""One arena for all the programs of a compiled model on a device, as large as the largest needs.

A compiled model runs one program per call: its example's, or a variant's for other input shapes, other
strides, another way through a decision on data, other settings (`pygraph/api.py`); select-graphs'
measuring runtimes are programs of it too, while it compiles. Their calls never overlap on the host (they
come one at a time, under the compiled model's lock) and run in stream order on the GPU, and no plan reads
arena bytes a call did not write first (the emulator starts every call on an arena of NaNs). So one arena
serves them all, as reduce-overhead's graphs of one tree share one memory pool: a model called at four
sequence lengths holds the largest length's arena, not the sum of four.

Two rules keep that safe. Streams: a call on another stream than the last call of any program waits for
that call's work (`Arena.follow`), and every program's native replay then leaves calls on the old stream
to Python, which orders them the same way. Growth: a program needing more bytes than the arena holds
replaces it; the device is synchronised first (queued calls may still use the old bytes), and every other
program drops its graphs (they bake addresses in) and is placed on the new bytes, rebuilding its graphs
at its next call, as after a rebind of the model's state.
"""

from __future__ import annotations

import weakref
from typing import Protocol

import torch


class ArenaUser(Protocol):
    """What an arena asks of the runtimes it serves (`CudaRuntime`)."""

    def leave_arena(self) -> None: ...  # drop the graphs and every view of the arena's bytes

    def enter_arena(self, storage: torch.Tensor) -> None: ...  # place the plan's buffers on `storage`

    def on_stream(self, raw: int) -> None: ...  # calls on stream `raw` are ordered after the last one


class Arena:
    """The bytes the programs of one compiled model share on one device, and the stream of the last call."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.storage = torch.empty(0, dtype=torch.uint8, device=device)
        self.raw: int | None = None  # the raw stream of the last call of any program
        self._users: weakref.WeakSet[ArenaUser] = weakref.WeakSet()

    def join(self, user: ArenaUser, nbytes: int) -> torch.Tensor:
        """The storage `user` places its plan's buffers on, grown to `nbytes` first where it holds fewer."""
        if nbytes > self.storage.numel():
            torch.cuda.synchronize(self.device)  # queued calls may still use the old bytes
            users = list(self._users)
            for other in users:
                other.leave_arena()
            self.storage = torch.empty(0, dtype=torch.uint8, device=self.device)  # the old bytes go first
            self.storage = torch.empty(nbytes, dtype=torch.uint8, device=self.device)
            for other in users:
                other.enter_arena(self.storage)
        self._users.add(user)
        return self.storage

    def follow(self, raw: int) -> None:
        """A call on stream `raw`: where the last call ran on another stream, its work comes first, as eager's
        allocator keeps one stream's memory from another's; every user then takes calls on `raw`."""
        if self.raw is not None and self.raw != raw:
            done = torch.cuda.Event()
            done.record(torch.cuda.ExternalStream(self.raw, device=self.device))
            torch.cuda.ExternalStream(raw, device=self.device).wait_event(done)
        self.raw = raw
        for user in list(self._users):
            user.on_stream(raw)


class Arenas:
    """The arenas of one compiled model, one per device its programs run on."""

    def __init__(self) -> None:
        self._by_device: dict[int, Arena] = {}

    def on(self, device: torch.device) -> Arena:
        arena = self._by_device.get(device.index)
        if arena is None:
            arena = self._by_device[device.index] = Arena(device)
        return arena
