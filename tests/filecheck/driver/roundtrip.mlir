// Plan-level IR in generic form survives printing and parsing unchanged.
// RUN: %roundtrip | filecheck %s

"builtin.module"() ({
  "pygraph.triton_kernel"() {entry = "add_kernel", num_stages = 3 : i64, num_warps = 4 : i64, signature = ["*fp32:16", "*fp32:16"], source = "@triton.jit\0Adef add_kernel(x, y): pass\0A", sym_name = "add_0"} : () -> ()
  "func.func"() <{arg_attrs = [{pygraph.device = "cpu", pygraph.io = "stage", pygraph.layout = #pygraph.layout<[4, 4], [4, 1], 0, f32>, pygraph.name = "x", pygraph.role = "input"}], function_type = (!pygraph.buf) -> !pygraph.buf, sym_name = "main"}> ({
  ^bb0(%arg0: !pygraph.buf):
    %0 = "pygraph.alloc"() {arena_offset = 0 : i64, layout = #pygraph.layout<[4, 4], [4, 1], 0, f32>} : () -> !pygraph.buf
    %1 = "pygraph.view"(%0) {layout = #pygraph.layout<[4, 4], [1, 4], 0, f32>} : (!pygraph.buf) -> !pygraph.buf
    %2 = "pygraph.constant"() {layout = #pygraph.layout<[2], [1], 0, f32>, value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> !pygraph.buf
    %3 = "pygraph.segment"() ({
      "pygraph.fill"(%0) {byte = 0 : i64} : (!pygraph.buf) -> ()
      "pygraph.kernel"(%arg0, %0) {access = ["r", "w"], grid = [1, 1, 1], kernel = @add_0, operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      %4 = "pygraph.library"(%0, %1) {args = [0 : index, 1 : index], layouts = [#pygraph.layout<[4, 4], [4, 1], 0, f32>], op = "aten.mm.default", operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf
      "pygraph.copy"(%4, %0) : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"(%4) {operandSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> ()
    }) {info = {reason = "cheaper than eager"}, mode = "graph", resultSegmentSizes = array<i32: 1>} : () -> !pygraph.buf
    "func.return"(%3) : (!pygraph.buf) -> ()
  }) {pygraph.arena_bytes = 64 : i64} : () -> ()
}) : () -> ()

// CHECK:      "pygraph.triton_kernel"() {{.*}}sym_name = "add_0"
// CHECK:      func.func @main(%[[ARG:.*]]: !pygraph.buf
// CHECK-NEXT:   %[[ALLOC:.*]] = "pygraph.alloc"() {arena_offset = 0 : i64, layout = #pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>}
// CHECK-NEXT:   %[[VIEW:.*]] = "pygraph.view"(%[[ALLOC]])
// CHECK-NEXT:   "pygraph.constant"() {{.*}}value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:   %[[SEG:.*]] = "pygraph.segment"() ({
// CHECK-NEXT:     "pygraph.fill"(%[[ALLOC]]) {byte = 0 : i64}
// CHECK-NEXT:     "pygraph.kernel"(%[[ARG]], %[[ALLOC]]) {access = ["r", "w"], grid = [1, 1, 1], kernel = @add_0
// CHECK-NEXT:     %[[MM:.*]] = "pygraph.library"(%[[ALLOC]], %[[VIEW]]) {{.*}}op = "aten.mm.default"
// CHECK-NEXT:     "pygraph.copy"(%[[MM]], %[[ALLOC]])
// CHECK-NEXT:     "pygraph.yield"(%[[MM]])
// CHECK-NEXT:   }) {info = {reason = "cheaper than eager"}, mode = "graph"
// CHECK-NEXT:   return %[[SEG]]
