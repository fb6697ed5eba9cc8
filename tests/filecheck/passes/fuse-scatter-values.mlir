// RUN: pygraph-opt %s -p fuse-scatter-values --split-input-file | filecheck %s

// A rotary embedding's form (the values times 0.5 plus their halves swapped, one negated: a pointwise
// kernel with a `cat`) computed for a cache write alone: the scatter's new function takes the pointwise
// kernel's inputs and ops before its `index_put`, one launch replaces the two, and the values' buffer goes.
// CHECK-LABEL: func.func @main
// CHECK-NOT:     "pygraph.alloc"
// CHECK:         "pygraph.kernel"(%arg2, %arg0, %arg1, %0, %1, %arg2) {access = ["r", "r", "r", "r", "r", "w"], grid = [1, 1, 1], kernel = @scatter_1
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @scatter_1(
// CHECK-SAME:      %arg0: !torch.vtensor<[2,4,16,8],f32>, %arg1: !torch.vtensor<[1],si64>, %arg2: !torch.vtensor<[2,4,1,8],f32>, %arg3: !torch.vtensor<[2,4,1,4],f32>, %arg4: !torch.vtensor<[2,4,1,4],f32>)
// CHECK:         torch.aten.mul.Scalar %arg2
// CHECK:         torch.aten.neg %arg3
// CHECK:         %[[V:.*]] = torch.aten.add.Tensor
// CHECK:         %[[P:.*]] = torch.aten.index_put %arg0, %{{.*}}, %[[V]], %false
// CHECK-NEXT:    return %[[P]]
module attributes {pygraph.stage = "plan"} {
  func.func private @fused_0(%arg0: !torch.vtensor<[2,4,1,8],f32>, %arg1: !torch.vtensor<[2,4,1,4],f32>, %arg2: !torch.vtensor<[2,4,1,4],f32>) -> !torch.vtensor<[2,4,1,8],f32> attributes {pygraph.fused} {
    %float5.000000e-01 = torch.constant.float 5.000000e-01 {pygraph.class = "scalar"}
    %0 = torch.aten.mul.Scalar %arg0, %float5.000000e-01 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[2, 4, 1, 8], [32, 8, 8, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,1,8],f32>, !torch.float -> !torch.vtensor<[2,4,1,8],f32>
    %1 = torch.aten.neg %arg1 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[2, 4, 1, 4], [16, 4, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,1,4],f32> -> !torch.vtensor<[2,4,1,4],f32>
    %2 = torch.prim.ListConstruct %1, %arg2 {pygraph.class = "scalar"} : (!torch.vtensor<[2,4,1,4],f32>, !torch.vtensor<[2,4,1,4],f32>) -> !torch.list<vtensor>
    %int-1 = torch.constant.int -1 {pygraph.class = "scalar"}
    %3 = torch.aten.cat %2, %int-1 {pygraph.class = "concat", pygraph.layouts = [#pygraph.layout<[2, 4, 1, 8], [32, 8, 8, 1], 0 : i64, f32>]} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[2,4,1,8],f32>
    %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
    %4 = torch.aten.add.Tensor %0, %3, %int1 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[2, 4, 1, 8], [32, 8, 8, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,1,8],f32>, !torch.vtensor<[2,4,1,8],f32>, !torch.int -> !torch.vtensor<[2,4,1,8],f32>
    return %4 : !torch.vtensor<[2,4,1,8],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.device = "cpu", pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1], [1], 0 : i64, si64>, pygraph.name = "positions", pygraph.role = "input"}, %arg1: !pygraph.buf {pygraph.device = "cpu", pygraph.io = "stage", pygraph.layout = #pygraph.layout<[2, 4, 1, 8], [32, 8, 8, 1], 0 : i64, f32>, pygraph.name = "values", pygraph.role = "input"}, %arg2: !pygraph.buf {pygraph.device = "cpu", pygraph.io = "direct", pygraph.layout = #pygraph.layout<[2, 4, 16, 8], [512, 128, 8, 1], 0 : i64, f32>, pygraph.name = "state", pygraph.role = "buffer"}) {
    %0 = "pygraph.view"(%arg1) {layout = #pygraph.layout<[2, 4, 1, 4], [32, 8, 8, 1], 4 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %1 = "pygraph.view"(%arg1) {layout = #pygraph.layout<[2, 4, 1, 4], [32, 8, 8, 1], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %2 = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[2, 4, 1, 8], [32, 8, 8, 1], 0 : i64, f32>} : () -> !pygraph.buf
    "pygraph.kernel"(%arg1, %0, %1, %2) {access = ["r", "r", "r", "w"], grid = [1, 1, 1], kernel = @fused_0, operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    "pygraph.kernel"(%arg2, %arg0, %2, %arg2) {access = ["r", "r", "r", "w"], grid = [1, 1, 1], kernel = @scatter_0, operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return
  }
  func.func private @scatter_0(%arg0: !torch.vtensor<[2,4,16,8],f32>, %arg1: !torch.vtensor<[1],si64>, %arg2: !torch.vtensor<[2,4,1,8],f32>) -> !torch.vtensor<[2,4,16,8],f32> attributes {pygraph.fused} {
    %none = torch.constant.none {pygraph.class = "scalar"}
    %none_0 = torch.constant.none {pygraph.class = "scalar"}
    %0 = torch.prim.ListConstruct %none, %none_0, %arg1 {pygraph.class = "scalar"} : (!torch.none, !torch.none, !torch.vtensor<[1],si64>) -> !torch.list<optional<vtensor>>
    %false = torch.constant.bool false {pygraph.class = "scalar"}
    %1 = torch.aten.index_put %arg0, %0, %arg2, %false {pygraph.class = "scatter"} : !torch.vtensor<[2,4,16,8],f32>, !torch.list<optional<vtensor>>, !torch.vtensor<[2,4,1,8],f32>, !torch.bool -> !torch.vtensor<[2,4,16,8],f32>
    return %1 : !torch.vtensor<[2,4,16,8],f32>
  }
}

// -----

// A fill of the values' input between the two launches: the values must be computed before it, so the
// launches stay apart.
// CHECK-LABEL: func.func @main
// CHECK:         %[[V:.*]] = "pygraph.alloc"()
// CHECK-NEXT:    "pygraph.kernel"(%arg1, %0, %1, %[[V]]) {{.*}}kernel = @fused_0
// CHECK-NEXT:    "pygraph.fill"(%arg1)
// CHECK-NEXT:    "pygraph.kernel"(%arg2, %arg0, %[[V]], %arg2) {{.*}}kernel = @scatter_0
module attributes {pygraph.stage = "plan"} {
  func.func private @fused_0(%arg0: !torch.vtensor<[2,4,1,8],f32>, %arg1: !torch.vtensor<[2,4,1,4],f32>, %arg2: !torch.vtensor<[2,4,1,4],f32>) -> !torch.vtensor<[2,4,1,8],f32> attributes {pygraph.fused} {
    %float5.000000e-01 = torch.constant.float 5.000000e-01 {pygraph.class = "scalar"}
    %0 = torch.aten.mul.Scalar %arg0, %float5.000000e-01 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[2, 4, 1, 8], [32, 8, 8, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,1,8],f32>, !torch.float -> !torch.vtensor<[2,4,1,8],f32>
    %1 = torch.aten.neg %arg1 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[2, 4, 1, 4], [16, 4, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,1,4],f32> -> !torch.vtensor<[2,4,1,4],f32>
    %2 = torch.prim.ListConstruct %1, %arg2 {pygraph.class = "scalar"} : (!torch.vtensor<[2,4,1,4],f32>, !torch.vtensor<[2,4,1,4],f32>) -> !torch.list<vtensor>
    %int-1 = torch.constant.int -1 {pygraph.class = "scalar"}
    %3 = torch.aten.cat %2, %int-1 {pygraph.class = "concat", pygraph.layouts = [#pygraph.layout<[2, 4, 1, 8], [32, 8, 8, 1], 0 : i64, f32>]} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[2,4,1,8],f32>
    %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
    %4 = torch.aten.add.Tensor %0, %3, %int1 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[2, 4, 1, 8], [32, 8, 8, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,1,8],f32>, !torch.vtensor<[2,4,1,8],f32>, !torch.int -> !torch.vtensor<[2,4,1,8],f32>
    return %4 : !torch.vtensor<[2,4,1,8],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.device = "cpu", pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1], [1], 0 : i64, si64>, pygraph.name = "positions", pygraph.role = "input"}, %arg1: !pygraph.buf {pygraph.device = "cpu", pygraph.io = "stage", pygraph.layout = #pygraph.layout<[2, 4, 1, 8], [32, 8, 8, 1], 0 : i64, f32>, pygraph.name = "values", pygraph.role = "input"}, %arg2: !pygraph.buf {pygraph.device = "cpu", pygraph.io = "direct", pygraph.layout = #pygraph.layout<[2, 4, 16, 8], [512, 128, 8, 1], 0 : i64, f32>, pygraph.name = "state", pygraph.role = "buffer"}) {
    %0 = "pygraph.view"(%arg1) {layout = #pygraph.layout<[2, 4, 1, 4], [32, 8, 8, 1], 4 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %1 = "pygraph.view"(%arg1) {layout = #pygraph.layout<[2, 4, 1, 4], [32, 8, 8, 1], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
    %2 = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[2, 4, 1, 8], [32, 8, 8, 1], 0 : i64, f32>} : () -> !pygraph.buf
    "pygraph.kernel"(%arg1, %0, %1, %2) {access = ["r", "r", "r", "w"], grid = [1, 1, 1], kernel = @fused_0, operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    "pygraph.fill"(%arg1) {byte = 0 : i64} : (!pygraph.buf) -> ()
    "pygraph.kernel"(%arg2, %arg0, %2, %arg2) {access = ["r", "r", "r", "w"], grid = [1, 1, 1], kernel = @scatter_0, operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return
  }
  func.func private @scatter_0(%arg0: !torch.vtensor<[2,4,16,8],f32>, %arg1: !torch.vtensor<[1],si64>, %arg2: !torch.vtensor<[2,4,1,8],f32>) -> !torch.vtensor<[2,4,16,8],f32> attributes {pygraph.fused} {
    %none = torch.constant.none {pygraph.class = "scalar"}
    %none_0 = torch.constant.none {pygraph.class = "scalar"}
    %0 = torch.prim.ListConstruct %none, %none_0, %arg1 {pygraph.class = "scalar"} : (!torch.none, !torch.none, !torch.vtensor<[1],si64>) -> !torch.list<optional<vtensor>>
    %false = torch.constant.bool false {pygraph.class = "scalar"}
    %1 = torch.aten.index_put %arg0, %0, %arg2, %false {pygraph.class = "scatter"} : !torch.vtensor<[2,4,16,8],f32>, !torch.list<optional<vtensor>>, !torch.vtensor<[2,4,1,8],f32>, !torch.bool -> !torch.vtensor<[2,4,16,8],f32>
    return %1 : !torch.vtensor<[2,4,16,8],f32>
  }
}
