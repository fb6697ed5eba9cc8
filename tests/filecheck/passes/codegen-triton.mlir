// RUN: pygraph-opt %s -p codegen-triton --split-input-file | filecheck %s
// RUN: pygraph-opt %s -p 'codegen-triton{max-block=128}' --split-input-file | filecheck %s --check-prefix=SMALL

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
