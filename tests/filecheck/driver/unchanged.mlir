// The RUN form for "this pass leaves the IR alone": its output equals the plain round trip.
// (cse cannot merge pygraph ops: they are not pure.)
// RUN: pygraph-opt %s --split-input-file -o %t && pygraph-opt %s --split-input-file -p cse | diff %t -
// CHECK-LABEL finds functions by name.
// RUN: pygraph-opt %s --split-input-file -p cse | filecheck %s

// CHECK-LABEL: func.func @two_allocs
// CHECK-COUNT-2: "pygraph.alloc"()
"func.func"() <{function_type = () -> (), sym_name = "two_allocs"}> ({
  %0 = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[4], [1], 0, f32>} : () -> !pygraph.buf
  %1 = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[4], [1], 0, f32>} : () -> !pygraph.buf
  "func.return"() : () -> ()
}) : () -> ()

// -----

// CHECK-LABEL: func.func @two_fills
// CHECK-COUNT-2: "pygraph.fill"(%0) {byte = 0 : i64}
"func.func"() <{function_type = () -> (), sym_name = "two_fills"}> ({
  %0 = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[4], [1], 0, f32>} : () -> !pygraph.buf
  "pygraph.fill"(%0) {byte = 0 : i64} : (!pygraph.buf) -> ()
  "pygraph.fill"(%0) {byte = 0 : i64} : (!pygraph.buf) -> ()
  "func.return"() : () -> ()
}) : () -> ()
