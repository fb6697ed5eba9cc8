// RUN: pygraph-opt %s -p select-graphs --split-input-file | filecheck %s
// RUN: pygraph-opt %s -p 'select-graphs{force=graph}' --split-input-file | filecheck %s --check-prefix=FORCE

// Six small kernels: six launches on the host cost more than one graph launch.
// CHECK-LABEL: func.func @small
// CHECK:         info = {estimated_eager_us = 3.540000e+01 : f64, estimated_graph_us = 6.000000e+00 : f64, fingerprint = "{{[0-9a-f]+}}", nodes = 6 : i64, one_time_us = 3.900000e+01 : f64, reason = "graph 6.0 us < eager 35.4 us (estimated)"}, mode = "graph"
// FORCE-LABEL: func.func @small
// FORCE:         reason = "forced (graph for every segment)"}, mode = "graph"
module {
  "pygraph.triton_kernel"() {sym_name = "k", entry = "k", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32"], source = ""} : () -> ()
  func.func @small(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>, pygraph.io = "stage"}) {
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[4], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.segment"() ({
      "pygraph.kernel"(%x, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%a, %x) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%x, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%a, %x) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%x, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%a, %x) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
    return
  }
}

// -----

// One kernel over 64 MiB: the GPU work hides the launch, and a graph only adds to it.
// CHECK-LABEL: func.func @large
// CHECK:         reason = "graph 45.7 us, eager 46.2 us (estimated): a graph must win by 2%"}, mode = "eager"
module {
  "pygraph.triton_kernel"() {sym_name = "k", entry = "k", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32"], source = ""} : () -> ()
  func.func @large(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[16777216], [1], 0 : i64, f32>, pygraph.io = "stage"}) {
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[16777216], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.segment"() ({
      "pygraph.kernel"(%x, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
    return
  }
}

// -----

// Eight kernels over 16 MiB each: the GPU sets the pace either way (each kernel's work is longer than its
// launch), and the gap between kernels launched on a stream, wider than a graph's, decides.
// CHECK-LABEL: func.func @gpu_bound_chain
// CHECK:         reason = "graph 97.5 us < eager 101.5 us (estimated)"}, mode = "graph"
module {
  "pygraph.triton_kernel"() {sym_name = "k", entry = "k", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32"], source = ""} : () -> ()
  func.func @gpu_bound_chain(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[4194304], [1], 0 : i64, f32>, pygraph.io = "stage"}) {
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[4194304], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.segment"() ({
      "pygraph.kernel"(%x, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%a, %x) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%x, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%a, %x) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%x, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%a, %x) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%x, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%a, %x) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
    return
  }
}

// -----

// No segments: nothing to choose.
// CHECK-LABEL: func.func @none
// CHECK-NEXT:    return
func.func @none(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>}) {
  return
}
