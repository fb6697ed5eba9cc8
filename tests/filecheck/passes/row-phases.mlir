// RUN: pygraph-opt %s -p 'row-phases{matmul-precision=tf32}' --split-input-file | filecheck %s
// RUN: pygraph-opt %s -p row-phases --split-input-file | filecheck %s --check-prefix=IEEE
// RUN: pygraph-opt %s -p 'row-phases{matmul-precision=tf32}' --split-input-file | grep -c 'op = "aten.mm.out"' | filecheck %s --check-prefix=COUNT

// 2048 rows of 1001 values (4004 bytes: rows start at 4 alignments) by K = 64: each phase of rows
// r = j (mod 4) writes its aligned middle columns with one product (leading dimension 4 * 1001) and the
// columns before and after it with small ones, all into views of the output, in place of the one call.
// CHECK-LABEL: func.func @main
// CHECK:         %[[OUT:.*]] = "pygraph.output"()
// CHECK-NEXT:    %[[X0:.*]] = "pygraph.view"(%arg0) {layout = #pygraph.layout<[512, 64], [256, 1], 0 : i64, f32>}
// CHECK-NEXT:    %[[W0:.*]] = "pygraph.view"(%[[WT:.*]]) {layout = #pygraph.layout<[64, 1000], [1, 64], 0 : i64, f32>}
// CHECK-NEXT:    %[[O0:.*]] = "pygraph.view"(%[[OUT]]) {layout = #pygraph.layout<[512, 1000], [4004, 1], 0 : i64, f32>}
// CHECK-NEXT:    "pygraph.library"(%[[X0]], %[[W0]], %[[O0]]) {args = [0 : index, 1 : index, 2 : index], layouts = [], op = "aten.mm.out"
// CHECK:         "pygraph.view"(%[[OUT]]) {layout = #pygraph.layout<[512, 1], [4004, 1], 1000 : i64, f32>}
// CHECK:         "pygraph.view"(%arg0) {layout = #pygraph.layout<[512, 64], [256, 1], 64 : i64, f32>}
// CHECK-NEXT:    "pygraph.view"(%[[WT]]) {layout = #pygraph.layout<[64, 3], [1, 64], 0 : i64, f32>}
// CHECK-NEXT:    "pygraph.view"(%[[OUT]]) {layout = #pygraph.layout<[512, 3], [4004, 1], 1001 : i64, f32>}
// CHECK:         "pygraph.view"(%[[WT]]) {layout = #pygraph.layout<[64, 996], [1, 64], 192 : i64, f32>}
// CHECK-NEXT:    "pygraph.view"(%[[OUT]]) {layout = #pygraph.layout<[512, 996], [4004, 1], 1004 : i64, f32>}
// CHECK:         return %[[OUT]]
// Ten products here (phase 0: middle and after; 1 and 2: before, middle, after; 3: before and middle),
// three in the unchanged case below.
// COUNT: 13
// In IEEE float32 (the default) the call stays whole: cuBLAS's unaligned kernels are as fast there.
// IEEE-LABEL: func.func @main
// IEEE:         op = "aten.mm.out"
// IEEE-NEXT:    return
module {
  func.func @main(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[2048, 64], [64, 1], 0 : i64, f32>, pygraph.io = "stage"},
                  %w: !pygraph.buf {pygraph.role = "parameter", pygraph.name = "w", pygraph.layout = #pygraph.layout<[1001, 64], [64, 1], 0 : i64, f32>, pygraph.io = "direct"})
      -> (!pygraph.buf {pygraph.io = "patch"}) {
    %wt = "pygraph.view"(%w) {layout = #pygraph.layout<[64, 1001], [1, 64], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %out = "pygraph.output"() {index = 0 : i64, layout = #pygraph.layout<[2048, 1001], [1001, 1], 0 : i64, f32>} : () -> !pygraph.buf
    "pygraph.library"(%x, %wt, %out) {op = "aten.mm.out", args = [0 : index, 1 : index, 2 : index], layouts = [], operandSegmentSizes = array<i32: 3>, resultSegmentSizes = array<i32: 0>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %out : !pygraph.buf
  }
}

// -----

// Unchanged: few rows (64: the weight read once per phase would cost more than a copy), rows that are
// aligned already (1000 values), a product with a bias (addmm), and an input whose rows are unaligned
// (K = 63: cuBLAS's slow kernels either way).
// CHECK-LABEL: func.func @main
// CHECK-COUNT-4: "pygraph.library"
// CHECK-NOT:     "pygraph.library"
module {
  func.func @main(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[2048, 64], [64, 1], 0 : i64, f32>, pygraph.io = "stage"},
                  %w: !pygraph.buf {pygraph.role = "parameter", pygraph.name = "w", pygraph.layout = #pygraph.layout<[1001, 64], [64, 1], 0 : i64, f32>, pygraph.io = "direct"},
                  %b: !pygraph.buf {pygraph.role = "parameter", pygraph.name = "b", pygraph.layout = #pygraph.layout<[1001], [1], 0 : i64, f32>, pygraph.io = "direct"},
                  %u: !pygraph.buf {pygraph.role = "input", pygraph.name = "u", pygraph.layout = #pygraph.layout<[2048, 63], [63, 1], 0 : i64, f32>, pygraph.io = "stage"},
                  %v: !pygraph.buf {pygraph.role = "parameter", pygraph.name = "v", pygraph.layout = #pygraph.layout<[1001, 63], [63, 1], 0 : i64, f32>, pygraph.io = "direct"})
      -> (!pygraph.buf {pygraph.io = "patch"}, !pygraph.buf {pygraph.io = "patch"}, !pygraph.buf {pygraph.io = "patch"}, !pygraph.buf {pygraph.io = "patch"}) {
    %x64 = "pygraph.view"(%x) {layout = #pygraph.layout<[64, 64], [64, 1], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %wt = "pygraph.view"(%w) {layout = #pygraph.layout<[64, 1001], [1, 64], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %few = "pygraph.output"() {index = 0 : i64, layout = #pygraph.layout<[64, 1001], [1001, 1], 0 : i64, f32>} : () -> !pygraph.buf
    "pygraph.library"(%x64, %wt, %few) {op = "aten.mm.out", args = [0 : index, 1 : index, 2 : index], layouts = [], operandSegmentSizes = array<i32: 3>, resultSegmentSizes = array<i32: 0>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    %w1000 = "pygraph.view"(%w) {layout = #pygraph.layout<[64, 1000], [1, 64], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %even = "pygraph.output"() {index = 1 : i64, layout = #pygraph.layout<[2048, 1000], [1000, 1], 0 : i64, f32>} : () -> !pygraph.buf
    "pygraph.library"(%x, %w1000, %even) {op = "aten.mm.out", args = [0 : index, 1 : index, 2 : index], layouts = [], operandSegmentSizes = array<i32: 3>, resultSegmentSizes = array<i32: 0>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    %biased = "pygraph.output"() {index = 2 : i64, layout = #pygraph.layout<[2048, 1001], [1001, 1], 0 : i64, f32>} : () -> !pygraph.buf
    "pygraph.library"(%b, %x, %wt, %biased) {op = "aten.addmm.out", args = [0 : index, 1 : index, 2 : index, 1, 1, 3 : index], layouts = [], operandSegmentSizes = array<i32: 4>, resultSegmentSizes = array<i32: 0>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    %vt = "pygraph.view"(%v) {layout = #pygraph.layout<[63, 1001], [1, 63], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %odd = "pygraph.output"() {index = 3 : i64, layout = #pygraph.layout<[2048, 1001], [1001, 1], 0 : i64, f32>} : () -> !pygraph.buf
    "pygraph.library"(%u, %vt, %odd) {op = "aten.mm.out", args = [0 : index, 1 : index, 2 : index], layouts = [], operandSegmentSizes = array<i32: 3>, resultSegmentSizes = array<i32: 0>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %few, %even, %biased, %odd : !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf
  }
}
