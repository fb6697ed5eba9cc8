// RUN: pygraph-opt %s -p form-segments --split-input-file | filecheck %s
// RUN: pygraph-opt %s -p 'form-segments{mode=eager}' --split-input-file | filecheck %s --check-prefix=EAGER

// A host op splits the nodes into two segments; allocations move to the top; the library result used
// after the first segment is yielded; views travel with their nodes.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[A:.*]] = "pygraph.alloc"() {arena_offset = -1
// CHECK-NEXT:    %[[B:.*]] = "pygraph.alloc"() {arena_offset = -1
// CHECK-NEXT:    %[[S0:.*]] = "pygraph.segment"() ({
// CHECK-NEXT:      "pygraph.kernel"(%arg0, %[[A]])
// CHECK-NEXT:      %[[L:.*]] = "pygraph.library"(%[[A]])
// CHECK-NEXT:      %[[V:.*]] = "pygraph.view"(%[[L]])
// CHECK-NEXT:      "pygraph.yield"(%[[V]])
// CHECK-NEXT:    }) {info = {}, mode = "graph"
// CHECK-NEXT:    %[[H:.*]] = "pygraph.host"(%[[S0]]) {{.*}}op = "aten.nonzero.default"
// CHECK-NEXT:    "pygraph.segment"() ({
// CHECK-NEXT:      "pygraph.kernel"(%[[H]], %[[B]])
// CHECK-NEXT:      "pygraph.yield"()
// CHECK-NEXT:    }) {info = {}, mode = "graph"
// CHECK-NEXT:    return %[[B]]
// EAGER-LABEL: func.func @main
// EAGER:         mode = "eager"
// EAGER:         mode = "eager"
module {
  "pygraph.triton_kernel"() {sym_name = "k", entry = "k", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32"], source = ""} : () -> ()
  func.func @main(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>}) -> !pygraph.buf {
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[4], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    %l = "pygraph.library"(%a) {op = "aten.relu.default", args = [0 : index], layouts = [#pygraph.layout<[4], [1], 0 : i64, f32>], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
    %v = "pygraph.view"(%l) {layout = #pygraph.layout<[2, 2], [2, 1], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %h = "pygraph.host"(%v) {op = "aten.nonzero.default", args = [0 : index], layouts = [#pygraph.layout<[4], [1], 0 : i64, f32>], reason = "sync", slots = [-1], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
    %b = "pygraph.alloc"() {layout = #pygraph.layout<[4], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%h, %b) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    return %b : !pygraph.buf
  }
}

// -----

// Segments already formed: nothing changes.
// CHECK-LABEL: func.func @formed
// CHECK-NEXT:    "pygraph.segment"() ({
// CHECK-NEXT:      "pygraph.fill"(%arg0) {byte = 0 : i64}
// CHECK-NEXT:      "pygraph.yield"()
// CHECK-NEXT:    }) {info = {}, mode = "graph"
// CHECK-NEXT:    return
func.func @formed(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>}) {
  "pygraph.segment"() ({
    "pygraph.fill"(%arg0) {byte = 0 : i64} : (!pygraph.buf) -> ()
    "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
  }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
  return
}
