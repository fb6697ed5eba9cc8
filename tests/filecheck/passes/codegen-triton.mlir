// RUN: pygraph-opt %s -p codegen-triton --split-input-file | filecheck %s
// RUN: pygraph-opt %s -p 'codegen-triton{max-block=128}' --split-input-file | filecheck %s --check-prefix=SMALL
// RUN: pygraph-opt %s -p 'codegen-triton{max-rblock=16}' --split-input-file | filecheck %s --check-prefix=LOOP

// An epilogue, gelu(a + bias) with a broadcast bias: the contiguous buffers are addressed by the linear
// index, the bias by its column; 8192 elements make 8 programs of 1024 with no mask. The kernel op
// points at the generated kernel, and the fused function is gone.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    entry = "k0_add_gelu", num_stages = 1 : i64, num_warps = 4 : i64
// CHECK-SAME:    signature = ["*fp32:16", "*fp32:16", "*fp32:16"]
// CHECK-SAME:    def k0_add_gelu(in0, in1, out0):
// CHECK-SAME:    i = tl.program_id(0) * 1024 + tl.arange(0, 1024)\0A
// CHECK-SAME:    d1 = i % 128\0A
// CHECK-SAME:    x0 = tl.load(in0 + i)\0A
// CHECK-SAME:    x1 = tl.load(in1 + d1)\0A
// CHECK-SAME:    v0 = x0 + x1\0A
// CHECK-SAME:    v1 = v0 * 0.5 * (1.0 + tl.math.erf(v0 * 0.7071067811865476))\0A
// CHECK-SAME:    tl.store(out0 + i, v1)\0A
// CHECK-SAME:    sym_name = "k0_add_gelu"
// CHECK-NOT:   func.func private
// CHECK-LABEL: func.func @main
// CHECK:         "pygraph.kernel"(%arg0, %arg1, %{{.*}}) {access = ["r", "r", "w"], grid = [8, 1, 1], kernel = @k0_add_gelu
// SMALL-LABEL: "pygraph.triton_kernel"()
// SMALL-SAME:    num_warps = 1 : i64
// SMALL-SAME:    i = tl.program_id(0) * 128 + tl.arange(0, 128)\0A
// SMALL-LABEL: func.func @main
// SMALL:         grid = [64, 1, 1]
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[64,128],f32>, %arg1: !torch.vtensor<[128],f32>) -> !torch.vtensor<[64,128],f32> attributes {pygraph.fused} {
    %int1 = torch.constant.int 1
    %0 = torch.aten.add.Tensor %arg0, %arg1, %int1 : !torch.vtensor<[64,128],f32>, !torch.vtensor<[128],f32>, !torch.int -> !torch.vtensor<[64,128],f32>
    %str = torch.constant.str "none"
    %1 = torch.aten.gelu %0, %str : !torch.vtensor<[64,128],f32>, !torch.str -> !torch.vtensor<[64,128],f32>
    return %1 : !torch.vtensor<[64,128],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[64, 128], [128, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[128], [1], 0 : i64, f32>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[64, 128], [128, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %0) {kernel = @fused_0, access = ["r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// One fused function launched on three pairs of buffers: contiguous, a transposed view of a library
// result (inside a segment), and contiguous again. The first and third share a kernel; the transposed
// input is read at its strides. A view starting one element in is not 16-byte aligned ("*fp32").
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    signature = ["*fp32:16", "*fp32:16"]
// CHECK-SAME:    mask = i < 35\0A
// CHECK-SAME:    x0 = tl.load(in0 + i, mask=mask)\0A
// CHECK-SAME:    sym_name = "k0_relu"
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    signature = ["*fp32", "*fp32:16"]
// CHECK-SAME:    d0 = i // 5\0A
// CHECK-SAME:    d1 = i % 5\0A
// CHECK-SAME:    x0 = tl.load(in0 + d0 + d1 * 7, mask=mask)\0A
// CHECK-SAME:    tl.store(out0 + i, v0, mask=mask)\0A
// CHECK-SAME:    sym_name = "k1_relu"
// CHECK-NOT:   "pygraph.triton_kernel"
// CHECK-LABEL: func.func @main
// CHECK:         "pygraph.kernel"(%arg0, %{{.*}}) {{.*}}kernel = @k0_relu
// CHECK:         "pygraph.kernel"(%{{.*}}, %{{.*}}) {{.*}}kernel = @k1_relu
// CHECK:         "pygraph.kernel"(%arg0, %{{.*}}) {{.*}}kernel = @k0_relu
module {
  func.func private @fused_3(%arg0: !torch.vtensor<[7,5],f32>) -> !torch.vtensor<[7,5],f32> attributes {pygraph.fused} {
    %0 = torch.aten.relu %arg0 : !torch.vtensor<[7,5],f32> -> !torch.vtensor<[7,5],f32>
    return %0 : !torch.vtensor<[7,5],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[7, 5], [5, 1], 0 : i64, f32>}) -> (!pygraph.buf, !pygraph.buf, !pygraph.buf) {
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[7, 5], [5, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %b = "pygraph.alloc"() {layout = #pygraph.layout<[7, 5], [5, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %c = "pygraph.alloc"() {layout = #pygraph.layout<[7, 5], [5, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %r = "pygraph.segment"() ({
      "pygraph.kernel"(%arg0, %a) {kernel = @fused_3, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      %m = "pygraph.library"(%a) {op = "aten.mm.default", args = [0 : index, 0 : index], layouts = [#pygraph.layout<[5, 8], [8, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
      "pygraph.yield"(%m) {operandSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 1>} : () -> !pygraph.buf
    %t = "pygraph.view"(%r) {layout = #pygraph.layout<[7, 5], [1, 7], 1 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    "pygraph.segment"() ({
      "pygraph.kernel"(%t, %b) {kernel = @fused_3, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%arg0, %c) {kernel = @fused_3, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
    return %a, %b, %c : !pygraph.buf, !pygraph.buf, !pygraph.buf
  }
}

// -----

// An identity fused function is a strided copy: here from a column-major f16 buffer into a row-major one.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    signature = ["*fp16:16", "*fp16:16"]
// CHECK-SAME:    x0 = tl.load(in0 + d0 + d1 * 6, mask=mask)\0A
// CHECK-SAME:    tl.store(out0 + i, x0, mask=mask)\0A
// CHECK-SAME:    sym_name = "k0_copy"
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    "pygraph.kernel"(%arg0, %arg1) {access = ["r", "w"], grid = [1, 1, 1], kernel = @k0_copy
module {
  func.func private @copy_0(%arg0: !torch.vtensor<[6,9],f16>) -> !torch.vtensor<[6,9],f16> attributes {pygraph.fused} {
    return %arg0 : !torch.vtensor<[6,9],f16>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[6, 9], [1, 6], 0 : i64, f16>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[6, 9], [9, 1], 0 : i64, f16>}) {
    "pygraph.kernel"(%arg0, %arg1) {kernel = @copy_0, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    return
  }
}

// -----

// No launches of fused functions: nothing changes.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[M:.*]] = "pygraph.library"(%arg0)
// CHECK-NEXT:    return %[[M]]
func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>}) -> !pygraph.buf {
  %m = "pygraph.library"(%arg0) {op = "aten.mm.default", args = [0 : index, 0 : index], layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
  return %m : !pygraph.buf
}

// -----

// A reduction kernel: softmax over rows of 40, times a broadcast row, and the rows' amax as a second,
// per-row output ([6, 1]). Rows of 40 fit in a block of 64 (masked), so each program keeps 8 whole rows
// in registers (a warp per 128 elements), loading every input first; the amax (max and NaN count) and the
// softmax share the loaded row. With max-rblock=16 each program loops over one row in blocks of 16 columns, with 16 warps: once
// per reduction, once for the per-element store.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    num_warps = 4 : i64
// CHECK-SAME:    # [6, 40] reduced over [1]: 6 rows of 40, 1 programs of 8 x 64, whole rows\0A
// CHECK-SAME:    row = tl.program_id(0) * 8 + tl.arange(0, 8)[:, None]\0A
// CHECK-SAME:    xmask = row < 6\0A
// CHECK-SAME:    col = tl.arange(0, 64)[None, :]\0A
// CHECK-SAME:    cmask = col < 40\0A
// CHECK-SAME:    mask = xmask & cmask\0A
// CHECK-SAME:    x0 = tl.load(in0 + row * 40 + col, mask=mask)\0A
// CHECK-SAME:    x1 = tl.load(in1 + col, mask=mask)\0A
// CHECK-SAME:    r0 = tl.reduce(tl.where(cmask, x0, float(\22-inf\22)), 1, tl.standard._elementwise_max, keep_dims=True)\0A
// CHECK-SAME:    r3 = tl.reduce(tl.where(cmask, t2, 0.0), 1, tl.standard._sum_combine, keep_dims=True)\0A
// CHECK-SAME:    v8 = tl.where(r7 > 0.0, float(\22nan\22), r0)\0A
// CHECK-SAME:    tl.store(out0 + row * 40 + col, v5, mask=mask)\0A
// CHECK-SAME:    tl.store(out1 + row, v8, mask=xmask)\0A
// CHECK-LABEL: func.func @main
// CHECK:         "pygraph.kernel"(%arg0, %arg1, %{{.*}}, %{{.*}}) {access = ["r", "r", "w", "w"], grid = [1, 1, 1], kernel = @k0_softmax_mul_amax
// LOOP-LABEL:  "pygraph.triton_kernel"() {entry = "k0_softmax_mul_amax"
// LOOP-SAME:     num_warps = 16 : i64
// LOOP-SAME:     6 rows of 40, 6 programs of 1 x 16, looping over columns\0A
// LOOP-SAME:     acc0 = tl.full([1, 16], float(\22-inf\22), tl.float32)\0A
// LOOP-SAME:     for c0 in range(0, 40, 16):\0A
// LOOP-SAME:         col = c0 + tl.arange(0, 16)[None, :]\0A
// LOOP-SAME:         acc0 = tl.maximum(acc0, tl.where(cmask, x0, float(\22-inf\22)))\0A
// LOOP-SAME:     r0 = tl.reduce(acc0, 1, tl.standard._elementwise_max, keep_dims=True)\0A
// LOOP-SAME:         t2 = tl.exp(t1)\0A
// LOOP-SAME:         acc3 = acc3 + tl.where(cmask, t2, 0.0)\0A
// LOOP-SAME:     for c0 in range(0, 40, 16):\0A
// LOOP-SAME:         tl.store(out0 + row * 40 + col, v5, mask=cmask)\0A
// LOOP-SAME:     tl.store(out1 + row, v8)\0A
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[6,40],f32>, %arg1: !torch.vtensor<[40],f32>) -> (!torch.vtensor<[6,40],f32>, !torch.vtensor<[6,1],f32>) attributes {pygraph.fused} {
    %int-1 = torch.constant.int -1
    %none = torch.constant.none
    %0 = torch.aten.softmax.int %arg0, %int-1, %none : !torch.vtensor<[6,40],f32>, !torch.int, !torch.none -> !torch.vtensor<[6,40],f32>
    %1 = torch.aten.mul.Tensor %0, %arg1 : !torch.vtensor<[6,40],f32>, !torch.vtensor<[40],f32> -> !torch.vtensor<[6,40],f32>
    %dims = torch.prim.ListConstruct %int-1 : (!torch.int) -> !torch.list<int>
    %true = torch.constant.bool true
    %2 = torch.aten.amax %arg0, %dims, %true : !torch.vtensor<[6,40],f32>, !torch.list<int>, !torch.bool -> !torch.vtensor<[6,1],f32>
    return %1, %2 : !torch.vtensor<[6,40],f32>, !torch.vtensor<[6,1],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[6, 40], [40, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[40], [1], 0 : i64, f32>}) -> (!pygraph.buf, !pygraph.buf) {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[6, 40], [40, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %1 = "pygraph.alloc"() {layout = #pygraph.layout<[6, 1], [1, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %0, %1) {kernel = @fused_0, access = ["r", "r", "w", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0, %1 : !pygraph.buf, !pygraph.buf
  }
}

// -----

// A sum over strided columns (the rows are contiguous: a mean over the pixels of an NHWC tensor): 16 rows
// of 64 columns fit a program, so each takes whole rows in one pass, loading 16 contiguous rows per
// column; with max-rblock=16 the rows do not fit, and programs of 64 rows loop over the columns.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    # [96, 49] reduced over [1]: 96 rows of 49, 6 programs of 16 x 64, whole rows\0A
// CHECK-SAME:    x0 = tl.load(in0 + row + col * 96, mask=cmask)\0A
// LOOP-LABEL:  "pygraph.triton_kernel"() {entry = "k0_sum"
// LOOP-SAME:     # [96, 49] reduced over [1]: 96 rows of 49, 2 programs of 64 x 16, looping over columns\0A
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[96,49],f32>) -> !torch.vtensor<[96,1],f32> attributes {pygraph.fused} {
    %int1 = torch.constant.int 1
    %dims = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
    %true = torch.constant.bool true
    %none = torch.constant.none
    %0 = torch.aten.sum.dim_IntList %arg0, %dims, %true, %none : !torch.vtensor<[96,49],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[96,1],f32>
    return %0 : !torch.vtensor<[96,1],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[96, 49], [1, 96], 0 : i64, f32>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[96, 1], [1, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %0) {kernel = @fused_0, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// The same product twice (tanh(a*b) + (a*b)^2, as eager code often repeats itself): computed once. tanh
// calls libdevice, as eager's kernels do (the emulator binds libdevice to numpy's functions).
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    from triton.language.extra import libdevice\0A
// CHECK-SAME:    v0 = x0 * x1\0A
// CHECK-SAME:    v1 = libdevice.tanh(v0)\0A
// CHECK-SAME:    v2 = v0 * v0\0A
// CHECK-SAME:    v3 = v1 + v2\0A
// CHECK-SAME:    tl.store(out0 + i, v3)\0A
module {
  func.func private @fused_0(%a: !torch.vtensor<[1024],f32>, %b: !torch.vtensor<[1024],f32>) -> !torch.vtensor<[1024],f32> attributes {pygraph.fused} {
    %int1 = torch.constant.int 1
    %0 = torch.aten.mul.Tensor %a, %b : !torch.vtensor<[1024],f32>, !torch.vtensor<[1024],f32> -> !torch.vtensor<[1024],f32>
    %1 = torch.aten.tanh %0 : !torch.vtensor<[1024],f32> -> !torch.vtensor<[1024],f32>
    %2 = torch.aten.mul.Tensor %a, %b : !torch.vtensor<[1024],f32>, !torch.vtensor<[1024],f32> -> !torch.vtensor<[1024],f32>
    %3 = torch.aten.mul.Tensor %2, %2 : !torch.vtensor<[1024],f32>, !torch.vtensor<[1024],f32> -> !torch.vtensor<[1024],f32>
    %4 = torch.aten.add.Tensor %1, %3, %int1 : !torch.vtensor<[1024],f32>, !torch.vtensor<[1024],f32>, !torch.int -> !torch.vtensor<[1024],f32>
    return %4 : !torch.vtensor<[1024],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[1024], [1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[1024], [1], 0 : i64, f32>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[1024], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %0) {kernel = @fused_0, access = ["r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// A transposed output (strides [1, 4]): lanes follow the output's memory order, so the stores are
// contiguous (the input, in the other order, is read with a stride).
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    d0 = i // 4\0A
// CHECK-SAME:    d1 = i % 4\0A
// CHECK-SAME:    x0 = tl.load(in0 + d0 + d1 * 64)\0A
// CHECK-SAME:    tl.store(out0 + i, v0)\0A
module {
  func.func private @fused_0(%a: !torch.vtensor<[4,64],f32>) -> !torch.vtensor<[4,64],f32> attributes {pygraph.fused} {
    %0 = torch.aten.neg %a : !torch.vtensor<[4,64],f32> -> !torch.vtensor<[4,64],f32>
    return %0 : !torch.vtensor<[4,64],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[4, 64], [64, 1], 0 : i64, f32>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[4, 64], [1, 4], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %0) {kernel = @fused_0, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// A concatenation along dim 1: the index along it (k1) chooses the piece, each piece is loaded at its own
// strides (the first is a transposed view) less its start, masked to its range, and converted to the
// result's dtype (the int64 piece promotes to float32, as eager's cat does).
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    def k0_cat_relu(in0, in1, out0):
// CHECK-SAME:    k1 = i % 7\0A
// CHECK-SAME:    p0 = tl.load(in0 + d0 + d1 * 2, mask=(k1 < 3) & mask)\0A
// CHECK-SAME:    p1 = tl.load(in1 + d0 * 4 + d1 - 3, mask=(k1 >= 3) & mask)\0A
// CHECK-SAME:    v2 = tl.where(k1 < 3, p0, p1.to(tl.float32))\0A
// CHECK-SAME:    tl.store(out0 + i, v3, mask=mask)\0A
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[2,3],f32>, %arg1: !torch.vtensor<[2,4],si64>) -> !torch.vtensor<[2,7],f32> attributes {pygraph.fused} {
    %list = torch.prim.ListConstruct %arg0, %arg1 : (!torch.vtensor<[2,3],f32>, !torch.vtensor<[2,4],si64>) -> !torch.list<vtensor>
    %int1 = torch.constant.int 1
    %0 = torch.aten.cat %list, %int1 : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[2,7],f32>
    %1 = torch.aten.relu %0 : !torch.vtensor<[2,7],f32> -> !torch.vtensor<[2,7],f32>
    return %1 : !torch.vtensor<[2,7],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 3], [1, 2], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 4], [4, 1], 0 : i64, si64>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[2, 7], [7, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %0) {kernel = @fused_0, access = ["r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// An attention (`pygraph.attention_kernel`): two programs of 16 queries per head of 32 (8 heads are too few
// to fill the GPU with more rows per program), the key blocks in a loop,
// every buffer at its own strides: q's and the result's heads interleaved ([B, L, H, E] in memory), a
// boolean padding mask broadcast over heads and queries (stride 0: one row per batch), head dim 24 of v
// padded to 32 under a mask, keys 40 of a block of 64 masked; tl.dot in the recorded precision.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    entry = "k0_attention", num_stages = 2 : i64, num_warps = 4 : i64
// CHECK-SAME:    signature = ["*fp32:16", "*fp32:16", "*fp32:16", "*i1:16", "*fp32:16"]
// CHECK-SAME:    def k0_attention(in0, in1, in2, in3, out0):
// CHECK-SAME:    bh = pid // 2\0A
// CHECK-SAME:    first = (pid % 2) * 16\0A
// CHECK-SAME:    bd0 = bh // 4\0A
// CHECK-SAME:    bd1 = bh % 4\0A
// CHECK-SAME:    q = tl.load(in0 + bd0 * 2048 + bd1 * 16 + rows * 64 + e_row)\0A
// CHECK-SAME:    for start in range(0, 40, 64):\0A
// CHECK-SAME:    kt = tl.load(in1 + bd0 * 2560 + bd1 * 640 + cols * 16 + e_col, mask=cols < 40, other=0.0)\0A
// CHECK-SAME:    s = tl.dot(q, kt, input_precision=\22tf32\22) * 0.25\0A
// CHECK-SAME:    s = tl.where(tl.load(in3 + bd0 * 40 + cols, mask=cols < 40, other=0), s, float(\22-inf\22))\0A
// CHECK-SAME:    m_use = tl.where(m_new == float(\22-inf\22), 0.0, m_new)\0A
// CHECK-SAME:    vb = tl.load(in2 + bd0 * 3840 + bd1 * 960 + key_rows * 24 + ev, mask=(key_rows < 40) & (ev < 24), other=0.0)\0A
// CHECK-SAME:    acc = acc * alpha + tl.dot(p, vb, input_precision=\22tf32\22)\0A
// CHECK-SAME:    out = acc / tl.where(l_i == 0.0, 1.0, l_i)\0A
// CHECK-SAME:    tl.store(out0 + bd0 * 3072 + bd1 * 24 + rows * 96 + ev, out, mask=ev < 24)\0A
// CHECK-LABEL: func.func @main
// CHECK:         "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3, %{{.*}}) {access = ["r", "r", "r", "r", "w"], grid = [16, 1, 1], kernel = @k0_attention
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[2,4,32,16],f32>, %arg1: !torch.vtensor<[2,4,40,16],f32>, %arg2: !torch.vtensor<[2,4,40,24],f32>, %arg3: !torch.vtensor<[2,1,1,40],i1>) -> !torch.vtensor<[2,4,32,24],f32> attributes {pygraph.fused} {
    %float0 = torch.constant.float 0.000000e+00
    %false = torch.constant.bool false
    %float = torch.constant.float 2.500000e-01
    %0 = torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %arg3, %float0, %false, %float, %false {pygraph.attention_kernel = "tf32", pygraph.class = "attention"} : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,40,16],f32>, !torch.vtensor<[2,4,40,24],f32>, !torch.vtensor<[2,1,1,40],i1>, !torch.float, !torch.bool, !torch.float, !torch.bool -> !torch.vtensor<[2,4,32,24],f32>
    return %0 : !torch.vtensor<[2,4,32,24],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 4, 32, 16], [2048, 16, 64, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 4, 40, 16], [2560, 640, 16, 1], 0 : i64, f32>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 4, 40, 24], [3840, 960, 24, 1], 0 : i64, f32>}, %arg3: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 1, 1, 40], [40, 40, 40, 1], 0 : i64, i1>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[2, 4, 32, 24], [3072, 24, 96, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3, %0) {kernel = @fused_0, access = ["r", "r", "r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 5>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// A product of one row (class `matvec`): each program multiplies the whole row (37 values, padded to 64
// under a mask) by two rows of the weight and adds their bias; 25 programs cover the 50 outputs.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    entry = "k0_matvec", num_stages = 1 : i64, num_warps = 1 : i64
// CHECK-SAME:    def k0_matvec(in0, in1, in2, out0):
// CHECK-SAME:    pid = tl.program_id(0)\0A
// CHECK-SAME:    x = tl.load(in0 + k, mask=k < 37, other=0.0)\0A
// CHECK-SAME:    n = pid * 2 + tl.arange(0, 2)\0A
// CHECK-SAME:    w = tl.load(in1 + n[:, None] * 37 + k[None, :], mask=k[None, :] < 37, other=0.0)\0A
// CHECK-SAME:    acc = tl.reduce(w * x[None, :], 1, tl.standard._sum_combine)\0A
// CHECK-SAME:    acc = acc + tl.load(in2 + n)\0A
// CHECK-SAME:    tl.store(out0 + n, acc)\0A
// CHECK-LABEL: func.func @main
// CHECK:         "pygraph.kernel"(%arg0, %arg1, %arg2, %{{.*}}) {access = ["r", "r", "r", "w"], grid = [25, 1, 1], kernel = @k0_matvec
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[1,37],f32>, %arg1: !torch.vtensor<[50,37],f32>, %arg2: !torch.vtensor<[50],f32>) -> !torch.vtensor<[1,50],f32> attributes {pygraph.fused} {
    %0 = torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "matvec"} : !torch.vtensor<[1,37],f32>, !torch.vtensor<[50,37],f32>, !torch.vtensor<[50],f32> -> !torch.vtensor<[1,50],f32>
    return %0 : !torch.vtensor<[1,50],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 37], [37, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[50, 37], [37, 1], 0 : i64, f32>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[50], [1], 0 : i64, f32>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[1, 50], [50, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %arg2, %0) {kernel = @fused_0, access = ["r", "r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// A product with its epilogue (class `matmul`): 37 rows of 40 by a [50, 40] weight, 3 programs of 16 x 64
// with K padded to one step of 64, every tail masked; the bias added to the block, then GELU applied to it
// in registers and stored: the product itself is never written.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    entry = "k0_linear_gelu", num_stages = 3 : i64, num_warps = 4 : i64
// CHECK-SAME:    rm = pid * 16 + tl.arange(0, 16)\0A
// CHECK-SAME:    rn = tl.arange(0, 64)\0A
// CHECK-SAME:    xrow = rm * 40\0A
// CHECK-SAME:    for k0 in range(0, 40, 64):\0A
// CHECK-SAME:    a = tl.load(in0 + xrow[:, None] + k[None, :], mask=(rm[:, None] < 37) & (k[None, :] < 40), other=0.0)\0A
// CHECK-SAME:    b = tl.load(in1 + k[:, None] + rn[None, :] * 40, mask=(k[:, None] < 40) & (rn[None, :] < 50), other=0.0)\0A
// CHECK-SAME:    acc0 = tl.dot(a, b, acc0, input_precision=\22tf32\22)\0A
// CHECK-SAME:    acc0 = acc0 + tl.load(in2 + rn, mask=rn < 50, other=0.0)[None, :]\0A
// CHECK-SAME:    i = rm[:, None] * 50 + rn[None, :]\0A
// CHECK-SAME:    mask = (rm[:, None] < 37) & (rn[None, :] < 50)\0A
// CHECK-SAME:    v0 = acc0 * 0.5 * (1.0 + tl.math.erf(acc0 * 0.7071067811865476))\0A
// CHECK-SAME:    tl.store(out0 + i, v0, mask=mask)\0A
// CHECK-LABEL: func.func @main
// CHECK:         "pygraph.kernel"(%arg0, %arg1, %arg2, %{{.*}}) {access = ["r", "r", "r", "w"], grid = [3, 1, 1], kernel = @k0_linear_gelu
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[37,40],f32>, %arg1: !torch.vtensor<[50,40],f32>, %arg2: !torch.vtensor<[50],f32>) -> !torch.vtensor<[37,50],f32> attributes {pygraph.fused} {
    %0 = torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "matmul", pygraph.matmul_kernel = "tf32"} : !torch.vtensor<[37,40],f32>, !torch.vtensor<[50,40],f32>, !torch.vtensor<[50],f32> -> !torch.vtensor<[37,50],f32>
    %str = torch.constant.str "none"
    %1 = torch.aten.gelu %0, %str {pygraph.class = "pointwise"} : !torch.vtensor<[37,50],f32>, !torch.str -> !torch.vtensor<[37,50],f32>
    return %1 : !torch.vtensor<[37,50],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[37, 40], [40, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[50, 40], [40, 1], 0 : i64, f32>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[50], [1], 0 : i64, f32>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[37, 50], [50, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %arg2, %0) {kernel = @fused_0, access = ["r", "r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// Half-precision products of a few rows (class `matvec`, 3 rows of [3, 1, 40]: a decoding step of three
// sequences) multiplying one row operand: one tensor-core kernel, the 3 rows padded to one block of 16 for
// every program, each product in programs of its own (a [24, 40] weight with a bias: 2 programs of 16
// columns; a [9, 40] one: 1), K padded to one step of 64; bfloat16 dots accumulated in float32, each
// product stored in its output's layout (`orow`: rows 9 values apart in the second).
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    entry = "k0_linear", num_stages = 4 : i64, num_warps = 4 : i64
// CHECK-SAME:    # [3, 40] x [40, 24] plus a bias and [40, 9], no epilogue: 3 programs of 16 x 16, K in steps of 64, bfloat16 dots\0A
// CHECK-SAME:    rm = tl.arange(0, 16)\0A
// CHECK-SAME:    xrow = rm * 40\0A
// CHECK-SAME:    if pid < 2:\0A
// CHECK-SAME:    rn = pid * 16 + tl.arange(0, 16)\0A
// CHECK-SAME:    a = tl.load(in0 + xrow[:, None] + k[None, :], mask=(rm[:, None] < 3) & (k[None, :] < 40), other=0.0)\0A
// CHECK-SAME:    acc0 = tl.dot(a, b, acc0)\0A
// CHECK-SAME:    acc0 = acc0 + (tl.load(in2 + rn, mask=rn < 24, other=0.0)).to(tl.float32)[None, :]\0A
// CHECK-SAME:    orow = rm * 24\0A
// CHECK-SAME:    tl.store(out0 + orow[:, None] + rn[None, :], acc0.to(tl.bfloat16), mask=(rm[:, None] < 3) & (rn[None, :] < 24))\0A
// CHECK-SAME:    else:\0A
// CHECK-SAME:    rn = tl.arange(0, 16)\0A
// CHECK-SAME:    b = tl.load(in3 + k[:, None] + rn[None, :] * 40, mask=(k[:, None] < 40) & (rn[None, :] < 9), other=0.0)\0A
// CHECK-SAME:    orow = rm * 9\0A
// CHECK-SAME:    tl.store(out1 + orow[:, None] + rn[None, :], acc0.to(tl.bfloat16), mask=(rm[:, None] < 3) & (rn[None, :] < 9))\0A
// CHECK-LABEL: func.func @main
// CHECK:         "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3, %{{.*}}, %{{.*}}) {access = ["r", "r", "r", "r", "w", "w"], grid = [3, 1, 1], kernel = @k0_linear
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[3,1,40],bf16>, %arg1: !torch.vtensor<[24,40],bf16>, %arg2: !torch.vtensor<[24],bf16>, %arg3: !torch.vtensor<[9,40],bf16>) -> (!torch.vtensor<[3,1,24],bf16>, !torch.vtensor<[3,1,9],bf16>) attributes {pygraph.fused} {
    %none = torch.constant.none
    %0 = torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "matvec"} : !torch.vtensor<[3,1,40],bf16>, !torch.vtensor<[24,40],bf16>, !torch.vtensor<[24],bf16> -> !torch.vtensor<[3,1,24],bf16>
    %1 = torch.aten.linear %arg0, %arg3, %none {pygraph.class = "matvec"} : !torch.vtensor<[3,1,40],bf16>, !torch.vtensor<[9,40],bf16>, !torch.none -> !torch.vtensor<[3,1,9],bf16>
    return %0, %1 : !torch.vtensor<[3,1,24],bf16>, !torch.vtensor<[3,1,9],bf16>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[3, 1, 40], [40, 40, 1], 0 : i64, bf16>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[24, 40], [40, 1], 0 : i64, bf16>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[24], [1], 0 : i64, bf16>}, %arg3: !pygraph.buf {pygraph.layout = #pygraph.layout<[9, 40], [40, 1], 0 : i64, bf16>}) -> (!pygraph.buf, !pygraph.buf) {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[3, 1, 24], [24, 24, 1], 0 : i64, bf16>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %1 = "pygraph.alloc"() {layout = #pygraph.layout<[3, 1, 9], [9, 9, 1], 0 : i64, bf16>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3, %0, %1) {kernel = @fused_0, access = ["r", "r", "r", "r", "w", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 6>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0, %1 : !pygraph.buf, !pygraph.buf
  }
}

// -----

// Two half-precision products of 40 rows that an epilogue reads (a gated MLP's `gate(x) * (x @ up)`): every
// program computes the same block of both. With one weight [N, K] and the other [K, N], the rows take two
// blocks of 32 (Triton 3.6 miscompiles such a pair of dots in blocks of 64 on sm_90); with both [N, K],
// one block of 64.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    # [40, 48] x [48, 24] plus a bias and [48, 24], then an epilogue of 1 op: 4 programs of 32 x 16, K in steps of 64, bfloat16 dots\0A
// CHECK-SAME:    rm = (pid // 2) * 32 + tl.arange(0, 32)\0A
// CHECK-SAME:    b = tl.load(in1 + k[:, None] + rn[None, :] * 48, mask=(k[:, None] < 48) & (rn[None, :] < 24), other=0.0)\0A
// CHECK-SAME:    b = tl.load(in3 + k[:, None] * 24 + rn[None, :], mask=(k[:, None] < 48) & (rn[None, :] < 24), other=0.0)\0A
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    # [40, 48] x [48, 24] plus a bias and [48, 24], then an epilogue of 1 op: 2 programs of 64 x 16, K in steps of 64, bfloat16 dots\0A
// CHECK-SAME:    rm = tl.arange(0, 64)\0A
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[40,48],bf16>, %arg1: !torch.vtensor<[24,48],bf16>, %arg2: !torch.vtensor<[24],bf16>, %arg3: !torch.vtensor<[48,24],bf16>) -> !torch.vtensor<[40,24],bf16> attributes {pygraph.fused} {
    %0 = torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "matvec"} : !torch.vtensor<[40,48],bf16>, !torch.vtensor<[24,48],bf16>, !torch.vtensor<[24],bf16> -> !torch.vtensor<[40,24],bf16>
    %1 = torch.aten.mm %arg0, %arg3 {pygraph.class = "matvec"} : !torch.vtensor<[40,48],bf16>, !torch.vtensor<[48,24],bf16> -> !torch.vtensor<[40,24],bf16>
    %2 = torch.aten.mul.Tensor %0, %1 {pygraph.class = "pointwise"} : !torch.vtensor<[40,24],bf16>, !torch.vtensor<[40,24],bf16> -> !torch.vtensor<[40,24],bf16>
    return %2 : !torch.vtensor<[40,24],bf16>
  }
  func.func private @fused_1(%arg0: !torch.vtensor<[40,48],bf16>, %arg1: !torch.vtensor<[24,48],bf16>, %arg2: !torch.vtensor<[24],bf16>, %arg3: !torch.vtensor<[24,48],bf16>) -> !torch.vtensor<[40,24],bf16> attributes {pygraph.fused} {
    %none = torch.constant.none
    %0 = torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "matvec"} : !torch.vtensor<[40,48],bf16>, !torch.vtensor<[24,48],bf16>, !torch.vtensor<[24],bf16> -> !torch.vtensor<[40,24],bf16>
    %1 = torch.aten.linear %arg0, %arg3, %none {pygraph.class = "matvec"} : !torch.vtensor<[40,48],bf16>, !torch.vtensor<[24,48],bf16>, !torch.none -> !torch.vtensor<[40,24],bf16>
    %2 = torch.aten.mul.Tensor %0, %1 {pygraph.class = "pointwise"} : !torch.vtensor<[40,24],bf16>, !torch.vtensor<[40,24],bf16> -> !torch.vtensor<[40,24],bf16>
    return %2 : !torch.vtensor<[40,24],bf16>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[40, 48], [48, 1], 0 : i64, bf16>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[24, 48], [48, 1], 0 : i64, bf16>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[24], [1], 0 : i64, bf16>}, %arg3: !pygraph.buf {pygraph.layout = #pygraph.layout<[48, 24], [24, 1], 0 : i64, bf16>}, %arg4: !pygraph.buf {pygraph.layout = #pygraph.layout<[24, 48], [48, 1], 0 : i64, bf16>}) -> (!pygraph.buf, !pygraph.buf) {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[40, 24], [24, 1], 0 : i64, bf16>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %1 = "pygraph.alloc"() {layout = #pygraph.layout<[40, 24], [24, 1], 0 : i64, bf16>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3, %0) {kernel = @fused_0, access = ["r", "r", "r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 5>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    "pygraph.kernel"(%arg0, %arg1, %arg2, %arg4, %1) {kernel = @fused_1, access = ["r", "r", "r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 5>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0, %1 : !pygraph.buf, !pygraph.buf
  }
}

// -----

// A product of one row with a prologue: every program computes the row, ReLU of 37 values (padded to 64
// under `cmask`, zero beyond it), then multiplies it by its two rows of the weight. The ReLU is returned
// too (another kernel reads it): the first program stores it (under a mask: no branch).
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    entry = "k0_relu_matvec"
// CHECK-SAME:    def k0_relu_matvec(in0, in1, in2, out0, out1):
// CHECK-SAME:    pid = tl.program_id(0)\0A
// CHECK-SAME:    row = tl.full([1, 1], 0, tl.int32)\0A
// CHECK-SAME:    col = tl.arange(0, 64)[None, :]\0A
// CHECK-SAME:    cmask = col < 37\0A
// CHECK-SAME:    x0 = tl.load(in0 + row + col, mask=cmask)\0A
// CHECK-SAME:    v0 = tl.maximum(x0, 0.0, propagate_nan=tl.PropagateNan.ALL)\0A
// CHECK-SAME:    tl.store(out1 + row + col, v0, mask=(pid == 0) & (cmask))\0A
// CHECK-SAME:    x = tl.reduce(tl.where(cmask, v0, 0.0), 0, tl.standard._sum_combine)\0A
// CHECK-SAME:    n = pid * 2 + tl.arange(0, 2)\0A
// CHECK-SAME:    acc = tl.reduce(w * x[None, :], 1, tl.standard._sum_combine)\0A
// CHECK-SAME:    tl.store(out0 + n, acc)\0A
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[1,37],f32>, %arg1: !torch.vtensor<[50,37],f32>, %arg2: !torch.vtensor<[50],f32>) -> (!torch.vtensor<[1,50],f32>, !torch.vtensor<[1,37],f32>) attributes {pygraph.fused} {
    %0 = torch.aten.relu %arg0 {pygraph.class = "pointwise"} : !torch.vtensor<[1,37],f32> -> !torch.vtensor<[1,37],f32>
    %1 = torch.aten.linear %0, %arg1, %arg2 {pygraph.class = "matvec"} : !torch.vtensor<[1,37],f32>, !torch.vtensor<[50,37],f32>, !torch.vtensor<[50],f32> -> !torch.vtensor<[1,50],f32>
    return %1, %0 : !torch.vtensor<[1,50],f32>, !torch.vtensor<[1,37],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 37], [37, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[50, 37], [37, 1], 0 : i64, f32>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[50], [1], 0 : i64, f32>}) -> (!pygraph.buf, !pygraph.buf) {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[1, 50], [50, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %1 = "pygraph.alloc"() {layout = #pygraph.layout<[1, 37], [37, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %arg2, %0, %1) {kernel = @fused_0, access = ["r", "r", "r", "w", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 5>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0, %1 : !pygraph.buf, !pygraph.buf
  }
}

// -----

// Two products of one row with an epilogue (a gated MLP in bfloat16): every program computes the same
// output of both (one each: two weight rows a program), rounds each to bfloat16 as eager stores it, then
// computes `silu(g) * u + r` with the residual loaded at its outputs; 45 programs, no mask (one output a
// program divides 45), the products never stored.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    entry = "k0_matvec_silu_mul_add"
// CHECK-SAME:    def k0_matvec_silu_mul_add(in0, in1, in2, in3, out0):
// CHECK-SAME:    times a 45 x 37 weight, a 45 x 37 weight: 45 programs of 1 outputs of each product, then the epilogue
// CHECK-SAME:    n = pid * 1 + tl.arange(0, 1)\0A
// CHECK-SAME:    w0 = (tl.load(in1 + n[:, None] * 37
// CHECK-SAME:    acc0 = tl.reduce(w0 * x[None, :], 1, tl.standard._sum_combine)\0A
// CHECK-SAME:    w1 = (tl.load(in2 + n[:, None] * 37
// CHECK-SAME:    acc1 = tl.reduce(w1 * x[None, :], 1, tl.standard._sum_combine)\0A
// CHECK-SAME:    [[G:p[0-9]+]] = acc0.to(tl.bfloat16)\0A
// CHECK-SAME:    [[U:p[0-9]+]] = acc1.to(tl.bfloat16)\0A
// CHECK-SAME:    e3 = tl.load(in3 + n)\0A
// CHECK-SAME:    tl.store(out0 + n, 
// CHECK-LABEL: func.func @main
// CHECK:         "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3, %{{.*}}) {access = ["r", "r", "r", "r", "w"], grid = [45, 1, 1], kernel = @k0_matvec_silu_mul_add
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[1,37],bf16>, %arg1: !torch.vtensor<[45,37],bf16>, %arg2: !torch.vtensor<[45,37],bf16>, %arg3: !torch.vtensor<[45],bf16>) -> !torch.vtensor<[1,45],bf16> attributes {pygraph.fused} {
    %none = torch.constant.none
    %int1 = torch.constant.int 1
    %0 = torch.aten.linear %arg0, %arg1, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,37],bf16>, !torch.vtensor<[45,37],bf16>, !torch.none -> !torch.vtensor<[1,45],bf16>
    %1 = torch.aten.linear %arg0, %arg2, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,37],bf16>, !torch.vtensor<[45,37],bf16>, !torch.none -> !torch.vtensor<[1,45],bf16>
    %2 = torch.aten.silu %0 {pygraph.class = "pointwise"} : !torch.vtensor<[1,45],bf16> -> !torch.vtensor<[1,45],bf16>
    %3 = torch.aten.mul.Tensor %2, %1 {pygraph.class = "pointwise"} : !torch.vtensor<[1,45],bf16>, !torch.vtensor<[1,45],bf16> -> !torch.vtensor<[1,45],bf16>
    %4 = torch.aten.add.Tensor %3, %arg3, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[1,45],bf16>, !torch.vtensor<[45],bf16>, !torch.int -> !torch.vtensor<[1,45],bf16>
    return %4 : !torch.vtensor<[1,45],bf16>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 37], [37, 1], 0 : i64, bf16>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[45, 37], [37, 1], 0 : i64, bf16>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[45, 37], [37, 1], 0 : i64, bf16>}, %arg3: !pygraph.buf {pygraph.layout = #pygraph.layout<[45], [1], 0 : i64, bf16>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[1, 45], [45, 1], 0 : i64, bf16>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3, %0) {kernel = @fused_0, access = ["r", "r", "r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 5>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// Two products of one row (q and k projections): 25 programs for the first's 50 outputs, then 2 for the
// second's 3, each branch with its own weight and output.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    entry = "k0_matvec"
// CHECK-SAME:    def k0_matvec(in0, in1, in2, out0, out1):
// CHECK-SAME:    times a 50 x 37 weight, a 3 x 37 weight: 27 programs of 2 outputs
// CHECK-SAME:    if pid < 25:\0A        n = pid * 2 + tl.arange(0, 2)\0A        w = tl.load(in1 +
// CHECK-SAME:    tl.store(out0 + n, acc)\0A
// CHECK-SAME:    else:\0A        n = (pid - 25) * 2 + tl.arange(0, 2)\0A        w = tl.load(in2 +
// CHECK-SAME:    tl.store(out1 + n, acc, mask=n < 3)\0A
// CHECK-LABEL: func.func @main
// CHECK:         "pygraph.kernel"(%arg0, %arg1, %arg2, %{{.*}}, %{{.*}}) {access = ["r", "r", "r", "w", "w"], grid = [27, 1, 1], kernel = @k0_matvec
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[1,37],f32>, %arg1: !torch.vtensor<[50,37],f32>, %arg2: !torch.vtensor<[3,37],f32>) -> (!torch.vtensor<[1,50],f32>, !torch.vtensor<[1,3],f32>) attributes {pygraph.fused} {
    %none = torch.constant.none
    %0 = torch.aten.linear %arg0, %arg1, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,37],f32>, !torch.vtensor<[50,37],f32>, !torch.none -> !torch.vtensor<[1,50],f32>
    %1 = torch.aten.linear %arg0, %arg2, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,37],f32>, !torch.vtensor<[3,37],f32>, !torch.none -> !torch.vtensor<[1,3],f32>
    return %0, %1 : !torch.vtensor<[1,50],f32>, !torch.vtensor<[1,3],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 37], [37, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[50, 37], [37, 1], 0 : i64, f32>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[3, 37], [37, 1], 0 : i64, f32>}) -> (!pygraph.buf, !pygraph.buf) {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[1, 50], [50, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %1 = "pygraph.alloc"() {layout = #pygraph.layout<[1, 3], [3, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %arg2, %0, %1) {kernel = @fused_0, access = ["r", "r", "r", "w", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 5>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0, %1 : !pygraph.buf, !pygraph.buf
  }
}

// -----

// A piece computed in the kernel: ReLU of the first piece runs on that piece's load, within its range
// (columns 0 to 2), and is never written; the second piece is loaded shifted by its start.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    entry = "k0_relu_cat"
// CHECK-SAME:    p0 = tl.load(in0 + d0 * 3 + d1, mask=(k1 < 3) & mask)\0A
// CHECK-SAME:    v1 = tl.maximum(p0, 0.0, propagate_nan=tl.PropagateNan.ALL)\0A
// CHECK-SAME:    p2 = tl.load(in1 + d0 * 4 + d1 - 3, mask=(k1 >= 3) & mask)\0A
// CHECK-SAME:    v3 = tl.where(k1 < 3, v1, p2)\0A
// CHECK-SAME:    tl.store(out0 + i, v3, mask=mask)\0A
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[2,3],f32>, %arg1: !torch.vtensor<[2,4],f32>) -> !torch.vtensor<[2,7],f32> attributes {pygraph.fused} {
    %relu = torch.aten.relu %arg0 {pygraph.class = "pointwise"} : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
    %list = torch.prim.ListConstruct %relu, %arg1 : (!torch.vtensor<[2,3],f32>, !torch.vtensor<[2,4],f32>) -> !torch.list<vtensor>
    %int1 = torch.constant.int 1
    %0 = torch.aten.cat %list, %int1 {pygraph.class = "concat"} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[2,7],f32>
    return %0 : !torch.vtensor<[2,7],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 3], [3, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 4], [4, 1], 0 : i64, f32>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[2, 7], [7, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %0) {kernel = @fused_0, access = ["r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// A piece of size 1 along the cat's dim computed at the kernel's size (its shape broadcasts to the kernel's:
// fuse-pointwise recomputes such a group there, as an unrolled RNN's last step): the broadcast value is
// the piece, taken where its range starts.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    entry = "k0_relu_cat"
// CHECK-SAME:    x0 = tl.load(in0 + d1, mask=mask)\0A
// CHECK-SAME:    v0 = tl.maximum(x0, 0.0, propagate_nan=tl.PropagateNan.ALL)\0A
// CHECK-SAME:    p1 = tl.load(in1 + i, mask=(k0 < 2) & mask)\0A
// CHECK-SAME:    v2 = tl.where(k0 < 2, p1, v0)\0A
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[1,4],f32>, %arg1: !torch.vtensor<[2,4],f32>) -> !torch.vtensor<[3,4],f32> attributes {pygraph.fused} {
    %relu = torch.aten.relu %arg0 {pygraph.class = "pointwise"} : !torch.vtensor<[1,4],f32> -> !torch.vtensor<[1,4],f32>
    %list = torch.prim.ListConstruct %arg1, %relu : (!torch.vtensor<[2,4],f32>, !torch.vtensor<[1,4],f32>) -> !torch.list<vtensor>
    %int0 = torch.constant.int 0
    %0 = torch.aten.cat %list, %int0 {pygraph.class = "concat"} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[3,4],f32>
    return %0 : !torch.vtensor<[3,4],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 4], [4, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 4], [4, 1], 0 : i64, f32>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[3, 4], [4, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %0) {kernel = @fused_0, access = ["r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// Empty tensors: a [0, 4] pointwise kernel and a sum over an empty dim still get one program each, whose
// loads and stores are masked off (every block size divides 0, yet no lane is in range).
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    def k0_mul(in0, out0):
// CHECK-SAME:    mask = i < 0\0A
// CHECK-SAME:    x0 = tl.load(in0 + i, mask=mask)\0A
// CHECK-SAME:    tl.store(out0 + i, v0, mask=mask)\0A
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    def k0_sum(in0, out0):
// CHECK-SAME:    cmask = col < 0\0A
// CHECK-SAME:    x0 = tl.load(in0 + row + col * 4, mask=cmask)\0A
// CHECK-SAME:    r0 = tl.reduce(tl.where(cmask, x0, 0.0)
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[0,4],f32>) -> !torch.vtensor<[0,4],f32> attributes {pygraph.fused} {
    %float2 = torch.constant.float 2.000000e+00
    %0 = torch.aten.mul.Scalar %arg0, %float2 : !torch.vtensor<[0,4],f32>, !torch.float -> !torch.vtensor<[0,4],f32>
    return %0 : !torch.vtensor<[0,4],f32>
  }
  func.func private @fused_1(%arg0: !torch.vtensor<[0,4],f32>) -> !torch.vtensor<[4],f32> attributes {pygraph.fused} {
    %int0 = torch.constant.int 0
    %dims = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
    %false = torch.constant.bool false
    %none = torch.constant.none
    %0 = torch.aten.sum.dim_IntList %arg0, %dims, %false, %none : !torch.vtensor<[0,4],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[4],f32>
    return %0 : !torch.vtensor<[4],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[0, 4], [4, 1], 0 : i64, f32>}) -> (!pygraph.buf, !pygraph.buf) {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[0, 4], [4, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %0) {kernel = @fused_0, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    %1 = "pygraph.alloc"() {layout = #pygraph.layout<[4], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %1) {kernel = @fused_1, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    return %0, %1 : !pygraph.buf, !pygraph.buf
  }
}

// -----

// Gathers: BERT's embeddings and the layer norm after their add, one reduction kernel. Each index is
// loaded where its dims lie in the result (the token ids per row, the int32 positions per row broadcast
// over the batch), checked against the table's rows, and the weight row is loaded at the column, masked
// to the indices in range; `trap_unless` (defined in the source) stops the kernel where one is out of
// range and passes the index on to the address. Rows past the end (xmask) are exempt from the check. With max-rblock=16 each program loops over
// its row, loading the gathered values again in each loop.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    @triton.jit\0Adef trap_unless(ok, index):\0A    if index.dtype == tl.int64:\0A        return tl.inline_asm_elementwise(\0A            \22{ .reg .pred p; setp.eq.s32 p, $1, 0; @p trap; mov.b64 $0, $2; }\22,
// CHECK-SAME:    def k0_embedding_add_layer_norm(in0, in1, in2, in3, in4, in5, out0):
// CHECK-SAME:    ix0 = tl.load(in1 + row, mask=xmask)\0A
// CHECK-SAME:    ix2 = tl.load(in3 + rd1, mask=xmask)\0A
// CHECK-SAME:    ok1 = (ix0 >= 0) & (ix0 < 100)\0A
// CHECK-SAME:    at1 = trap_unless(ok1 | ~xmask, ix0.to(tl.int32))\0A
// CHECK-SAME:    g1 = tl.load(in0 + col + at1 * 24, mask=(mask) & (ok1))\0A
// CHECK-SAME:    ok3 = (ix2 >= 0) & (ix2 < 16)\0A
// CHECK-SAME:    at3 = trap_unless(ok3 | ~xmask, ix2)\0A
// CHECK-SAME:    g3 = tl.load(in2 + col + at3 * 24, mask=(mask) & (ok3))\0A
// CHECK-SAME:    v4 = g1 + g3\0A
// CHECK-SAME:    sym_name = "k0_embedding_add_layer_norm"
// LOOP:        def k0_embedding_add_layer_norm(
// LOOP-SAME:    ix0 = tl.load(in1 + row)\0A
// LOOP-SAME:    for c0 in range(0, 24, 16):\0A        col = c0 + tl.arange(0, 16)[None, :]\0A        cmask = col < 24\0A        ok1 = (ix0 >= 0) & (ix0 < 100)\0A        at1 = trap_unless(ok1, ix0.to(tl.int32))\0A        g1 = tl.load(in0 + col + at1 * 24, mask=(cmask) & (ok1))\0A
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[100,24],f32>, %arg1: !torch.vtensor<[2,5],si64>, %arg2: !torch.vtensor<[16,24],f32>, %arg3: !torch.vtensor<[1,5],si32>, %arg4: !torch.vtensor<[24],f32>, %arg5: !torch.vtensor<[24],f32>) -> !torch.vtensor<[2,5,24],f32> attributes {pygraph.fused} {
    %int-1 = torch.constant.int -1
    %false = torch.constant.bool false
    %0 = torch.aten.embedding %arg0, %arg1, %int-1, %false, %false {pygraph.class = "gather"} : !torch.vtensor<[100,24],f32>, !torch.vtensor<[2,5],si64>, !torch.int, !torch.bool, !torch.bool -> !torch.vtensor<[2,5,24],f32>
    %1 = torch.aten.embedding %arg2, %arg3, %int-1, %false, %false {pygraph.class = "gather"} : !torch.vtensor<[16,24],f32>, !torch.vtensor<[1,5],si32>, !torch.int, !torch.bool, !torch.bool -> !torch.vtensor<[1,5,24],f32>
    %int1 = torch.constant.int 1
    %2 = torch.aten.add.Tensor %0, %1, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[2,5,24],f32>, !torch.vtensor<[1,5,24],f32>, !torch.int -> !torch.vtensor<[2,5,24],f32>
    %int24 = torch.constant.int 24
    %3 = torch.prim.ListConstruct %int24 : (!torch.int) -> !torch.list<int>
    %eps = torch.constant.float 1.000000e-05
    %4 = torch.aten.layer_norm %2, %3, %arg4, %arg5, %eps, %false {pygraph.class = "reduction"} : !torch.vtensor<[2,5,24],f32>, !torch.list<int>, !torch.vtensor<[24],f32>, !torch.vtensor<[24],f32>, !torch.float, !torch.bool -> !torch.vtensor<[2,5,24],f32>
    return %4 : !torch.vtensor<[2,5,24],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[100, 24], [24, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 5], [5, 1], 0 : i64, si64>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[16, 24], [24, 1], 0 : i64, f32>}, %arg3: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 5], [5, 1], 0 : i64, si32>}, %arg4: !pygraph.buf {pygraph.layout = #pygraph.layout<[24], [1], 0 : i64, f32>}, %arg5: !pygraph.buf {pygraph.layout = #pygraph.layout<[24], [1], 0 : i64, f32>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[2, 5, 24], [120, 24, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %0) {kernel = @fused_0, access = ["r", "r", "r", "r", "r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 7>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// `x[:, idx]` (index) of a column-major source by a strided index: negative indices count from the end
// (j1), in a pointwise kernel checked under its mask.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    signature = ["*fp32:16", "*i64", "*fp32:16"]
// CHECK-SAME:    ix0 = tl.load(in1 + d1 * 2, mask=mask)\0A
// CHECK-SAME:    j1 = tl.where(ix0 < 0, ix0 + 9, ix0)\0A
// CHECK-SAME:    ok1 = (j1 >= 0) & (j1 < 9)\0A
// CHECK-SAME:    at1 = trap_unless(ok1 | ~mask, j1.to(tl.int32))\0A
// CHECK-SAME:    g1 = tl.load(in0 + d0 + at1 * 6, mask=(mask) & (ok1))\0A
// CHECK-SAME:    v2 = g1 * 2.0\0A
// CHECK-SAME:    sym_name = "k0_index_mul"
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[6,9],f32>, %arg1: !torch.vtensor<[4],si64>) -> !torch.vtensor<[6,4],f32> attributes {pygraph.fused} {
    %none = torch.constant.none
    %0 = torch.prim.ListConstruct %none, %arg1 : (!torch.none, !torch.vtensor<[4],si64>) -> !torch.list<optional<vtensor>>
    %1 = torch.aten.index.Tensor %arg0, %0 {pygraph.class = "gather"} : !torch.vtensor<[6,9],f32>, !torch.list<optional<vtensor>> -> !torch.vtensor<[6,4],f32>
    %int2 = torch.constant.int 2
    %2 = torch.aten.mul.Scalar %1, %int2 {pygraph.class = "pointwise"} : !torch.vtensor<[6,4],f32>, !torch.int -> !torch.vtensor<[6,4],f32>
    return %2 : !torch.vtensor<[6,4],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[6, 9], [1, 6], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[4], [2], 1 : i64, si64>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[6, 4], [4, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %0) {kernel = @fused_0, access = ["r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// A transposing kernel (an NCHW input written NHWC, as a convolution's input conversion): 2-D tiles over
// the output's innermost dim (channels, 37) and the input's contiguous one (pixels, 99), at one image per
// program: both the load and the store run along contiguous memory; masks cover both tails.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    def k0_relu(in0, out0):
// CHECK-SAME:    # [2, 37, 9, 11] as [2, 99, 37]: tiles of 32 x 32 along dims 1 and 2\0A
// CHECK-SAME:    p = tl.program_id(0)\0A
// CHECK-SAME:    d0 = p // 8\0A
// CHECK-SAME:    r = p // 2 % 4\0A
// CHECK-SAME:    c = p % 2\0A
// CHECK-SAME:    d1 = r * 32 + tl.arange(0, 32)[:, None]\0A
// CHECK-SAME:    d2 = c * 32 + tl.arange(0, 32)[None, :]\0A
// CHECK-SAME:    mask = (d1 < 99) & (d2 < 37)\0A
// CHECK-SAME:    x0 = tl.load(in0 + d0 * 3663 + d1 + d2 * 99, mask=mask)\0A
// CHECK-SAME:    tl.store(out0 + d0 * 3663 + d1 * 37 + d2, v0, mask=mask)\0A
// CHECK-LABEL: func.func @main
// CHECK:         grid = [16, 1, 1], kernel = @k0_relu
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[2,37,9,11],f32>) -> !torch.vtensor<[2,37,9,11],f32> attributes {pygraph.fused} {
    %0 = torch.aten.relu %arg0 : !torch.vtensor<[2,37,9,11],f32> -> !torch.vtensor<[2,37,9,11],f32>
    return %0 : !torch.vtensor<[2,37,9,11],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 37, 9, 11], [3663, 99, 11, 1], 0 : i64, f32>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[2, 37, 9, 11], [3663, 1, 407, 37], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %0) {kernel = @fused_0, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// A scatter (write-in-place's in-place index_put): a [2, 3] int32 index into dim 1 of a [5, 10, 4]
// cache laid out [4, 20, 1], with [2, 3, 4] values broadcast over dim 0. The kernel runs over the indexed
// shape [5, 2, 3, 4] in the order of the elements it writes (the index's dims outermost, as the cache's
// dim 1 is), loads the index at its own strides, counts negatives from the end, stops where one is out
// of range, and stores each value at the cache's strides plus the index times dim 1's stride; it never
// reads the cache.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    def k0_index_put(in0, in1, in2, out0):\0A    # [5, 2, 3, 4]: 120 elements, 1 programs of 128\0A
// CHECK-SAME:    mask = i < 120\0A    d0 = i // 20\0A    d1 = i // 4 % 5\0A    d2 = i % 4\0A    x2 = tl.load(in2 + d0 * 4 + d2, mask=mask)\0A    ix = tl.load(in1 + d0, mask=mask)\0A    js = tl.where(ix < 0, ix + 10, ix)\0A    oks = (js >= 0) & (js < 10)\0A    ats = trap_unless(oks | ~mask, js)\0A    tl.store(out0 + d1 * 4 + d2 + ats * 20, x2, mask=(mask) & (oks))\0A", sym_name
// CHECK:       "pygraph.kernel"(%arg0, %arg1, %arg2, %arg0) {access = ["r", "r", "r", "w"], grid = [1, 1, 1], kernel = @k0_index_put
module {
  func.func private @scatter_0(%arg0: !torch.vtensor<[5,10,4],f32>, %arg1: !torch.vtensor<[2,3],si32>, %arg2: !torch.vtensor<[2,3,4],f32>) -> !torch.vtensor<[5,10,4],f32> attributes {pygraph.fused} {
    %none = torch.constant.none {pygraph.class = "scalar"}
    %0 = torch.prim.ListConstruct %none, %arg1 {pygraph.class = "scalar"} : (!torch.none, !torch.vtensor<[2,3],si32>) -> !torch.list<optional<vtensor>>
    %false = torch.constant.bool false {pygraph.class = "scalar"}
    %1 = torch.aten.index_put %arg0, %0, %arg2, %false {pygraph.class = "scatter"} : !torch.vtensor<[5,10,4],f32>, !torch.list<optional<vtensor>>, !torch.vtensor<[2,3,4],f32>, !torch.bool -> !torch.vtensor<[5,10,4],f32>
    return %1 : !torch.vtensor<[5,10,4],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[5, 10, 4], [4, 20, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 3], [3, 1], 0 : i64, si32>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 3, 4], [12, 4, 1], 0 : i64, f32>}) {
    "pygraph.kernel"(%arg0, %arg1, %arg2, %arg0) {kernel = @scatter_0, access = ["r", "r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return
  }
}

// -----

// A scatter computing its values (fuse-scatter-values): the same write with values that are the negation
// of an input, loaded and negated per lane where the plain scatter loads its values.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    def k0_neg_index_put(in0, in1, in2, out0):\0A    # [5, 2, 3, 4]: 120 elements, 1 programs of 128\0A
// CHECK-SAME:    x2 = tl.load(in2 + d0 * 4 + d2, mask=mask)\0A    v0 = x2 * -1.0\0A
// CHECK-SAME:    tl.store(out0 + d1 * 4 + d2 + ats * 20, v0, mask=(mask) & (oks))\0A", sym_name
module {
  func.func private @scatter_0(%arg0: !torch.vtensor<[5,10,4],f32>, %arg1: !torch.vtensor<[2,3],si32>, %arg2: !torch.vtensor<[2,3,4],f32>) -> !torch.vtensor<[5,10,4],f32> attributes {pygraph.fused} {
    %neg = torch.aten.neg %arg2 {pygraph.class = "pointwise"} : !torch.vtensor<[2,3,4],f32> -> !torch.vtensor<[2,3,4],f32>
    %none = torch.constant.none {pygraph.class = "scalar"}
    %0 = torch.prim.ListConstruct %none, %arg1 {pygraph.class = "scalar"} : (!torch.none, !torch.vtensor<[2,3],si32>) -> !torch.list<optional<vtensor>>
    %false = torch.constant.bool false {pygraph.class = "scalar"}
    %1 = torch.aten.index_put %arg0, %0, %neg, %false {pygraph.class = "scatter"} : !torch.vtensor<[5,10,4],f32>, !torch.list<optional<vtensor>>, !torch.vtensor<[2,3,4],f32>, !torch.bool -> !torch.vtensor<[5,10,4],f32>
    return %1 : !torch.vtensor<[5,10,4],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[5, 10, 4], [4, 20, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 3], [3, 1], 0 : i64, si32>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 3, 4], [12, 4, 1], 0 : i64, f32>}) {
    "pygraph.kernel"(%arg0, %arg1, %arg2, %arg0) {kernel = @scatter_0, access = ["r", "r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return
  }
}

// -----

// An attention split-keys split (`pygraph.split_keys`): 4 query heads over 2 key heads, one query, 80
// keys in 3 splits of 32 (the parts' second dim says how many; splits are the power of two that covers
// them, the last takes the rest). The parts kernel runs a program per key head and split, the group's
// 2 query heads as rows of one tl.dot block (the rest masked), the padding mask broadcast over them, and
// stores each row's weighted values, maximum and sum; the combining kernel runs a program per query row
// and rescales the splits' parts to their common maximum before dividing.
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    entry = "k0_attention_parts", num_stages = 2 : i64, num_warps = 4 : i64
// CHECK-SAME:    signature = ["*fp32:16", "*fp32:16", "*fp32:16", "*i1:16", "*fp32:16"]
// CHECK-SAME:    def k0_attention_parts(in0, in1, in2, in3, out0):
// CHECK-SAME:    bh = pid // 3\0A
// CHECK-SAME:    split = pid % 3\0A
// CHECK-SAME:    q = tl.load(in0 + bh * 32 + r * 16 + e_row, mask=r < 2, other=0.0)\0A
// CHECK-SAME:    stop = tl.minimum(begin + 32, 80)\0A
// CHECK-SAME:    for start in range(begin, stop, 32):\0A
// CHECK-SAME:    kt = tl.load(in1 + bh * 1280 + cols * 16 + e_col, mask=cols < stop, other=0.0)\0A
// CHECK-SAME:    s = tl.where(tl.load(in3 + cols, mask=(r < 2) & (cols < stop), other=0), s, float(\22-inf\22))\0A
// CHECK-SAME:    part = out0 + bh * 108 + split * 36 + r * 18\0A
// CHECK-SAME:    tl.store(part + ev, acc, mask=r < 2)\0A
// CHECK-SAME:    tl.store(part + 16, m_i, mask=r < 2)\0A
// CHECK-SAME:    tl.store(part + 17, l_i, mask=r < 2)\0A
// CHECK-LABEL: "pygraph.triton_kernel"()
// CHECK-SAME:    entry = "k0_attention_combine", num_stages = 1 : i64, num_warps = 4 : i64
// CHECK-SAME:    signature = ["*fp32:16", "*fp32:16"]
// CHECK-SAME:    def k0_attention_combine(in0, out0):
// CHECK-SAME:    bh = pid // 2\0A
// CHECK-SAME:    r = pid % 2\0A
// CHECK-SAME:    m = tl.load(in0 + bh * 108 + r * 18 + s * 36 + 16, mask=s < 3, other=float(\22-inf\22))\0A
// CHECK-SAME:    w = tl.exp(m - m_use)\0A
// CHECK-SAME:    acc = acc * alpha + tl.reduce(w * part, 0, tl.standard._sum_combine, keep_dims=True)\0A
// CHECK-SAME:    out = acc / tl.where(l_i == 0.0, 1.0, l_i)\0A
// CHECK-SAME:    tl.store(out0 + bh * 32 + r * 16 + ev, out)\0A
// CHECK-LABEL: func.func @main
// CHECK:         "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3, %[[PARTS:.*]]) {access = ["r", "r", "r", "r", "w"], grid = [6, 1, 1], kernel = @k0_attention_parts
// CHECK-NEXT:    "pygraph.kernel"(%[[PARTS]], %{{.*}}) {access = ["r", "w"], grid = [4, 1, 1], kernel = @k0_attention_combine
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[1,4,1,16],f32>, %arg1: !torch.vtensor<[1,2,80,16],f32>, %arg2: !torch.vtensor<[1,2,80,16],f32>, %arg3: !torch.vtensor<[1,1,1,80],i1>) -> !torch.vtensor<[1,4,1,16],f32> attributes {pygraph.fused} {
    %float0 = torch.constant.float 0.000000e+00
    %false = torch.constant.bool false
    %none = torch.constant.none
    %true = torch.constant.bool true
    %0 = torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %arg3, %float0, %false, %none, %true {pygraph.attention_kernel = "ieee", pygraph.class = "attention"} : !torch.vtensor<[1,4,1,16],f32>, !torch.vtensor<[1,2,80,16],f32>, !torch.vtensor<[1,2,80,16],f32>, !torch.vtensor<[1,1,1,80],i1>, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[1,4,1,16],f32>
    return %0 : !torch.vtensor<[1,4,1,16],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 4, 1, 16], [64, 16, 16, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 2, 80, 16], [2560, 1280, 16, 1], 0 : i64, f32>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 2, 80, 16], [2560, 1280, 16, 1], 0 : i64, f32>}, %arg3: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 1, 1, 80], [80, 80, 80, 1], 0 : i64, i1>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[1, 4, 1, 16], [64, 16, 16, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %1 = "pygraph.alloc"() {layout = #pygraph.layout<[2, 3, 2, 18], [108, 36, 18, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3, %1) {kernel = @fused_0, access = ["r", "r", "r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 5>, pygraph.split_keys = "parts"} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    "pygraph.kernel"(%1, %0) {kernel = @fused_0, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>, pygraph.split_keys = "combine"} : (!pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}
