"""Calls that several GPU tests make the same way."""

from collections.abc import Callable, Sequence

import torch


def on_two_streams(fn: Callable[[torch.Tensor], torch.Tensor], inputs: Sequence[torch.Tensor]) -> list:
    """`fn(x)` for each input, on two side streams in turn, queued without synchronising (each stream
    first waits for the current one's work, which then waits for both); the results, once all finished."""
    streams = [torch.cuda.Stream() for _ in range(2)]
    for stream in streams:
        stream.wait_stream(torch.cuda.current_stream())
    results = []
    with torch.no_grad():
        for i, x in enumerate(inputs):
            with torch.cuda.stream(streams[i % 2]):
                results.append(fn(x))
    for stream in streams:
        torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    return results
