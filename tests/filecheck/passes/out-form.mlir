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
