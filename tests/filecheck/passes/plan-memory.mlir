// RUN: pygraph-opt %s -p plan-memory --split-input-file | filecheck %s
// RUN: pygraph-opt %s -p 'plan-memory{reuse=false}' --split-input-file | filecheck %s --check-prefix=NOREUSE

// %a dies after the second kernel reads it, so %c reuses its bytes; %b is live across both.
// Buffers are 256-byte aligned; the arena holds the peak.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    pygraph.arena_bytes = 1280 : i64
// CHECK:         arena_offset = 0 : i64, layout = #pygraph.layout<[256], [1], 0 : i64, f32>
// CHECK:         arena_offset = 1024 : i64, layout = #pygraph.layout<[3], [1], 0 : i64, f32>
// CHECK:         arena_offset = 0 : i64, layout = #pygraph.layout<[200], [1], 0 : i64, f32>
// NOREUSE-LABEL: func.func @main
// NOREUSE-SAME:    pygraph.arena_bytes = 2304 : i64
module {
  "pygraph.triton_kernel"() {sym_name = "k", entry = "k", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32"], source = ""} : () -> ()
  func.func @main(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[3], [1], 0 : i64, f32>}) -> !pygraph.buf {
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[256], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %b = "pygraph.alloc"() {layout = #pygraph.layout<[3], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %c = "pygraph.alloc"() {layout = #pygraph.layout<[200], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.segment"() ({
      "pygraph.kernel"(%arg0, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%a, %b) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%b, %c) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%c, %b) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
    return %b : !pygraph.buf
  }
}

// -----

// Already planned: running the pass again gives the same placement (the input is its own output).
// CHECK-LABEL: func.func @planned
// CHECK-SAME:    pygraph.arena_bytes = 256 : i64
// CHECK:         arena_offset = 0 : i64
func.func @planned(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[3], [1], 0 : i64, f32>}) -> !pygraph.buf attributes {pygraph.arena_bytes = 256 : i64} {
  %a = "pygraph.alloc"() {layout = #pygraph.layout<[3], [1], 0 : i64, f32>, arena_offset = 0 : i64} : () -> !pygraph.buf
  "pygraph.segment"() ({
    "pygraph.copy"(%arg0, %a) : (!pygraph.buf, !pygraph.buf) -> ()
    "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
  }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
  return %a : !pygraph.buf
}
