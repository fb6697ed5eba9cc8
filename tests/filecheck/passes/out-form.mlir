// RUN: pygraph-opt %s -p out-form --split-input-file | filecheck %s

// A linear of a [2, 8, 64] input becomes addmm on its rows as a [16, 64] matrix and the weight's
// transpose, writing a [16, 256] view of an arena buffer; the batched product the call returns
// ("patch") writes the call's output; a product of float64 writes an arena buffer too.
// CHECK-LABEL: func.func @main
// CHECK:         %[[ROWS:.*]] = "pygraph.view"(%arg0) {layout = #pygraph.layout<[16, 64], [64, 1], 0 : i64, f32>}
// CHECK-NEXT:    %[[WT:.*]] = "pygraph.view"(%arg1) {layout = #pygraph.layout<[64, 256], [1, 64], 0 : i64, f32>}
// CHECK-NEXT:    %[[H:.*]] = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[2, 8, 256], [2048, 256, 1], 0 : i64, f32>}
// CHECK-NEXT:    %[[H2:.*]] = "pygraph.view"(%[[H]]) {layout = #pygraph.layout<[16, 256], [256, 1], 0 : i64, f32>}
// CHECK-NEXT:    "pygraph.library"(%arg2, %[[ROWS]], %[[WT]], %[[H2]]) {args = [0 : index, 1 : index, 2 : index, 1, 1, 3 : index], layouts = [], op = "aten.addmm.out"
// CHECK-NEXT:    %[[T:.*]] = "pygraph.view"(%arg0)
// CHECK-NEXT:    %[[OUT:.*]] = "pygraph.output"() {index = 0 : i64, layout = #pygraph.layout<[2, 8, 8], [64, 8, 1], 0 : i64, f32>}
// CHECK-NEXT:    "pygraph.library"(%arg0, %[[T]], %[[OUT]]) {args = [0 : index, 1 : index, 2 : index], layouts = [], op = "aten.bmm.out"
// CHECK:         %[[D:.*]] = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[4, 4], [4, 1], 0 : i64, f64>}
// CHECK-NEXT:    "pygraph.library"(%arg3, %arg3, %[[D]]) {args = [0 : index, 1 : index, 2 : index], layouts = [], op = "aten.mm.out"
// CHECK-NEXT:    %[[Y:.*]] = "pygraph.alloc"
// CHECK-NEXT:    "pygraph.kernel"(%[[H]], %[[D]], %[[Y]])
// CHECK-NEXT:    return %[[OUT]], %[[Y]]
module {
  func.func private @fused_0(%a: !torch.vtensor<[2,8,256],f32>, %b: !torch.vtensor<[4,4],f64>) -> !torch.vtensor<[2,8,256],f32> attributes {pygraph.fused} {
    return %a : !torch.vtensor<[2,8,256],f32>
  }
  func.func @main(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[2, 8, 64], [512, 64, 1], 0 : i64, f32>, pygraph.io = "stage"},
                  %w: !pygraph.buf {pygraph.role = "parameter", pygraph.name = "w", pygraph.layout = #pygraph.layout<[256, 64], [64, 1], 0 : i64, f32>, pygraph.io = "direct"},
                  %b: !pygraph.buf {pygraph.role = "parameter", pygraph.name = "b", pygraph.layout = #pygraph.layout<[256], [1], 0 : i64, f32>, pygraph.io = "direct"},
                  %d: !pygraph.buf {pygraph.role = "input", pygraph.name = "d", pygraph.layout = #pygraph.layout<[4, 4], [4, 1], 0 : i64, f64>, pygraph.io = "stage"})
      -> (!pygraph.buf {pygraph.io = "patch"}, !pygraph.buf {pygraph.io = "copy"}) {
    %h = "pygraph.library"(%x, %w, %b) {op = "aten.linear.default", args = [0 : index, 1 : index, 2 : index], layouts = [#pygraph.layout<[2, 8, 256], [2048, 256, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 3>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> !pygraph.buf
    %t = "pygraph.view"(%x) {layout = #pygraph.layout<[2, 64, 8], [512, 1, 64], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %s = "pygraph.library"(%x, %t) {op = "aten.bmm.default", args = [0 : index, 1 : index], layouts = [#pygraph.layout<[2, 8, 8], [64, 8, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf
    %p = "pygraph.library"(%d, %d) {op = "aten.mm.default", args = [0 : index, 1 : index], layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f64>], operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf
    %y = "pygraph.alloc"() {layout = #pygraph.layout<[2, 8, 256], [2048, 256, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%h, %p, %y) {kernel = @fused_0, grid = [1, 1, 1], access = ["r", "r", "w"], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %s, %y : !pygraph.buf, !pygraph.buf
  }
}

// -----

// Calls that keep their results: a product cuBLAS cannot write as it is (rows and columns both
// strided), a linear of an input whose rows merge into no matrix (a transposed view), an integer
// product, and an op that is no product.
// CHECK-LABEL: func.func @kept
// CHECK-NOT:     "pygraph.alloc"
// CHECK-NOT:     .out"
// CHECK:         op = "aten.mm.default"
// CHECK:         op = "aten.linear.default"
// CHECK:         op = "aten.mm.default"
// CHECK:         op = "aten.cumsum.default"
module {
  func.func @kept(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>, pygraph.io = "stage"},
                  %i: !pygraph.buf {pygraph.role = "input", pygraph.name = "i", pygraph.layout = #pygraph.layout<[4, 4], [4, 1], 0 : i64, si64>, pygraph.io = "stage"},
                  %w: !pygraph.buf {pygraph.role = "parameter", pygraph.name = "w", pygraph.layout = #pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>, pygraph.io = "direct"},
                  %u: !pygraph.buf {pygraph.role = "input", pygraph.name = "u", pygraph.layout = #pygraph.layout<[2, 3, 4], [12, 4, 1], 0 : i64, f32>, pygraph.io = "stage"})
      -> (!pygraph.buf {pygraph.io = "copy"}, !pygraph.buf {pygraph.io = "copy"}, !pygraph.buf {pygraph.io = "copy"}, !pygraph.buf {pygraph.io = "copy"}) {
    %a = "pygraph.library"(%x, %w) {op = "aten.mm.default", args = [0 : index, 1 : index], layouts = [#pygraph.layout<[4, 4], [8, 2], 0 : i64, f32>], operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf
    %ut = "pygraph.view"(%u) {layout = #pygraph.layout<[3, 2, 4], [4, 12, 1], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %l = "pygraph.library"(%ut, %w) {op = "aten.linear.default", args = [0 : index, 1 : index, unit], layouts = [#pygraph.layout<[3, 2, 4], [8, 4, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf
    %n = "pygraph.library"(%i, %i) {op = "aten.mm.default", args = [0 : index, 1 : index], layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, si64>], operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf
    %c = "pygraph.library"(%x) {op = "aten.cumsum.default", args = [0 : index, 0, unit], layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
    return %a, %l, %n, %c : !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf
  }
}

// -----

// A copy that alone reads a product's result, through views covering it once, goes: the product writes
// the copy's destination where the copy would have put each element. The context of attention heads,
// bmm -> [1, 4, 16, 8] -> permute(0, 2, 1, 3) -> copy to [1, 16, 4, 8], becomes bmm.out into that buffer
// viewed as [4, 16, 8] with strides (8, 32, 1), which cuBLAS writes directly; the copy kernel and its
// function go. With two sequences ([2, 4, 16, 8]: heads of different sequences share no stride) the
// copy stays.
// CHECK-LABEL: module
// CHECK-NOT:     func.func private @copy_heads
// CHECK-LABEL:   func.func @heads
// CHECK:         %[[DST:.*]] = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[1, 16, 4, 8], [512, 32, 8, 1], 0 : i64, f32>}
// CHECK-NEXT:    %[[W:.*]] = "pygraph.view"(%[[DST]]) {layout = #pygraph.layout<[4, 16, 8], [8, 32, 1], 0 : i64, f32>}
// CHECK-NEXT:    "pygraph.library"(%arg0, %arg1, %[[W]]) {{.*}}op = "aten.bmm.out"
// CHECK-NOT:     "pygraph.kernel"
// CHECK:         return %[[DST]]
module {
  func.func private @copy_heads(%a: !torch.vtensor<[1,16,4,8],f32>) -> !torch.vtensor<[1,16,4,8],f32> attributes {pygraph.fused} {
    %int0 = torch.constant.int 0
    %0 = torch.aten.clone %a, %int0 : !torch.vtensor<[1,16,4,8],f32>, !torch.int -> !torch.vtensor<[1,16,4,8],f32>
    return %0 : !torch.vtensor<[1,16,4,8],f32>
  }
  func.func @heads(%p: !pygraph.buf {pygraph.role = "input", pygraph.name = "p", pygraph.layout = #pygraph.layout<[4, 16, 16], [256, 16, 1], 0 : i64, f32>, pygraph.io = "stage"},
                   %v: !pygraph.buf {pygraph.role = "input", pygraph.name = "v", pygraph.layout = #pygraph.layout<[4, 16, 8], [128, 8, 1], 0 : i64, f32>, pygraph.io = "stage"})
      -> (!pygraph.buf {pygraph.io = "copy"}) {
    %c = "pygraph.library"(%p, %v) {op = "aten.bmm.default", args = [0 : index, 1 : index], layouts = [#pygraph.layout<[4, 16, 8], [128, 8, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf
    %h = "pygraph.view"(%c) {layout = #pygraph.layout<[1, 4, 16, 8], [512, 128, 8, 1], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %t = "pygraph.view"(%h) {layout = #pygraph.layout<[1, 16, 4, 8], [512, 8, 128, 1], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %y = "pygraph.alloc"() {layout = #pygraph.layout<[1, 16, 4, 8], [512, 32, 8, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%t, %y) {kernel = @copy_heads, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    return %y : !pygraph.buf
  }
}

// -----

// CHECK-LABEL: func.func @two_sequences
// CHECK:         op = "aten.bmm.out"
// CHECK:         "pygraph.kernel"({{.*}}) {{.*}}kernel = @copy_two
module {
  func.func private @copy_two(%a: !torch.vtensor<[2,16,4,8],f32>) -> !torch.vtensor<[2,16,4,8],f32> attributes {pygraph.fused} {
    %int0 = torch.constant.int 0
    %0 = torch.aten.clone %a, %int0 : !torch.vtensor<[2,16,4,8],f32>, !torch.int -> !torch.vtensor<[2,16,4,8],f32>
    return %0 : !torch.vtensor<[2,16,4,8],f32>
  }
  func.func @two_sequences(%p: !pygraph.buf {pygraph.role = "input", pygraph.name = "p", pygraph.layout = #pygraph.layout<[8, 16, 16], [256, 16, 1], 0 : i64, f32>, pygraph.io = "stage"},
                           %v: !pygraph.buf {pygraph.role = "input", pygraph.name = "v", pygraph.layout = #pygraph.layout<[8, 16, 8], [128, 8, 1], 0 : i64, f32>, pygraph.io = "stage"})
      -> (!pygraph.buf {pygraph.io = "copy"}) {
    %c = "pygraph.library"(%p, %v) {op = "aten.bmm.default", args = [0 : index, 1 : index], layouts = [#pygraph.layout<[8, 16, 8], [128, 8, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf
    %h = "pygraph.view"(%c) {layout = #pygraph.layout<[2, 4, 16, 8], [512, 128, 8, 1], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %t = "pygraph.view"(%h) {layout = #pygraph.layout<[2, 16, 4, 8], [512, 8, 128, 1], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %y = "pygraph.alloc"() {layout = #pygraph.layout<[2, 16, 4, 8], [512, 32, 8, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%t, %y) {kernel = @copy_two, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    return %y : !pygraph.buf
  }
}

// -----

// `matmul` as eager computes it: of a [2, 8, 64] batch of rows by a matrix, `mm` on the rows as a
// [16, 64] matrix writing a view of an arena buffer; of two batches alike, `bmm` writing the output. A
// matmul of a vector stays as it is.
// CHECK-LABEL: func.func @matmul
// CHECK:         %[[ROWS:.*]] = "pygraph.view"(%arg0) {layout = #pygraph.layout<[16, 64], [64, 1], 0 : i64, f32>}
// CHECK-NEXT:    %[[H:.*]] = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[2, 8, 32], [256, 32, 1], 0 : i64, f32>}
// CHECK-NEXT:    %[[H2:.*]] = "pygraph.view"(%[[H]]) {layout = #pygraph.layout<[16, 32], [32, 1], 0 : i64, f32>}
// CHECK-NEXT:    "pygraph.library"(%[[ROWS]], %arg1, %[[H2]]) {args = [0 : index, 1 : index, 2 : index], layouts = [], op = "aten.mm.out"
// CHECK:         %[[OUT:.*]] = "pygraph.output"() {index = 0 : i64, layout = #pygraph.layout<[2, 8, 8], [64, 8, 1], 0 : i64, f32>}
// CHECK-NEXT:    "pygraph.library"(%arg0, %{{.*}}, %[[OUT]]) {args = [0 : index, 1 : index, 2 : index], layouts = [], op = "aten.bmm.out"
// CHECK:         op = "aten.matmul.default"
func.func private @fused_1(%a: !torch.vtensor<[2,8,32],f32>, %b: !torch.vtensor<[2,8],f32>) -> !torch.vtensor<[2,8,32],f32> attributes {pygraph.fused} {
  return %a : !torch.vtensor<[2,8,32],f32>
}
func.func @matmul(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[2, 8, 64], [512, 64, 1], 0 : i64, f32>, pygraph.io = "stage"},
                  %w: !pygraph.buf {pygraph.role = "parameter", pygraph.name = "w", pygraph.layout = #pygraph.layout<[64, 32], [32, 1], 0 : i64, f32>, pygraph.io = "direct"},
                  %v: !pygraph.buf {pygraph.role = "parameter", pygraph.name = "v", pygraph.layout = #pygraph.layout<[64], [1], 0 : i64, f32>, pygraph.io = "direct"})
    -> (!pygraph.buf {pygraph.io = "patch"}, !pygraph.buf {pygraph.io = "copy"}) {
  %h = "pygraph.library"(%x, %w) {op = "aten.matmul.default", args = [0 : index, 1 : index], layouts = [#pygraph.layout<[2, 8, 32], [256, 32, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf
  %t = "pygraph.view"(%x) {layout = #pygraph.layout<[2, 64, 8], [512, 1, 64], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
  %s = "pygraph.library"(%x, %t) {op = "aten.matmul.default", args = [0 : index, 1 : index], layouts = [#pygraph.layout<[2, 8, 8], [64, 8, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf
  %m = "pygraph.library"(%x, %v) {op = "aten.matmul.default", args = [0 : index, 1 : index], layouts = [#pygraph.layout<[2, 8], [8, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf
  %y = "pygraph.alloc"() {layout = #pygraph.layout<[2, 8, 32], [256, 32, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
  "pygraph.kernel"(%h, %m, %y) {kernel = @fused_1, grid = [1, 1, 1], access = ["r", "r", "w"], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
  return %s, %y : !pygraph.buf, !pygraph.buf
}

// -----

// `matmul` of [2, 4, 8, 16] heads by their keys transposed (a hand-written attention's scores): `bmm` on
// the heads viewed as one batch of 8, writing a [8, 8, 8] view of the output. Heads whose batch dims do
// not merge (a [2, 8, 4, 16] projection permuted without a copy) stay ATen's matmul, which copies them.
// CHECK-LABEL: func.func @matmul_heads
// CHECK:         %[[Q:.*]] = "pygraph.view"(%arg0) {layout = #pygraph.layout<[8, 8, 16], [128, 16, 1], 0 : i64, f32>}
// CHECK-NEXT:    %[[K:.*]] = "pygraph.view"(%{{.*}}) {layout = #pygraph.layout<[8, 16, 8], [128, 1, 16], 0 : i64, f32>}
// CHECK-NEXT:    %[[OUT:.*]] = "pygraph.output"() {index = 0 : i64, layout = #pygraph.layout<[2, 4, 8, 8], [256, 64, 8, 1], 0 : i64, f32>}
// CHECK-NEXT:    %[[S:.*]] = "pygraph.view"(%[[OUT]]) {layout = #pygraph.layout<[8, 8, 8], [64, 8, 1], 0 : i64, f32>}
// CHECK-NEXT:    "pygraph.library"(%[[Q]], %[[K]], %[[S]]) {args = [0 : index, 1 : index, 2 : index], layouts = [], op = "aten.bmm.out"
// CHECK:         op = "aten.matmul.default"
func.func @matmul_heads(%q: !pygraph.buf {pygraph.role = "input", pygraph.name = "q", pygraph.layout = #pygraph.layout<[2, 4, 8, 16], [512, 128, 16, 1], 0 : i64, f32>, pygraph.io = "stage"},
                        %k: !pygraph.buf {pygraph.role = "input", pygraph.name = "k", pygraph.layout = #pygraph.layout<[2, 4, 8, 16], [512, 128, 16, 1], 0 : i64, f32>, pygraph.io = "stage"},
                        %p: !pygraph.buf {pygraph.role = "input", pygraph.name = "p", pygraph.layout = #pygraph.layout<[2, 8, 4, 16], [512, 64, 16, 1], 0 : i64, f32>, pygraph.io = "stage"})
    -> (!pygraph.buf {pygraph.io = "patch"}, !pygraph.buf {pygraph.io = "patch"}) {
  %kt = "pygraph.view"(%k) {layout = #pygraph.layout<[2, 4, 16, 8], [512, 128, 1, 16], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
  %s = "pygraph.library"(%q, %kt) {op = "aten.matmul.default", args = [0 : index, 1 : index], layouts = [#pygraph.layout<[2, 4, 8, 8], [256, 64, 8, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf
  %ph = "pygraph.view"(%p) {layout = #pygraph.layout<[2, 4, 8, 16], [512, 16, 64, 1], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
  %pt = "pygraph.view"(%p) {layout = #pygraph.layout<[2, 4, 16, 8], [512, 16, 1, 64], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
  %r = "pygraph.library"(%ph, %pt) {op = "aten.matmul.default", args = [0 : index, 1 : index], layouts = [#pygraph.layout<[2, 4, 8, 8], [256, 64, 8, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf
  return %s, %r : !pygraph.buf, !pygraph.buf
}
