// RUN: pygraph-opt %s -p lower-to-plan --split-input-file | filecheck %s

// A library call, a view of its result and a fused kernel: buffers get layouts, the kernel writes an
// arena buffer, inputs are reached by copy and parameters directly.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    pygraph.io = "stage"{{.*}}pygraph.role = "input"
// CHECK-SAME:    pygraph.io = "direct"{{.*}}pygraph.name = "w", pygraph.role = "parameter"
// CHECK-NEXT:    %[[MM:.*]] = "pygraph.library"(%arg0, %arg1) {args = [0 : index, 1 : index], layouts = [#pygraph.layout<[4, 8], [8, 1], 0 : i64, f32>], op = "aten.mm.default"
// CHECK-NEXT:    %[[T:.*]] = "pygraph.view"(%[[MM]]) {layout = #pygraph.layout<[8, 4], [1, 8], 0 : i64, f32>}
// CHECK-NEXT:    %[[OUT:.*]] = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[8, 4], [4, 1], 0 : i64, f32>}
// CHECK-NEXT:    "pygraph.kernel"(%[[T]], %[[OUT]]) {access = ["r", "w"], grid = [1, 1, 1], kernel = @fused_0
// CHECK-NEXT:    return %[[OUT]]
// CHECK:       func.func private @fused_0
func.func @main(%arg0: !torch.vtensor<[4,8],f32>, %arg1: !torch.vtensor<[8,8],f32> {pygraph.role = "parameter", pygraph.name = "w"}) -> !torch.vtensor<[8,4],f32> {
  %0 = torch.aten.mm %arg0, %arg1 {pygraph.class = "library"} : !torch.vtensor<[4,8],f32>, !torch.vtensor<[8,8],f32> -> !torch.vtensor<[4,8],f32>
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %1 = torch.aten.transpose.int %0, %int0, %int1 {pygraph.class = "view"} : !torch.vtensor<[4,8],f32>, !torch.int, !torch.int -> !torch.vtensor<[8,4],f32>
  %2 = func.call @fused_0(%1) {pygraph.class = "kernel"} : (!torch.vtensor<[8,4],f32>) -> !torch.vtensor<[8,4],f32>
  return %2 : !torch.vtensor<[8,4],f32>
}
func.func private @fused_0(%a: !torch.vtensor<[8,4],f32>) -> !torch.vtensor<[8,4],f32> attributes {pygraph.fused} {
  %r = torch.aten.relu %a : !torch.vtensor<[8,4],f32> -> !torch.vtensor<[8,4],f32>
  return %r : !torch.vtensor<[8,4],f32>
}

// -----

// Overwrites happen at the end of the call (the argument keeps its old value until then): a memcpy
// when layouts match, a strided copy kernel (an identity fused function) when they do not. Eager's
// layouts (pygraph.layouts) decide where results live.
// CHECK-LABEL: func.func @mutate
// CHECK:         %[[NEW:.*]] = "pygraph.library"(%arg0) {{.*}}op = "aten.add.Scalar"
// CHECK-NEXT:    %[[NEG:.*]] = "pygraph.library"(%arg1) {{.*}}layouts = [#pygraph.layout<[2, 3], [1, 2], 0 : i64, f32>], op = "aten.neg.default"
// CHECK-NEXT:    %[[USE:.*]] = "pygraph.library"(%arg0)
// CHECK-NEXT:    "pygraph.copy"(%[[NEW]], %arg0)
// CHECK-NEXT:    "pygraph.kernel"(%[[NEG]], %arg1) {access = ["r", "w"], grid = [1, 1, 1], kernel = @copy_0
// CHECK-NEXT:    return %[[USE]]
// CHECK:       func.func private @copy_0(%arg0: !torch.vtensor<[2,3],f32>) -> !torch.vtensor<[2,3],f32> attributes {pygraph.fused}
// CHECK-NEXT:    return %arg0
func.func @mutate(%arg0: !torch.vtensor<[4],f32> {pygraph.role = "buffer", pygraph.name = "count"}, %arg1: !torch.vtensor<[2,3],f32>) -> !torch.vtensor<[4],f32> {
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %0 = torch.aten.add.Scalar %arg0, %int1, %int1 {pygraph.class = "library"} : !torch.vtensor<[4],f32>, !torch.int, !torch.int -> !torch.vtensor<[4],f32>
  "pygraph.overwrite"(%0, %arg0) : (!torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>) -> ()
  %1 = torch.aten.neg %arg1 {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[2, 3], [1, 2], 0 : i64, f32>]} : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
  "pygraph.overwrite"(%1, %arg1) : (!torch.vtensor<[2,3],f32>, !torch.vtensor<[2,3],f32>) -> ()
  %2 = torch.aten.sin %arg0 {pygraph.class = "library"} : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  return %2 : !torch.vtensor<[4],f32>
}

// -----

// split gives a list of views; a literal becomes a pygraph.constant; asserts disappear.
// CHECK-LABEL: func.func @views
// CHECK:         %[[C:.*]] = "pygraph.constant"() {layout = #pygraph.layout<[], [], 0 : i64, f32>, value = dense<3.000000e+00> : tensor<f32>}
// CHECK-NEXT:    %[[A:.*]] = "pygraph.view"(%arg0) {layout = #pygraph.layout<[2, 3], [5, 1], 0 : i64, f32>}
// CHECK-NEXT:    %[[B:.*]] = "pygraph.view"(%arg0) {layout = #pygraph.layout<[2, 2], [5, 1], 3 : i64, f32>}
// CHECK-NEXT:    "pygraph.library"(%[[B]], %[[C]]) {args = [0 : index, 1 : index, 1], {{.*}}op = "aten.add.Tensor"
// CHECK-NOT:     assert
func.func @views(%arg0: !torch.vtensor<[2,5],f32>) -> !torch.vtensor<[2,2],f32> {
  %c = torch.vtensor.literal(dense<3.0> : tensor<f32>) {pygraph.class = "constant"} : !torch.vtensor<[],f32>
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %int3 = torch.constant.int 3 {pygraph.class = "scalar"}
  %0 = torch.aten.split.Tensor %arg0, %int3, %int1 {pygraph.class = "view"} : !torch.vtensor<[2,5],f32>, !torch.int, !torch.int -> !torch.list<vtensor>
  %1:2 = torch.prim.ListUnpack %0 {pygraph.class = "scalar"} : !torch.list<vtensor> -> !torch.vtensor<[2,3],f32>, !torch.vtensor<[2,2],f32>
  %2 = torch.aten.add.Tensor %1#1, %c, %int1 {pygraph.class = "library"} : !torch.vtensor<[2,2],f32>, !torch.vtensor<[],f32>, !torch.int -> !torch.vtensor<[2,2],f32>
  %none = torch.constant.none {pygraph.class = "scalar"}
  torch.operator "torch.aten._assert_tensor_metadata"(%2, %none) {pygraph.class = "nop"} : (!torch.vtensor<[2,2],f32>, !torch.none) -> ()
  return %2 : !torch.vtensor<[2,2],f32>
}

// -----

// Already at the plan level: nothing changes.
// CHECK-LABEL: func.func @planned(%arg0: !pygraph.buf
// CHECK-NEXT:    return %arg0
module attributes {pygraph.stage = "plan"} {
  func.func @planned(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>}) -> !pygraph.buf {
    return %arg0 : !pygraph.buf
  }
}
