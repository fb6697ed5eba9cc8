"""Timing helpers for the probes: GPU time per call of a short function (replayed from a CUDA graph of 20
calls, so launch costs do not count), host time per call with the GPU idle before each, and time per call
of calls queued back to back (what a serving loop pays)."""

import statistics
import time
from collections.abc import Callable

import torch


def queued_us(fn: Callable[[int], object], calls: int = 500) -> float:
    """Wall time per call of `fn(i)` for i in range(calls), queued back to back, the GPU's work included."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for i in range(calls):
        fn(i)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def idle_host_us(fn: Callable[[int], object], calls: int = 300) -> float:
    """Median host time of `fn(i)` for i in range(calls), the GPU idle before each."""
    times = []
    for i in range(calls):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e6


def gpu_us(fn, reps: int = 20) -> float:
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(reps):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / (5 * reps)
