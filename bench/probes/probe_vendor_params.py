"""Can a recorded vendor call read a new input address per call without a copy? (issue 5's "patch" candidate)

For each call: record it alone (torch stream capture), find the input's address among the parameters of
the recorded kernel nodes (sizes from `cuFuncGetParamInfo`), clone the nodes into a graph of our own with
that parameter patched to a second input, poison the first input with NaN, replay and compare with eager.
Also reports values pointing inside the input (derived pointers, which patching the start would miss) and
the host cost of `cuGraphExecKernelNodeSetParams` on a cloned node. Then times a [1, 512] layer norm
written two ways (loads at first use, loads first) over 1, 2 and 4 warps.

    python3 bench/probes/probe_vendor_params.py
"""

import ctypes
import time

import torch
import triton
import triton.language as tl
from cuda.bindings import driver as cu
from timing import gpu_us

OK = cu.CUresult.CUDA_SUCCESS


def call(name, *args):
    out = getattr(cu, name)(*args)
    assert out[0] == OK, (name, out[0])
    return None if len(out) == 1 else out[1] if len(out) == 2 else out[1:]


def param_layout(p):
    """(offset, size) per parameter of the node's function."""
    get, handle = (cu.cuFuncGetParamInfo, p.func) if int(p.func) else (cu.cuKernelGetParamInfo, p.kern)
    layout = []
    while True:
        out = get(handle, len(layout))
        if out[0] != OK:  # past the last parameter
            return layout
        layout.append((out[1], out[2]))


def scan(p, addr, nbytes):
    """Each parameter's bytes, the places holding `addr` exactly and those pointing inside the input."""
    layout = param_layout(p)
    ptrs = (ctypes.c_void_p * len(layout)).from_address(p.kernelParams)
    blobs, exact, inside = [], [], []
    for i, (_, size) in enumerate(layout):
        blob = ctypes.string_at(ptrs[i], size)
        blobs.append(bytearray(blob))
        for off in range(0, size - 7, 4):
            v = int.from_bytes(blob[off : off + 8], "little")
            if v == addr and off % 8 == 0:
                exact.append((i, off))
            elif addr <= v < addr + nbytes:
                inside.append((i, off))
    return blobs, exact, inside


def probe(name, fn, args, k):
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        fn(*args)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(g, stream=side):
        out = fn(*args)
    graph = cu.CUgraph(g.raw_cuda_graph())
    count = call("cuGraphGetNodes", graph, 0)[1]
    nodes, _ = call("cuGraphGetNodes", graph, count)
    kinds = [call("cuGraphNodeGetType", n).name.removeprefix("CU_GRAPH_NODE_TYPE_") for n in nodes]
    x = args[k]
    addr, nbytes = x.data_ptr(), x.numel() * x.element_size()
    report = {"nodes": kinds}
    if any(kd not in ("KERNEL", "MEMSET") for kd in kinds):
        print(f"{name}: {report} (non-kernel nodes: not cloned)")
        return
    mine = call("cuGraphCreate", 0)
    keep, clones, params, patches = [], {}, {}, []
    edges = call("cuGraphGetEdges", graph, 0)
    nedges = edges[-1]
    frm, to = ([], [])
    if nedges:
        got = call("cuGraphGetEdges", graph, nedges)
        frm, to = got[0], got[1]
    deps = {int(n): [] for n in nodes}
    for a, b in zip(frm, to, strict=True):
        deps[int(b)].append(a)
    finds = []
    order = list(nodes)  # capture order is topological for a chain; resolve by waiting on deps
    done = set()
    while order:
        n = next(n for n in order if all(int(d) in done for d in deps[int(n)]))
        order.remove(n)
        if call("cuGraphNodeGetType", n) == cu.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEMSET:
            m = call("cuGraphMemsetNodeGetParams", n)
            assert not (addr <= int(m.dst) < addr + nbytes), "memset of the input"
            d = [clones[int(x_)] for x_ in deps[int(n)]]
            ctx = call("cuCtxGetCurrent")
            clones[int(n)] = call("cuGraphAddMemsetNode", mine, d, len(d), m, ctx)
            done.add(int(n))
            continue
        p = call("cuGraphKernelNodeGetParams", n)
        blobs, exact, inside = scan(p, addr, nbytes)
        finds.append((exact, inside, int(p.func) != 0))
        bufs = [(ctypes.c_char * len(b)).from_buffer(b) for b in blobs]
        keep.append((blobs, bufs))
        arr = (ctypes.c_void_p * len(bufs))(*[ctypes.addressof(b) for b in bufs])
        keep.append(arr)
        for i, off in exact:
            patches.append((n, blobs, i, off))
        q = cu.CUDA_KERNEL_NODE_PARAMS()
        q.func, q.kern, q.ctx = p.func, p.kern, p.ctx
        q.gridDimX, q.gridDimY, q.gridDimZ = p.gridDimX, p.gridDimY, p.gridDimZ
        q.blockDimX, q.blockDimY, q.blockDimZ = p.blockDimX, p.blockDimY, p.blockDimZ
        q.sharedMemBytes = p.sharedMemBytes
        q.kernelParams = ctypes.addressof(arr)  # the same parameters serve the later updates
        d = [clones[int(x_)] for x_ in deps[int(n)]]
        clones[int(n)] = call("cuGraphAddKernelNode", mine, d, len(d), q)
        call("cuGraphKernelNodeCopyAttributes", clones[int(n)], n)
        params[int(n)] = q
        done.add(int(n))
    report["exact"] = [f[0] for f in finds]
    report["inside"] = [f[1] for f in finds]
    report["func"] = [f[2] for f in finds]
    exe = call("cuGraphInstantiate", mine, 0)
    x2 = torch.randn_like(x) if x.is_floating_point() else x.clone()
    new = list(args)
    new[k] = x2
    expect = fn(*new)
    stream = cu.CUstream(torch.cuda.current_stream().cuda_stream)
    t_set = None
    for _n, blobs, i, off in patches:
        blobs[i][off : off + 8] = x2.data_ptr().to_bytes(8, "little")
    setters = [(clones[int(n)], params[int(n)]) for n in dict.fromkeys(n for n, *_ in patches)]
    for node, q in setters:
        call("cuGraphExecKernelNodeSetParams", exe, node, q)
    if setters:
        t0 = time.perf_counter()
        for _ in range(1000):
            cu.cuGraphExecKernelNodeSetParams(exe, setters[0][0], setters[0][1])
        t_set = (time.perf_counter() - t0) * 1e3
    if x.is_floating_point():
        x.fill_(float("nan"))
    else:
        x.fill_(0)
    torch.cuda.synchronize()
    # the output of the recording is what the cloned nodes write
    call("cuGraphLaunch", exe, stream)
    torch.cuda.synchronize()
    outs = out if isinstance(out, (tuple, list)) else (out,)
    exps = expect if isinstance(expect, (tuple, list)) else (expect,)
    same = all(torch.equal(a, b) for a, b in zip(outs, exps, strict=True))
    close = all(torch.allclose(a, b, rtol=1e-5, atol=1e-5) for a, b in zip(outs, exps, strict=True))
    report.update(patched=len(patches), equal=same, close=close, set_us=t_set)
    print(f"{name}: {report}", flush=True)


def cases():
    dev = "cuda"
    r = lambda *s: torch.randn(*s, device=dev)  # noqa: E731
    w, b = r(512, 512), r(512)
    yield "linear 1x512 (gemv)", torch.nn.functional.linear, (r(1, 512), w, b), 0
    yield "linear 128x512", torch.nn.functional.linear, (r(128, 512), w, b), 0
    yield "linear 4096x768 weight", torch.nn.functional.linear, (r(4096, 768), r(768, 768), r(768)), 1
    yield "mm 64x512x512", torch.mm, (r(64, 512), w), 0
    yield "addmm 2048", torch.addmm, (r(2048), r(256, 1024), r(1024, 2048)), 1
    yield "bmm 12x128x64", torch.bmm, (r(12, 128, 64), r(12, 64, 128)), 0
    yield "conv 1x3x224", torch.nn.functional.conv2d, (r(1, 3, 224, 224), r(64, 3, 7, 7)), 0
    conv_cl = lambda x, w: torch.nn.functional.conv2d(x, w, padding=1)  # noqa: E731
    x_cl = r(8, 64, 56, 56).to(memory_format=torch.channels_last)
    w_cl = r(64, 64, 3, 3).to(memory_format=torch.channels_last)
    yield "conv nhwc 8x64x56", conv_cl, (x_cl, w_cl), 0
    yield "mm 4096 (TMA tiles)", torch.mm, (r(4096, 4096), r(4096, 4096)), 0
    yield "mm 4096 weight", torch.mm, (r(4096, 4096), r(4096, 4096)), 1
    yield "linear 2048x768 bias", torch.nn.functional.linear, (r(2048, 768), r(3072, 768), r(3072)), 0
    sdpa = torch.nn.functional.scaled_dot_product_attention
    yield (
        "sdpa flash 8x12x1024x64",
        sdpa,
        (r(8, 12, 1024, 64).half(), r(8, 12, 1024, 64).half(), r(8, 12, 1024, 64).half()),
        1,
    )
    yield "sdpa 1x12x128x64", sdpa, (r(1, 12, 128, 64), r(1, 12, 128, 64), r(1, 12, 128, 64)), 0
    ids = torch.randint(0, 1000, (1, 32), device=dev)
    yield "embedding", lambda i, t: torch.nn.functional.embedding(i, t), (ids, r(1000, 768)), 0
    yield "cumsum", lambda x: torch.cumsum(x, 1), (r(64, 1000),), 0
    yield "topk", lambda x: torch.topk(x, 5)[0], (r(64, 1000),), 0


@triton.jit
def ln_lazy(x_ptr, w_ptr, b_ptr, out_ptr, N: tl.constexpr):
    col = tl.arange(0, N)
    x = tl.load(x_ptr + col)
    v = x * 0.5 * (1.0 + tl.math.erf(x * 0.7071067811865476))
    mean = tl.sum(v, 0) / N
    t = v - mean
    var = tl.sum(t * t, 0) / N
    inv = 1.0 / tl.math.sqrt_rn(var + 1e-5)
    w = tl.load(w_ptr + col)
    b = tl.load(b_ptr + col)
    tl.store(out_ptr + col, t * inv * w + b)


@triton.jit
def ln_first(x_ptr, w_ptr, b_ptr, out_ptr, N: tl.constexpr):
    col = tl.arange(0, N)
    x = tl.load(x_ptr + col)
    w = tl.load(w_ptr + col)
    b = tl.load(b_ptr + col)
    v = x * 0.5 * (1.0 + tl.math.erf(x * 0.7071067811865476))
    mean = tl.sum(v, 0) / N
    t = v - mean
    var = tl.sum(t * t, 0) / N
    inv = 1.0 / tl.math.sqrt_rn(var + 1e-5)
    tl.store(out_ptr + col, t * inv * w + b)


def layer_norms():
    x, w, b, out = (torch.randn(512, device="cuda") for _ in range(4))
    for kernel in (ln_lazy, ln_first):
        for warps in (1, 2, 4, 8):
            us = gpu_us(lambda k=kernel, nw=warps: k[(1,)](x, w, b, out, N=512, num_warps=nw))
            print(f"{kernel.__name__:8s} warps={warps}: {us:.2f} us", flush=True)


if __name__ == "__main__":
    print(torch.cuda.get_device_name(), torch.__version__)
    for name, fn, args, k in cases():
        try:
            probe(name, fn, args, k)
        except Exception as exc:  # report and go on
            print(f"{name}: failed: {type(exc).__name__}: {exc}", flush=True)
    layer_norms()
