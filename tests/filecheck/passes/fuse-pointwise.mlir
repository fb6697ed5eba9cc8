// RUN: pygraph-opt %s -p fuse-pointwise --split-input-file | filecheck %s
// RUN: pygraph-opt %s -p 'fuse-pointwise{max-ops=1}' --split-input-file | filecheck %s --check-prefix=ONE
// RUN: pygraph-opt %s -p 'fuse-pointwise{max-row=4}' --split-input-file | filecheck %s --check-prefix=LONGROW

// An epilogue, gelu(a + bias) with a broadcast bias: one group, its constants cloned into the body,
// the call carrying the output's eager layout (here a column-major one).
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      %arg0: !torch.vtensor<[4,8],f32>, %arg1: !torch.vtensor<[8],f32>) -> !torch.vtensor<[4,8],f32> attributes {pygraph.fused}
// CHECK-NEXT:    %[[C1:.*]] = torch.constant.int 1
// CHECK-NEXT:    %[[SUM:.*]] = torch.aten.add.Tensor %arg0, %arg1, %[[C1]]
// CHECK-NEXT:    %[[NONE:.*]] = torch.constant.str "none"
// CHECK-NEXT:    %[[GELU:.*]] = torch.aten.gelu %[[SUM]], %[[NONE]]
// CHECK-NEXT:    return %[[GELU]]
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[R:.*]] = call @fused_0(%arg0, %arg1) {pygraph.class = "kernel", pygraph.layouts = [#pygraph.layout<[4, 8], [1, 4], 0 : i64, f32>]}
// CHECK-NEXT:    return %[[R]]
// ONE-LABEL:   func.func private @fused_0(
// ONE:           torch.aten.add.Tensor
// ONE-NOT:       torch.aten.gelu
// ONE-LABEL:   func.func private @fused_1(
// ONE:           torch.aten.gelu
// ONE-LABEL:   func.func @main
// ONE-NEXT:      %[[S:.*]] = call @fused_0(%arg0, %arg1)
// ONE-NEXT:      %[[G:.*]] = call @fused_1(%[[S]])
// ONE-NEXT:      return %[[G]]
func.func @main(%a: !torch.vtensor<[4,8],f32>, %bias: !torch.vtensor<[8],f32>) -> !torch.vtensor<[4,8],f32> {
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %0 = torch.aten.add.Tensor %a, %bias, %int1 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 8], [8, 1], 0 : i64, f32>]} : !torch.vtensor<[4,8],f32>, !torch.vtensor<[8],f32>, !torch.int -> !torch.vtensor<[4,8],f32>
  %str = torch.constant.str "none" {pygraph.class = "scalar"}
  %1 = torch.aten.gelu %0, %str {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 8], [1, 4], 0 : i64, f32>]} : !torch.vtensor<[4,8],f32>, !torch.str -> !torch.vtensor<[4,8],f32>
  return %1 : !torch.vtensor<[4,8],f32>
}

// -----

// A value used by a library op seals its group: the call goes before the mm, and a later op that only
// needs values defined by then (h * 2) still joins it; relu(mm) starts a group of its own. The
// metadata assert (a no-op) does not seal the group: it moves after the call.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      -> (!torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>)
// CHECK:         torch.aten.add.Tensor
// CHECK:         torch.aten.mul.Scalar
// CHECK-LABEL: func.func private @fused_1(
// CHECK-SAME:      %arg0: !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[4,4],f32>
// CHECK-NEXT:    torch.aten.relu %arg0
// CHECK-LABEL: func.func @main
// CHECK:         %[[H:.*]]:2 = call @fused_0(%arg0, %arg1)
// CHECK-NEXT:    torch.operator "torch.aten._assert_tensor_metadata"(%[[H]]#0
// CHECK-NEXT:    %[[MM:.*]] = torch.aten.mm %[[H]]#0, %arg1
// CHECK-NEXT:    %[[R:.*]] = call @fused_1(%[[MM]])
// CHECK-NEXT:    return %[[R]], %[[H]]#1
func.func @main(%x: !torch.vtensor<[4,4],f32>, %w: !torch.vtensor<[4,4],f32>) -> (!torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>) {
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %h = torch.aten.add.Tensor %x, %w, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.int -> !torch.vtensor<[4,4],f32>
  %none = torch.constant.none {pygraph.class = "scalar"}
  torch.operator "torch.aten._assert_tensor_metadata"(%h, %none) {pygraph.class = "nop"} : (!torch.vtensor<[4,4],f32>, !torch.none) -> ()
  %mm = torch.aten.mm %h, %w {pygraph.class = "library"} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %z = torch.aten.mul.Scalar %h, %int2 {pygraph.class = "pointwise"} : !torch.vtensor<[4,4],f32>, !torch.int -> !torch.vtensor<[4,4],f32>
  %r = torch.aten.relu %mm {pygraph.class = "pointwise"} : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  return %r, %z : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>
}

// -----

// A value that only a metadata assert reads outside its group is no output: the assert goes. Here the
// piece of a cat computed in the cat's kernel (LongT5's position bias after `.type(dtype)`), which the
// kernel could not write (its shape is the piece's, not the kernel's).
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      -> !torch.vtensor<[2,7],f32> attributes {pygraph.fused}
// CHECK:         torch.aten.add.Tensor
// CHECK:         torch.aten.cat
// CHECK-LABEL: func.func @main
// CHECK-NOT:     _assert_tensor_metadata
// CHECK:         %[[R:.*]] = call @fused_0(%arg0, %arg1, %arg2)
// CHECK-NEXT:    return %[[R]]
func.func @main(%x: !torch.vtensor<[2,3],f32>, %y: !torch.vtensor<[1,3],f32>, %z: !torch.vtensor<[2,4],f32>) -> !torch.vtensor<[2,7],f32> {
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %s = torch.aten.add.Tensor %x, %y, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[2,3],f32>, !torch.vtensor<[1,3],f32>, !torch.int -> !torch.vtensor<[2,3],f32>
  %none = torch.constant.none {pygraph.class = "scalar"}
  torch.operator "torch.aten._assert_tensor_metadata"(%s, %none) {pygraph.class = "nop"} : (!torch.vtensor<[2,3],f32>, !torch.none) -> ()
  %list = torch.prim.ListConstruct %s, %z {pygraph.class = "scalar"} : (!torch.vtensor<[2,3],f32>, !torch.vtensor<[2,4],f32>) -> !torch.list<vtensor>
  %int1_0 = torch.constant.int 1 {pygraph.class = "scalar"}
  %cat = torch.aten.cat %list, %int1_0 {pygraph.class = "concat"} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[2,7],f32>
  return %cat : !torch.vtensor<[2,7],f32>
}

// -----

// Groups need one iteration space: the [4] op cannot join the [2,4] group that feeds it through a view.
// An op making a tensor on another device than the model's is left to ATen (class "library").
// A tensor made from a constant (NumToTensor) is cloned into the body, not passed in.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      %arg0: !torch.vtensor<[2,4],f32>) -> !torch.vtensor<[2,4],f32>
// CHECK:         %[[T:.*]] = torch.prim.NumToTensor.Scalar
// CHECK-NEXT:    %[[MODE:.*]] = torch.constant.str "floor"
// CHECK-NEXT:    torch.aten.div.Tensor_mode %arg0, %[[T]], %[[MODE]]
// CHECK-LABEL: func.func private @fused_1(
// CHECK-SAME:      %arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
// CHECK-NEXT:    torch.aten.neg %arg0
// CHECK-LABEL: func.func @main
// CHECK:         %[[D:.*]] = call @fused_0(%arg0)
// CHECK:         %[[ROW:.*]] = torch.aten.select.int %[[D]]
// CHECK-NEXT:    call @fused_1(%[[ROW]])
// CHECK:         torch.aten.ones {{.*}}pygraph.class = "library"
func.func @main(%x: !torch.vtensor<[2,4],f32> {pygraph.device = "cuda"}) -> (!torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>) {
  %int3 = torch.constant.int 3 {pygraph.class = "scalar"}
  %three = torch.prim.NumToTensor.Scalar %int3 {pygraph.class = "constant"} : !torch.int -> !torch.vtensor<[],si64>
  %floor = torch.constant.str "floor" {pygraph.class = "scalar"}
  %d = torch.aten.div.Tensor_mode %x, %three, %floor {pygraph.class = "pointwise"} : !torch.vtensor<[2,4],f32>, !torch.vtensor<[],si64>, !torch.str -> !torch.vtensor<[2,4],f32>
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %row = torch.aten.select.int %d, %int0, %int0 {pygraph.class = "view"} : !torch.vtensor<[2,4],f32>, !torch.int, !torch.int -> !torch.vtensor<[4],f32>
  %n = torch.aten.neg %row {pygraph.class = "pointwise"} : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  %int4 = torch.constant.int 4 {pygraph.class = "scalar"}
  %size = torch.prim.ListConstruct %int4 {pygraph.class = "scalar"} : (!torch.int) -> !torch.list<int>
  %none = torch.constant.none {pygraph.class = "scalar"}
  %cpu = torch.constant.device "cpu" {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %ones = torch.aten.ones %size, %none, %none, %cpu, %false {pygraph.class = "pointwise"} : !torch.list<int>, !torch.none, !torch.none, !torch.Device, !torch.bool -> !torch.vtensor<[4],f32>
  return %n, %ones : !torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>
}

// -----

// Nothing pointwise: the function is unchanged.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[MM:.*]] = torch.aten.mm %arg0, %arg0
// CHECK-NEXT:    return %[[MM]]
func.func @main(%x: !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[4,4],f32> {
  %mm = torch.aten.mm %x, %x {pygraph.class = "library"} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  return %mm : !torch.vtensor<[4,4],f32>
}

// -----

// relu(a) and sigmoid(b) start two groups that merge into the add consuming both; neg(a) joins as a
// sibling (it reads the same input). The mul needs the mm's result, made after the group's first
// outside use, so it cannot move up into the group's call: it gets a group of its own.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      %arg0: !torch.vtensor<[4,4],f32>, %arg1: !torch.vtensor<[4,4],f32>) -> (!torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>)
// CHECK-NEXT:    %[[R:.*]] = torch.aten.relu %arg0
// CHECK-NEXT:    %[[S:.*]] = torch.aten.sigmoid %arg1
// CHECK:         %[[E:.*]] = torch.aten.add.Tensor %[[R]], %[[S]]
// CHECK-NEXT:    %[[N:.*]] = torch.aten.neg %arg0
// CHECK-NEXT:    return %[[E]], %[[N]]
// CHECK-LABEL: func.func private @fused_1(
// CHECK-NEXT:    torch.aten.mul.Tensor %arg0, %arg1
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[G:.*]]:2 = call @fused_0(%arg0, %arg1)
// CHECK-NEXT:    %[[MM:.*]] = torch.aten.mm %[[G]]#0, %arg2
// CHECK-NEXT:    %[[P:.*]] = call @fused_1(%[[G]]#1, %[[MM]])
// CHECK-NEXT:    return %[[P]]
// ONE-LABEL:   func.func @main
// ONE-COUNT-5:   call @fused_
func.func @main(%a: !torch.vtensor<[4,4],f32>, %b: !torch.vtensor<[4,4],f32>, %w: !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[4,4],f32> {
  %c = torch.aten.relu %a {pygraph.class = "pointwise"} : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %d = torch.aten.sigmoid %b {pygraph.class = "pointwise"} : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %e = torch.aten.add.Tensor %c, %d, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.int -> !torch.vtensor<[4,4],f32>
  %f = torch.aten.neg %a {pygraph.class = "pointwise"} : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %m = torch.aten.mm %e, %w {pygraph.class = "library"} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %g = torch.aten.mul.Tensor %f, %m {pygraph.class = "pointwise"} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  return %g : !torch.vtensor<[4,4],f32>
}

// -----

// Layer norm after a bias and a residual add (BERT's output block): one group, a reduction kernel.
// With max-row=4, rows of 8 are too long for a kernel: the layer norm is left to ATen.
// LONGROW-LABEL: func.func @main
// LONGROW:       call @fused_0(%arg0, %arg1, %arg2)
// LONGROW:       torch.aten.layer_norm {{.*}} {pygraph.class = "library"}
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      -> !torch.vtensor<[4,8],f32> attributes {pygraph.fused}
// CHECK:         %[[B:.*]] = torch.aten.add.Tensor %arg0, %arg1
// CHECK:         %[[R:.*]] = torch.aten.add.Tensor %[[B]], %arg2
// CHECK:         %[[N:.*]] = torch.aten.layer_norm %[[R]], %{{.*}}, %arg3, %arg4
// CHECK-NEXT:    return %[[N]]
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[K:.*]] = call @fused_0(%arg0, %arg1, %arg2, %arg3, %arg4) {pygraph.class = "kernel", pygraph.layouts = [#pygraph.layout<[4, 8], [8, 1], 0 : i64, f32>]}
// CHECK-NEXT:    return %[[K]]
func.func @main(%arg0: !torch.vtensor<[4,8],f32>, %arg1: !torch.vtensor<[8],f32>, %arg2: !torch.vtensor<[4,8],f32>, %arg3: !torch.vtensor<[8],f32>, %arg4: !torch.vtensor<[8],f32>) -> !torch.vtensor<[4,8],f32> {
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %0 = torch.aten.add.Tensor %arg0, %arg1, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[4,8],f32>, !torch.vtensor<[8],f32>, !torch.int -> !torch.vtensor<[4,8],f32>
  %int1_0 = torch.constant.int 1 {pygraph.class = "scalar"}
  %1 = torch.aten.add.Tensor %0, %arg2, %int1_0 {pygraph.class = "pointwise"} : !torch.vtensor<[4,8],f32>, !torch.vtensor<[4,8],f32>, !torch.int -> !torch.vtensor<[4,8],f32>
  %int8 = torch.constant.int 8 {pygraph.class = "scalar"}
  %2 = torch.prim.ListConstruct %int8 {pygraph.class = "scalar"} : (!torch.int) -> !torch.list<int>
  %float1.000000e-05 = torch.constant.float 1.000000e-05 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %3 = torch.aten.layer_norm %1, %2, %arg3, %arg4, %float1.000000e-05, %false {pygraph.class = "reduction"} : !torch.vtensor<[4,8],f32>, !torch.list<int>, !torch.vtensor<[8],f32>, !torch.vtensor<[8],f32>, !torch.float, !torch.bool -> !torch.vtensor<[4,8],f32>
  return %3 : !torch.vtensor<[4,8],f32>
}

// -----

// RMS norm as Hugging Face writes it: the mean keeps its dim, so the ops on [4, 1] compute one value per
// row of the group's [4, 8] space (eps, rsqrt) and the ops after it are per element again. One group.
// CHECK-LABEL: func.func private @fused_0(
// CHECK:         torch.aten.pow.Tensor_Scalar %arg0
// CHECK:         torch.aten.mean.dim
// CHECK:         torch.aten.add.Scalar
// CHECK-NEXT:    torch.aten.rsqrt
// CHECK-NEXT:    torch.aten.mul.Tensor %arg0
// CHECK-NEXT:    torch.aten.mul.Tensor %arg1
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    call @fused_0(%arg0, %arg1)
// CHECK-NEXT:    return
func.func @main(%arg0: !torch.vtensor<[4,8],f32>, %arg1: !torch.vtensor<[8],f32>) -> !torch.vtensor<[4,8],f32> {
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %0 = torch.aten.pow.Tensor_Scalar %arg0, %int2 {pygraph.class = "pointwise"} : !torch.vtensor<[4,8],f32>, !torch.int -> !torch.vtensor<[4,8],f32>
  %int-1 = torch.constant.int -1 {pygraph.class = "scalar"}
  %1 = torch.prim.ListConstruct %int-1 {pygraph.class = "scalar"} : (!torch.int) -> !torch.list<int>
  %true = torch.constant.bool true {pygraph.class = "scalar"}
  %none = torch.constant.none {pygraph.class = "scalar"}
  %2 = torch.aten.mean.dim %0, %1, %true, %none {pygraph.class = "reduction"} : !torch.vtensor<[4,8],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[4,1],f32>
  %float9.999990e-07 = torch.constant.float 9.9999999999999995E-7 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %3 = torch.aten.add.Scalar %2, %float9.999990e-07, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[4,1],f32>, !torch.float, !torch.int -> !torch.vtensor<[4,1],f32>
  %4 = torch.aten.rsqrt %3 {pygraph.class = "pointwise"} : !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,1],f32>
  %5 = torch.aten.mul.Tensor %arg0, %4 {pygraph.class = "pointwise"} : !torch.vtensor<[4,8],f32>, !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,8],f32>
  %6 = torch.aten.mul.Tensor %arg1, %5 {pygraph.class = "pointwise"} : !torch.vtensor<[8],f32>, !torch.vtensor<[4,8],f32> -> !torch.vtensor<[4,8],f32>
  return %6 : !torch.vtensor<[4,8],f32>
}

// -----

// A sum over the rows (dim 0) of a softmax over the columns reduces other dims: a group of its own. The
// sum over dim -1 reads the softmax's input and reduces the same dims, so it joins its group as a
// sibling; its result has no reduced dim (keepdim false), so the add reading it starts a new group.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      -> (!torch.vtensor<[4,8],f32>, !torch.vtensor<[4],f32>)
// CHECK:         torch.aten.softmax.int %arg0
// CHECK:         torch.aten.sum.dim_IntList %arg0
// CHECK-LABEL: func.func private @fused_1(
// CHECK:         torch.aten.sum.dim_IntList %arg0
// CHECK-LABEL: func.func private @fused_2(
// CHECK:         torch.aten.add.Scalar %arg0
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[S:.*]]:2 = call @fused_0(%arg0)
// CHECK-NEXT:    %[[C:.*]] = call @fused_1(%[[S]]#0)
// CHECK-NEXT:    %[[A:.*]] = call @fused_2(%[[S]]#1)
// CHECK-NEXT:    return %[[C]], %[[A]]
func.func @main(%arg0: !torch.vtensor<[4,8],f32>) -> (!torch.vtensor<[8],f32>, !torch.vtensor<[4],f32>) {
  %int-1 = torch.constant.int -1 {pygraph.class = "scalar"}
  %none = torch.constant.none {pygraph.class = "scalar"}
  %0 = torch.aten.softmax.int %arg0, %int-1, %none {pygraph.class = "reduction"} : !torch.vtensor<[4,8],f32>, !torch.int, !torch.none -> !torch.vtensor<[4,8],f32>
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %1 = torch.prim.ListConstruct %int0 {pygraph.class = "scalar"} : (!torch.int) -> !torch.list<int>
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %none_0 = torch.constant.none {pygraph.class = "scalar"}
  %2 = torch.aten.sum.dim_IntList %0, %1, %false, %none_0 {pygraph.class = "reduction"} : !torch.vtensor<[4,8],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[8],f32>
  %int-1_1 = torch.constant.int -1 {pygraph.class = "scalar"}
  %3 = torch.prim.ListConstruct %int-1_1 {pygraph.class = "scalar"} : (!torch.int) -> !torch.list<int>
  %false_2 = torch.constant.bool false {pygraph.class = "scalar"}
  %none_3 = torch.constant.none {pygraph.class = "scalar"}
  %4 = torch.aten.sum.dim_IntList %arg0, %3, %false_2, %none_3 {pygraph.class = "reduction"} : !torch.vtensor<[4,8],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[4],f32>
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %int1_4 = torch.constant.int 1 {pygraph.class = "scalar"}
  %5 = torch.aten.add.Scalar %4, %int1, %int1_4 {pygraph.class = "pointwise"} : !torch.vtensor<[4],f32>, !torch.int, !torch.int -> !torch.vtensor<[4],f32>
  return %2, %5 : !torch.vtensor<[8],f32>, !torch.vtensor<[4],f32>
}

// -----

// Integer reductions are left to ATen (class "library"); float ones get a kernel.
// CHECK-LABEL: func.func private @fused_0(
// CHECK:         torch.aten.sum.dim_IntList %arg0
// CHECK-LABEL: func.func @main
// CHECK:         call @fused_0(%arg0)
// CHECK:         torch.aten.sum.dim_IntList %arg1, {{.*}} {pygraph.class = "library"}
func.func @main(%arg0: !torch.vtensor<[4,8],f32>, %arg1: !torch.vtensor<[4,8],si64>) -> (!torch.vtensor<[4],f32>, !torch.vtensor<[4],si64>) {
  %int-1 = torch.constant.int -1 {pygraph.class = "scalar"}
  %0 = torch.prim.ListConstruct %int-1 {pygraph.class = "scalar"} : (!torch.int) -> !torch.list<int>
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %none = torch.constant.none {pygraph.class = "scalar"}
  %1 = torch.aten.sum.dim_IntList %arg0, %0, %false, %none {pygraph.class = "reduction"} : !torch.vtensor<[4,8],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[4],f32>
  %int-1_0 = torch.constant.int -1 {pygraph.class = "scalar"}
  %2 = torch.prim.ListConstruct %int-1_0 {pygraph.class = "scalar"} : (!torch.int) -> !torch.list<int>
  %false_1 = torch.constant.bool false {pygraph.class = "scalar"}
  %none_2 = torch.constant.none {pygraph.class = "scalar"}
  %3 = torch.aten.sum.dim_IntList %arg1, %2, %false_1, %none_2 {pygraph.class = "reduction"} : !torch.vtensor<[4,8],si64>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[4],si64>
  return %1, %3 : !torch.vtensor<[4],f32>, !torch.vtensor<[4],si64>
}

// -----

// A squeeze-excitation gate: hardsigmoid(s + b) on [1, 4, 1, 1] is read only by x * gate on [1, 4, 3, 3].
// Its two ops are recomputed per element in the multiply's kernel instead of being a kernel of their
// own. The second gate is also returned, so it stays a group (and a kernel) of its own.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      -> !torch.vtensor<[1,4,3,3],f32>
// CHECK:         torch.aten.add.Tensor %arg0, %arg1
// CHECK-NEXT:    torch.aten.hardsigmoid
// CHECK-NEXT:    torch.aten.mul.Tensor %arg2
// CHECK-LABEL: func.func private @fused_1(
// CHECK-SAME:      -> !torch.vtensor<[1,4,1,1],f32>
// CHECK-LABEL: func.func private @fused_2(
// CHECK-SAME:      -> !torch.vtensor<[1,4,3,3],f32>
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[Y:.*]] = call @fused_0(%arg0, %arg1, %arg2)
// CHECK-NEXT:    torch.aten.mm
// CHECK-NEXT:    %[[G:.*]] = call @fused_1(%arg3, %arg4)
// CHECK-NEXT:    %[[Z:.*]] = call @fused_2(%arg5, %[[G]])
// CHECK-NEXT:    return %[[Y]], %[[Z]], %[[G]]
func.func @main(%s: !torch.vtensor<[1,4,1,1],f32>, %b: !torch.vtensor<[4,1,1],f32>, %x: !torch.vtensor<[1,4,3,3],f32>, %s2: !torch.vtensor<[1,4,1,1],f32>, %b2: !torch.vtensor<[4,1,1],f32>, %x2: !torch.vtensor<[1,4,3,3],f32>) -> (!torch.vtensor<[1,4,3,3],f32>, !torch.vtensor<[1,4,3,3],f32>, !torch.vtensor<[1,4,1,1],f32>) {
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %0 = torch.aten.add.Tensor %s, %b, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[1,4,1,1],f32>, !torch.vtensor<[4,1,1],f32>, !torch.int -> !torch.vtensor<[1,4,1,1],f32>
  %1 = torch.aten.hardsigmoid %0 {pygraph.class = "pointwise"} : !torch.vtensor<[1,4,1,1],f32> -> !torch.vtensor<[1,4,1,1],f32>
  %2 = torch.aten.mul.Tensor %x, %1 {pygraph.class = "pointwise"} : !torch.vtensor<[1,4,3,3],f32>, !torch.vtensor<[1,4,1,1],f32> -> !torch.vtensor<[1,4,3,3],f32>
  %3 = torch.aten.mm %2, %2 {pygraph.class = "library"} : !torch.vtensor<[1,4,3,3],f32>, !torch.vtensor<[1,4,3,3],f32> -> !torch.vtensor<[1,4,3,3],f32>
  %4 = torch.aten.add.Tensor %s2, %b2, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[1,4,1,1],f32>, !torch.vtensor<[4,1,1],f32>, !torch.int -> !torch.vtensor<[1,4,1,1],f32>
  %5 = torch.aten.hardsigmoid %4 {pygraph.class = "pointwise"} : !torch.vtensor<[1,4,1,1],f32> -> !torch.vtensor<[1,4,1,1],f32>
  %6 = torch.aten.mul.Tensor %x2, %5 {pygraph.class = "pointwise"} : !torch.vtensor<[1,4,3,3],f32>, !torch.vtensor<[1,4,1,1],f32> -> !torch.vtensor<[1,4,3,3],f32>
  return %2, %6, %5 : !torch.vtensor<[1,4,3,3],f32>, !torch.vtensor<[1,4,3,3],f32>, !torch.vtensor<[1,4,1,1],f32>
}

// -----

// An attention mask combined on [2, 1, 1, 5] and read through an expand by `where` on [2, 3, 5, 5], and a
// bias scaled on [1, 5], reshaped to [1, 1, 1, 5] (leading 1s) and expanded into an add: each small group
// is recomputed in its reader's kernel, whose function reads the small values where the views were. The
// metadata assert on the scaled bias (a no-op) goes with it.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      %arg0: !torch.vtensor<[2,1,1,5],i1>, %arg1: !torch.vtensor<[2,1,1,5],i1>, %arg2: !torch.vtensor<[2,3,5,5],f32>) -> !torch.vtensor<[2,3,5,5],f32>
// CHECK-NEXT:    %[[AND:.*]] = torch.aten.__and__.Tensor %arg0, %arg1
// CHECK-NEXT:    torch.constant.float
// CHECK-NEXT:    torch.aten.where.ScalarOther %[[AND]], %arg2
// CHECK-LABEL: func.func private @fused_1(
// CHECK-SAME:      %arg0: !torch.vtensor<[1,5],f32>, %arg1: !torch.vtensor<[2,3,5,5],f32>) -> !torch.vtensor<[2,3,5,5],f32>
// CHECK-NEXT:    torch.constant.int 2
// CHECK-NEXT:    %[[M:.*]] = torch.aten.mul.Scalar %arg0
// CHECK-NEXT:    torch.constant.int 1
// CHECK-NEXT:    torch.aten.add.Tensor %arg1, %[[M]]
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    call @fused_0(%arg0, %arg1, %arg2)
// CHECK-NEXT:    call @fused_1(%arg3, %arg4)
// CHECK-NEXT:    return
func.func @main(%a: !torch.vtensor<[2,1,1,5],i1>, %b: !torch.vtensor<[2,1,1,5],i1>, %s: !torch.vtensor<[2,3,5,5],f32>, %bias: !torch.vtensor<[1,5],f32>, %x: !torch.vtensor<[2,3,5,5],f32>) -> (!torch.vtensor<[2,3,5,5],f32>, !torch.vtensor<[2,3,5,5],f32>) {
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %int3 = torch.constant.int 3 {pygraph.class = "scalar"}
  %int5 = torch.constant.int 5 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %ninf = torch.constant.float 0xFFF0000000000000 {pygraph.class = "scalar"}
  %sizes = torch.prim.ListConstruct %int2, %int3, %int5, %int5 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.__and__.Tensor %a, %b {pygraph.class = "pointwise"} : !torch.vtensor<[2,1,1,5],i1>, !torch.vtensor<[2,1,1,5],i1> -> !torch.vtensor<[2,1,1,5],i1>
  %1 = torch.aten.expand %0, %sizes, %false {pygraph.class = "view"} : !torch.vtensor<[2,1,1,5],i1>, !torch.list<int>, !torch.bool -> !torch.vtensor<[2,3,5,5],i1>
  %2 = torch.aten.where.ScalarOther %1, %s, %ninf {pygraph.class = "pointwise"} : !torch.vtensor<[2,3,5,5],i1>, !torch.vtensor<[2,3,5,5],f32>, !torch.float -> !torch.vtensor<[2,3,5,5],f32>
  %3 = torch.aten.mul.Scalar %bias, %int2 {pygraph.class = "pointwise"} : !torch.vtensor<[1,5],f32>, !torch.int -> !torch.vtensor<[1,5],f32>
  %none = torch.constant.none {pygraph.class = "scalar"}
  %int6 = torch.constant.int 6 {pygraph.class = "scalar"}
  %cpu = torch.constant.device "cpu" {pygraph.class = "scalar"}
  torch.aten._assert_tensor_metadata %3, %none, %none, %int6, %cpu, %none {pygraph.class = "nop"} : !torch.vtensor<[1,5],f32>, !torch.none, !torch.none, !torch.int, !torch.Device, !torch.none
  %shape = torch.prim.ListConstruct %int1, %int1, %int1, %int5 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.aten.view %3, %shape {pygraph.class = "view"} : !torch.vtensor<[1,5],f32>, !torch.list<int> -> !torch.vtensor<[1,1,1,5],f32>
  %5 = torch.aten.expand %4, %sizes, %false {pygraph.class = "view"} : !torch.vtensor<[1,1,1,5],f32>, !torch.list<int>, !torch.bool -> !torch.vtensor<[2,3,5,5],f32>
  %6 = torch.aten.add.Tensor %x, %5, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[2,3,5,5],f32>, !torch.vtensor<[2,3,5,5],f32>, !torch.int -> !torch.vtensor<[2,3,5,5],f32>
  return %2, %6 : !torch.vtensor<[2,3,5,5],f32>, !torch.vtensor<[2,3,5,5],f32>
}

// -----

// Left as two kernels each: an expanded value read by a reduction (the sum's operand sets the shape its
// kernel walks), one also read by a library op, and one unsqueezed in the middle (not a broadcast: [2, 5]
// against [2, 3, 5] would align the 2 with the 3).
// CHECK-LABEL: func.func @main
// CHECK:         %[[NEG:.*]] = call @fused_0(%arg0)
// CHECK-NEXT:    %[[N:.*]] = torch.aten.expand %[[NEG]]
// CHECK-NEXT:    call @fused_1(%[[N]])
// CHECK-NEXT:    %[[EXP:.*]] = call @fused_2(%arg1)
// CHECK-NEXT:    %[[E:.*]] = torch.aten.expand %[[EXP]]
// CHECK-NEXT:    call @fused_3(%arg3, %[[E]])
// CHECK-NEXT:    torch.aten.bmm %[[E]]
// CHECK-NEXT:    %[[SIG:.*]] = call @fused_4(%arg2)
// CHECK-NEXT:    %[[U:.*]] = torch.aten.unsqueeze %[[SIG]]
// CHECK-NEXT:    %[[S:.*]] = torch.aten.expand %[[U]]
// CHECK-NEXT:    call @fused_5(%arg4, %[[S]])
func.func @main(%a: !torch.vtensor<[2,1,5],f32>, %e: !torch.vtensor<[2,1,5],f32>, %c: !torch.vtensor<[2,5],f32>, %x: !torch.vtensor<[2,3,5],f32>, %y: !torch.vtensor<[2,3,5],f32>) -> (!torch.vtensor<[2,3],f32>, !torch.vtensor<[2,3,5],f32>, !torch.vtensor<[2,3,5],f32>, !torch.vtensor<[2,3,5],f32>) {
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %int3 = torch.constant.int 3 {pygraph.class = "scalar"}
  %int5 = torch.constant.int 5 {pygraph.class = "scalar"}
  %int-1 = torch.constant.int -1 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %none = torch.constant.none {pygraph.class = "scalar"}
  %sizes = torch.prim.ListConstruct %int2, %int3, %int5 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %last = torch.prim.ListConstruct %int-1 {pygraph.class = "scalar"} : (!torch.int) -> !torch.list<int>
  %0 = torch.aten.neg %a {pygraph.class = "pointwise"} : !torch.vtensor<[2,1,5],f32> -> !torch.vtensor<[2,1,5],f32>
  %1 = torch.aten.expand %0, %sizes, %false {pygraph.class = "view"} : !torch.vtensor<[2,1,5],f32>, !torch.list<int>, !torch.bool -> !torch.vtensor<[2,3,5],f32>
  %2 = torch.aten.sum.dim_IntList %1, %last, %false, %none {pygraph.class = "reduction"} : !torch.vtensor<[2,3,5],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[2,3],f32>
  %3 = torch.aten.exp %e {pygraph.class = "pointwise"} : !torch.vtensor<[2,1,5],f32> -> !torch.vtensor<[2,1,5],f32>
  %4 = torch.aten.expand %3, %sizes, %false {pygraph.class = "view"} : !torch.vtensor<[2,1,5],f32>, !torch.list<int>, !torch.bool -> !torch.vtensor<[2,3,5],f32>
  %5 = torch.aten.mul.Tensor %x, %4 {pygraph.class = "pointwise"} : !torch.vtensor<[2,3,5],f32>, !torch.vtensor<[2,3,5],f32> -> !torch.vtensor<[2,3,5],f32>
  %6 = torch.aten.bmm %4, %x {pygraph.class = "library"} : !torch.vtensor<[2,3,5],f32>, !torch.vtensor<[2,3,5],f32> -> !torch.vtensor<[2,3,5],f32>
  %7 = torch.aten.sigmoid %c {pygraph.class = "pointwise"} : !torch.vtensor<[2,5],f32> -> !torch.vtensor<[2,5],f32>
  %8 = torch.aten.unsqueeze %7, %int1 {pygraph.class = "view"} : !torch.vtensor<[2,5],f32>, !torch.int -> !torch.vtensor<[2,1,5],f32>
  %9 = torch.aten.expand %8, %sizes, %false {pygraph.class = "view"} : !torch.vtensor<[2,1,5],f32>, !torch.list<int>, !torch.bool -> !torch.vtensor<[2,3,5],f32>
  %10 = torch.aten.sub.Tensor %y, %9, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[2,3,5],f32>, !torch.vtensor<[2,3,5],f32>, !torch.int -> !torch.vtensor<[2,3,5],f32>
  return %2, %5, %6, %10 : !torch.vtensor<[2,3],f32>, !torch.vtensor<[2,3,5],f32>, !torch.vtensor<[2,3,5],f32>, !torch.vtensor<[2,3,5],f32>
}

// -----

// A concatenation joins the group of its consumers (batch norm's scale and shift, then relu in DenseNet):
// its pieces are the kernel's inputs and their list is cloned into the body, so the concatenated tensor
// is never written; the list left in @main is erased with the cat.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      %arg0: !torch.vtensor<[2,3,5],f32>, %arg1: !torch.vtensor<[2,4,5],f32>, %arg2: !torch.vtensor<[1,7,1],f32>) -> !torch.vtensor<[2,7,5],f32>
// CHECK-NEXT:    %[[LIST:.*]] = torch.prim.ListConstruct %arg0, %arg1
// CHECK-NEXT:    %[[DIM:.*]] = torch.constant.int 1
// CHECK-NEXT:    %[[CAT:.*]] = torch.aten.cat %[[LIST]], %[[DIM]]
// CHECK-NEXT:    %[[SCALED:.*]] = torch.aten.mul.Tensor %[[CAT]], %arg2
// CHECK-NEXT:    %[[R:.*]] = torch.aten.relu %[[SCALED]]
// CHECK-NEXT:    return %[[R]]
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[OUT:.*]] = call @fused_0(%arg0, %arg1, %arg2) {pygraph.class = "kernel"
// CHECK-NEXT:    return %[[OUT]]
func.func @main(%a: !torch.vtensor<[2,3,5],f32>, %b: !torch.vtensor<[2,4,5],f32>, %scale: !torch.vtensor<[1,7,1],f32>) -> !torch.vtensor<[2,7,5],f32> {
  %list = torch.prim.ListConstruct %a, %b {pygraph.class = "scalar"} : (!torch.vtensor<[2,3,5],f32>, !torch.vtensor<[2,4,5],f32>) -> !torch.list<vtensor>
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %cat = torch.aten.cat %list, %int1 {pygraph.class = "concat"} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[2,7,5],f32>
  %0 = torch.aten.mul.Tensor %cat, %scale {pygraph.class = "pointwise"} : !torch.vtensor<[2,7,5],f32>, !torch.vtensor<[1,7,1],f32> -> !torch.vtensor<[2,7,5],f32>
  %1 = torch.aten.relu %0 {pygraph.class = "pointwise"} : !torch.vtensor<[2,7,5],f32> -> !torch.vtensor<[2,7,5],f32>
  return %1 : !torch.vtensor<[2,7,5],f32>
}

// -----

// Unchanged: a reduction does not join a group holding a concatenation (only pointwise kernels load
// pieces), so the cat is a kernel of its own and softmax another; a cat with an empty piece (which eager
// skips) stays an ATen call.
// CHECK-LABEL: func.func private @fused_0(
// CHECK:         torch.aten.cat
// CHECK-NOT:     torch.aten._softmax
// CHECK:         return
// CHECK-LABEL: func.func private @fused_1(
// CHECK-NEXT:    torch.constant.int
// CHECK-NEXT:    torch.constant.bool
// CHECK-NEXT:    torch.aten._softmax %arg0
// CHECK-LABEL: func.func @main
// CHECK:         %[[CAT:.*]] = call @fused_0(%arg0, %arg1)
// CHECK-NEXT:    %[[SOFT:.*]] = call @fused_1(%[[CAT]])
// CHECK:         torch.aten.cat %{{.*}}, %{{.*}} {pygraph.class = "library"}
func.func @main(%a: !torch.vtensor<[4,3],f32>, %b: !torch.vtensor<[4,5],f32>, %empty: !torch.vtensor<[4,0],f32>) -> (!torch.vtensor<[4,8],f32>, !torch.vtensor<[4,3],f32>) {
  %list = torch.prim.ListConstruct %a, %b {pygraph.class = "scalar"} : (!torch.vtensor<[4,3],f32>, !torch.vtensor<[4,5],f32>) -> !torch.list<vtensor>
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %cat = torch.aten.cat %list, %int1 {pygraph.class = "concat"} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[4,8],f32>
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %soft = torch.aten._softmax %cat, %int1, %false {pygraph.class = "reduction"} : !torch.vtensor<[4,8],f32>, !torch.int, !torch.bool -> !torch.vtensor<[4,8],f32>
  %one = torch.prim.ListConstruct %a, %empty {pygraph.class = "scalar"} : (!torch.vtensor<[4,3],f32>, !torch.vtensor<[4,0],f32>) -> !torch.list<vtensor>
  %copy = torch.aten.cat %one, %int1 {pygraph.class = "concat"} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[4,3],f32>
  return %soft, %copy : !torch.vtensor<[4,8],f32>, !torch.vtensor<[4,3],f32>
}

// -----

// An attention routed to the generated kernel is a group of its own: the mask computed just before it
// (a broadcast shape it could recompute) and the relu of its result stay out of its function.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      %arg0: !torch.vtensor<[2,1,1,32],f32>) -> !torch.vtensor<[2,1,1,32],f32>
// CHECK-NEXT:    torch.aten.neg %arg0
// CHECK-LABEL: func.func private @fused_1(
// CHECK-SAME:      %arg0: !torch.vtensor<[2,4,32,16],f32>, %arg1: !torch.vtensor<[2,1,1,32],f32>) -> !torch.vtensor<[2,4,32,16],f32>
// CHECK:         torch.aten.scaled_dot_product_attention %arg0, %arg0, %arg0, %arg1, {{.*}}pygraph.attention_kernel = "tf32", pygraph.class = "attention"
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @fused_2(
// CHECK-NEXT:    torch.aten.relu %arg0
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[M:.*]] = call @fused_0(%arg1)
// CHECK-NEXT:    %[[A:.*]] = call @fused_1(%arg0, %[[M]]) {pygraph.class = "kernel", pygraph.layouts = [#pygraph.layout<[2, 4, 32, 16], [2048, 16, 64, 1], 0 : i64, f32>]}
// CHECK-NEXT:    call @fused_2(%[[A]])
func.func @main(%q: !torch.vtensor<[2,4,32,16],f32>, %m: !torch.vtensor<[2,1,1,32],f32>) -> !torch.vtensor<[2,4,32,16],f32> {
  %float0 = torch.constant.float 0.000000e+00 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %none = torch.constant.none {pygraph.class = "scalar"}
  %mask = torch.aten.neg %m {pygraph.class = "pointwise"} : !torch.vtensor<[2,1,1,32],f32> -> !torch.vtensor<[2,1,1,32],f32>
  %0 = torch.aten.scaled_dot_product_attention %q, %q, %q, %mask, %float0, %false, %none, %false {pygraph.attention_kernel = "tf32", pygraph.class = "attention", pygraph.layouts = [#pygraph.layout<[2, 4, 32, 16], [2048, 16, 64, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,1,1,32],f32>, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,32,16],f32>
  %1 = torch.aten.relu %0 {pygraph.class = "pointwise"} : !torch.vtensor<[2,4,32,16],f32> -> !torch.vtensor<[2,4,32,16],f32>
  return %1 : !torch.vtensor<[2,4,32,16],f32>
}

// -----

// A matmul product joins the one pointwise group reading its result, as the epilogue's source: GELU after
// a linear, and a bias add and residual after `view(mm)` (the reshape joins too). A product whose result a
// reduction reads (layer norm) stays a vendor call: class library, its precision mark dropped.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      %arg0: !torch.vtensor<[4,16],f32>, %arg1: !torch.vtensor<[8,16],f32>, %arg2: !torch.vtensor<[8],f32>) -> !torch.vtensor<[4,8],f32>
// CHECK-NEXT:    %[[P:.*]] = torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "matmul", pygraph.matmul_kernel = "tf32"}
// CHECK:         %[[G:.*]] = torch.aten.gelu %[[P]]
// CHECK-NEXT:    return %[[G]]
// CHECK-LABEL: func.func private @fused_1(
// CHECK-SAME:      %arg0: !torch.vtensor<[4,8],f32>, %arg1: !torch.vtensor<[8,8],f32>, %arg2: !torch.vtensor<[8],f32>, %arg3: !torch.vtensor<[2,2,8],f32>) -> !torch.vtensor<[2,2,8],f32>
// CHECK:         %[[M:.*]] = torch.aten.mm %arg0, %arg1 {pygraph.class = "matmul", pygraph.matmul_kernel = "tf32"}
// CHECK:         %[[V:.*]] = torch.aten.view %[[M]]
// CHECK:         %[[B:.*]] = torch.aten.add.Tensor %[[V]], %arg2
// CHECK:         %[[R:.*]] = torch.aten.add.Tensor %[[B]], %arg3
// CHECK-NEXT:    return %[[R]]
// CHECK-LABEL: func.func @products
// CHECK:         %[[H:.*]] = call @fused_0(%arg0, %arg1, %arg2)
// CHECK:         %[[O:.*]] = call @fused_1(%[[H]], %arg3, %arg2, %arg4)
// CHECK:         %[[L:.*]] = torch.aten.linear %[[O]]{{.*}} {pygraph.class = "library"}
// CHECK:         call @fused_2(%[[L]]
func.func @products(%x: !torch.vtensor<[4,16],f32>, %w1: !torch.vtensor<[8,16],f32>, %b: !torch.vtensor<[8],f32>, %w2: !torch.vtensor<[8,8],f32>, %res: !torch.vtensor<[2,2,8],f32>) -> !torch.vtensor<[2,2,8],f32> {
  %0 = torch.aten.linear %x, %w1, %b {pygraph.class = "matmul", pygraph.matmul_kernel = "tf32"} : !torch.vtensor<[4,16],f32>, !torch.vtensor<[8,16],f32>, !torch.vtensor<[8],f32> -> !torch.vtensor<[4,8],f32>
  %str = torch.constant.str "none" {pygraph.class = "scalar"}
  %1 = torch.aten.gelu %0, %str {pygraph.class = "pointwise"} : !torch.vtensor<[4,8],f32>, !torch.str -> !torch.vtensor<[4,8],f32>
  %2 = torch.aten.mm %1, %w2 {pygraph.class = "matmul", pygraph.matmul_kernel = "tf32"} : !torch.vtensor<[4,8],f32>, !torch.vtensor<[8,8],f32> -> !torch.vtensor<[4,8],f32>
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %int8 = torch.constant.int 8 {pygraph.class = "scalar"}
  %shape = torch.prim.ListConstruct %int2, %int2, %int8 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.aten.view %2, %shape {pygraph.class = "view"} : !torch.vtensor<[4,8],f32>, !torch.list<int> -> !torch.vtensor<[2,2,8],f32>
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %4 = torch.aten.add.Tensor %3, %b, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[2,2,8],f32>, !torch.vtensor<[8],f32>, !torch.int -> !torch.vtensor<[2,2,8],f32>
  %5 = torch.aten.add.Tensor %4, %res, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[2,2,8],f32>, !torch.vtensor<[2,2,8],f32>, !torch.int -> !torch.vtensor<[2,2,8],f32>
  %6 = torch.aten.linear %5, %w2, %b {pygraph.class = "matmul", pygraph.matmul_kernel = "tf32"} : !torch.vtensor<[2,2,8],f32>, !torch.vtensor<[8,8],f32>, !torch.vtensor<[8],f32> -> !torch.vtensor<[2,2,8],f32>
  %int8b = torch.constant.int 8 {pygraph.class = "scalar"}
  %norm = torch.prim.ListConstruct %int8b {pygraph.class = "scalar"} : (!torch.int) -> !torch.list<int>
  %none = torch.constant.none {pygraph.class = "scalar"}
  %eps = torch.constant.float 1.000000e-05 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %7 = torch.aten.layer_norm %6, %norm, %none, %none, %eps, %false {pygraph.class = "reduction"} : !torch.vtensor<[2,2,8],f32>, !torch.list<int>, !torch.none, !torch.none, !torch.float, !torch.bool -> !torch.vtensor<[2,2,8],f32>
  return %7 : !torch.vtensor<[2,2,8],f32>
}

// -----

// A product that no pointwise op reads is a kernel of its own only for few rows of a width cuBLAS writes
// unaligned (10 float32 values a row, 40 bytes); the aligned one (8 values) stays a vendor call.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      %arg0: !torch.vtensor<[4,16],f32>, %arg1: !torch.vtensor<[10,16],f32>, %arg2: !torch.vtensor<[10],f32>) -> !torch.vtensor<[4,10],f32>
// CHECK-NEXT:    %[[P:.*]] = torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "matmul", pygraph.matmul_kernel = "tf32"}
// CHECK-NEXT:    return %[[P]]
// CHECK-LABEL: func.func @lone_products
// CHECK:         %[[O:.*]] = call @fused_0(%arg0, %arg1, %arg2)
// CHECK:         %[[E:.*]] = torch.aten.linear %arg0, %arg3, %none {pygraph.class = "library"}
// CHECK:         return %[[O]], %[[E]]
func.func @lone_products(%x: !torch.vtensor<[4,16],f32>, %w: !torch.vtensor<[10,16],f32>, %b: !torch.vtensor<[10],f32>, %w8: !torch.vtensor<[8,16],f32>) -> (!torch.vtensor<[4,10],f32>, !torch.vtensor<[4,8],f32>) {
  %0 = torch.aten.linear %x, %w, %b {pygraph.class = "matmul", pygraph.matmul_kernel = "tf32"} : !torch.vtensor<[4,16],f32>, !torch.vtensor<[10,16],f32>, !torch.vtensor<[10],f32> -> !torch.vtensor<[4,10],f32>
  %none = torch.constant.none {pygraph.class = "scalar"}
  %1 = torch.aten.linear %x, %w8, %none {pygraph.class = "matmul", pygraph.matmul_kernel = "tf32"} : !torch.vtensor<[4,16],f32>, !torch.vtensor<[8,16],f32>, !torch.none -> !torch.vtensor<[4,8],f32>
  return %0, %1 : !torch.vtensor<[4,10],f32>, !torch.vtensor<[4,8],f32>
}

// -----

// A product of one row takes the group computing its row as its prologue (GELU and layer norm before the
// second linear, which a reduction keeps from being the first's epilogue) and the pointwise group reading
// it as its epilogue (the ReLU after the second: returned, and the third linear's row).
// CHECK-LABEL: func.func private @fused_0(
// CHECK-NEXT:    torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "matvec"}
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @fused_1(
// CHECK:         %[[G:.*]] = torch.aten.gelu %arg0
// CHECK:         %[[N:.*]] = torch.aten.layer_norm %[[G]]
// CHECK:         %[[P:.*]] = torch.aten.linear %[[N]], %arg2, %arg1 {pygraph.class = "matvec"}
// CHECK-NEXT:    %[[R:.*]] = torch.aten.relu %[[P]]
// CHECK-NEXT:    return %[[R]]
// CHECK-LABEL: func.func private @fused_2(
// CHECK-NEXT:    torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "matvec"}
// CHECK-NEXT:    return
// CHECK-LABEL: func.func @rows
// CHECK-NEXT:    %[[A:.*]] = call @fused_0(%arg0, %arg1, %arg2)
// CHECK-NEXT:    %[[R:.*]] = call @fused_1(%[[A]], %arg2, %arg1)
// CHECK-NEXT:    %[[C:.*]] = call @fused_2(%[[R]], %arg1, %arg2)
// CHECK-NEXT:    return %[[C]], %[[R]]
func.func @rows(%x: !torch.vtensor<[1,8],f32>, %w: !torch.vtensor<[8,8],f32>, %b: !torch.vtensor<[8],f32>) -> (!torch.vtensor<[1,8],f32>, !torch.vtensor<[1,8],f32>) {
  %0 = torch.aten.linear %x, %w, %b {pygraph.class = "matvec"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[8,8],f32>, !torch.vtensor<[8],f32> -> !torch.vtensor<[1,8],f32>
  %str = torch.constant.str "none" {pygraph.class = "scalar"}
  %1 = torch.aten.gelu %0, %str {pygraph.class = "pointwise"} : !torch.vtensor<[1,8],f32>, !torch.str -> !torch.vtensor<[1,8],f32>
  %int8 = torch.constant.int 8 {pygraph.class = "scalar"}
  %norm = torch.prim.ListConstruct %int8 {pygraph.class = "scalar"} : (!torch.int) -> !torch.list<int>
  %eps = torch.constant.float 1.000000e-05 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %2 = torch.aten.layer_norm %1, %norm, %b, %b, %eps, %false {pygraph.class = "reduction"} : !torch.vtensor<[1,8],f32>, !torch.list<int>, !torch.vtensor<[8],f32>, !torch.vtensor<[8],f32>, !torch.float, !torch.bool -> !torch.vtensor<[1,8],f32>
  %3 = torch.aten.linear %2, %w, %b {pygraph.class = "matvec"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[8,8],f32>, !torch.vtensor<[8],f32> -> !torch.vtensor<[1,8],f32>
  %4 = torch.aten.relu %3 {pygraph.class = "pointwise"} : !torch.vtensor<[1,8],f32> -> !torch.vtensor<[1,8],f32>
  %5 = torch.aten.linear %4, %w, %b {pygraph.class = "matvec"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[8,8],f32>, !torch.vtensor<[8],f32> -> !torch.vtensor<[1,8],f32>
  return %5, %4 : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,8],f32>
}

// -----

// Products of one row share a kernel (the q, k and v projections), which computes the row in its prologue
// when they alone read it (RMS-norm-like: a mean of squares); a product of another row stays apart.
// CHECK-LABEL: func.func private @fused_0(
// CHECK:         torch.aten.mean.dim
// CHECK:         %[[Q:.*]] = torch.aten.linear %{{.*}}, %arg1, %none {pygraph.class = "matvec"}
// CHECK:         %[[K:.*]] = torch.aten.linear %{{.*}}, %arg2, %none {pygraph.class = "matvec"}
// CHECK:         %[[V:.*]] = torch.aten.linear %{{.*}}, %arg3, %none {pygraph.class = "matvec"}
// CHECK-NEXT:    return %[[Q]], %[[K]], %[[V]]
// CHECK-LABEL: func.func private @fused_1(
// CHECK:         torch.aten.linear %arg0, %arg1, %none {pygraph.class = "matvec"}
// CHECK-NEXT:    return
// CHECK-LABEL: func.func @siblings
// CHECK-NEXT:    %[[R:.*]]:3 = call @fused_0(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT:    %[[O:.*]] = call @fused_1(%[[R]]#0, %arg1)
// CHECK-NEXT:    return %[[O]], %[[R]]#1, %[[R]]#2
func.func @siblings(%x: !torch.vtensor<[1,8],f32>, %wq: !torch.vtensor<[8,8],f32>, %wk: !torch.vtensor<[4,8],f32>, %wv: !torch.vtensor<[4,8],f32>) -> (!torch.vtensor<[1,8],f32>, !torch.vtensor<[1,4],f32>, !torch.vtensor<[1,4],f32>) {
  %sq = torch.aten.mul.Tensor %x, %x {pygraph.class = "pointwise"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,8],f32> -> !torch.vtensor<[1,8],f32>
  %int1 = torch.constant.int -1 {pygraph.class = "scalar"}
  %dims = torch.prim.ListConstruct %int1 {pygraph.class = "scalar"} : (!torch.int) -> !torch.list<int>
  %true = torch.constant.bool true {pygraph.class = "scalar"}
  %none = torch.constant.none {pygraph.class = "scalar"}
  %ms = torch.aten.mean.dim %sq, %dims, %true, %none {pygraph.class = "reduction"} : !torch.vtensor<[1,8],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[1,1],f32>
  %r = torch.aten.rsqrt %ms {pygraph.class = "pointwise"} : !torch.vtensor<[1,1],f32> -> !torch.vtensor<[1,1],f32>
  %n = torch.aten.mul.Tensor %x, %r {pygraph.class = "pointwise"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,1],f32> -> !torch.vtensor<[1,8],f32>
  %q = torch.aten.linear %n, %wq, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[8,8],f32>, !torch.none -> !torch.vtensor<[1,8],f32>
  %k = torch.aten.linear %n, %wk, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[4,8],f32>, !torch.none -> !torch.vtensor<[1,4],f32>
  %v = torch.aten.linear %n, %wv, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[4,8],f32>, !torch.none -> !torch.vtensor<[1,4],f32>
  %o = torch.aten.linear %q, %wq, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[8,8],f32>, !torch.none -> !torch.vtensor<[1,8],f32>
  return %o, %k, %v : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,4],f32>, !torch.vtensor<[1,4],f32>
}

// -----

// A row longer than MAX_PROLOGUE_K (4096) is a kernel of its own: every program would recompute it.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-NEXT:    torch.aten.silu %arg0
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @fused_1(
// CHECK:         torch.aten.linear %arg0, %arg1, %none {pygraph.class = "matvec"}
// CHECK-LABEL: func.func @long_row
// CHECK-NEXT:    %[[S:.*]] = call @fused_0(%arg0)
// CHECK-NEXT:    call @fused_1(%[[S]], %arg1)
func.func @long_row(%x: !torch.vtensor<[1,4097],bf16>, %w: !torch.vtensor<[8,4097],bf16>) -> !torch.vtensor<[1,8],bf16> {
  %0 = torch.aten.silu %x {pygraph.class = "pointwise"} : !torch.vtensor<[1,4097],bf16> -> !torch.vtensor<[1,4097],bf16>
  %none = torch.constant.none {pygraph.class = "scalar"}
  %1 = torch.aten.linear %0, %w, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,4097],bf16>, !torch.vtensor<[8,4097],bf16>, !torch.none -> !torch.vtensor<[1,8],bf16>
  return %1 : !torch.vtensor<[1,8],bf16>
}

// -----

// Half-precision products of a few rows (a decoding step of 4 sequences) share a kernel as products of
// one row do, and take the pointwise ops that alone read them as its epilogue (`silu(g) * u`), but not
// the group computing their rows: their dots loop over K, so no program holds a row whole.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-NEXT:    torch.aten.silu %arg0
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @fused_1(
// CHECK:         %[[G:.*]] = torch.aten.linear %arg0, %arg1, %none {pygraph.class = "matvec"}
// CHECK:         %[[U:.*]] = torch.aten.linear %arg0, %arg2, %none {pygraph.class = "matvec"}
// CHECK:         %[[S:.*]] = torch.aten.silu %[[G]]
// CHECK:         %[[M:.*]] = torch.aten.mul.Tensor %[[S]], %[[U]]
// CHECK-NEXT:    return %[[M]]
// CHECK-LABEL: func.func @few_rows
// CHECK-NEXT:    %[[X:.*]] = call @fused_0(%arg0)
// CHECK-NEXT:    call @fused_1(%[[X]], %arg1, %arg2)
func.func @few_rows(%x: !torch.vtensor<[4,1,8],bf16>, %wg: !torch.vtensor<[16,8],bf16>, %wu: !torch.vtensor<[16,8],bf16>) -> !torch.vtensor<[4,1,16],bf16> {
  %0 = torch.aten.silu %x {pygraph.class = "pointwise"} : !torch.vtensor<[4,1,8],bf16> -> !torch.vtensor<[4,1,8],bf16>
  %none = torch.constant.none {pygraph.class = "scalar"}
  %g = torch.aten.linear %0, %wg, %none {pygraph.class = "matvec"} : !torch.vtensor<[4,1,8],bf16>, !torch.vtensor<[16,8],bf16>, !torch.none -> !torch.vtensor<[4,1,16],bf16>
  %u = torch.aten.linear %0, %wu, %none {pygraph.class = "matvec"} : !torch.vtensor<[4,1,8],bf16>, !torch.vtensor<[16,8],bf16>, !torch.none -> !torch.vtensor<[4,1,16],bf16>
  %s = torch.aten.silu %g {pygraph.class = "pointwise"} : !torch.vtensor<[4,1,16],bf16> -> !torch.vtensor<[4,1,16],bf16>
  %m = torch.aten.mul.Tensor %s, %u {pygraph.class = "pointwise"} : !torch.vtensor<[4,1,16],bf16>, !torch.vtensor<[4,1,16],bf16> -> !torch.vtensor<[4,1,16],bf16>
  return %m : !torch.vtensor<[4,1,16],bf16>
}

// -----

// A piece of a concatenation computed by a pointwise op that only the cat reads (rotary embedding's
// `cat([-x2, x1])`) joins the cat's group; one whose value is also returned stays a group of its own.
// CHECK-LABEL: func.func private @fused_0(
// CHECK:         %[[N:.*]] = torch.aten.neg %arg0
// CHECK:         %[[L:.*]] = torch.prim.ListConstruct %[[N]], %arg1
// CHECK:         torch.aten.cat %[[L]]
// CHECK-LABEL: func.func private @fused_1(
// CHECK-NEXT:    torch.aten.exp %arg0
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @fused_2(
// CHECK:         %[[M:.*]] = torch.prim.ListConstruct %arg0, %arg1
// CHECK:         torch.aten.cat %[[M]]
// CHECK-LABEL: func.func @pieces
// CHECK-NEXT:    %[[R:.*]] = call @fused_0(%arg1, %arg0)
// CHECK-NEXT:    %[[E:.*]] = call @fused_1(%arg0)
// CHECK-NEXT:    %[[S:.*]] = call @fused_2(%[[E]], %arg1)
// CHECK-NEXT:    return %[[R]], %[[S]], %[[E]]
func.func @pieces(%x1: !torch.vtensor<[2,8],f32>, %x2: !torch.vtensor<[2,8],f32>) -> (!torch.vtensor<[2,16],f32>, !torch.vtensor<[2,16],f32>, !torch.vtensor<[2,8],f32>) {
  %0 = torch.aten.neg %x2 {pygraph.class = "pointwise"} : !torch.vtensor<[2,8],f32> -> !torch.vtensor<[2,8],f32>
  %list = torch.prim.ListConstruct %0, %x1 {pygraph.class = "scalar"} : (!torch.vtensor<[2,8],f32>, !torch.vtensor<[2,8],f32>) -> !torch.list<vtensor>
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %1 = torch.aten.cat %list, %int1 {pygraph.class = "concat"} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[2,16],f32>
  %2 = torch.aten.exp %x1 {pygraph.class = "pointwise"} : !torch.vtensor<[2,8],f32> -> !torch.vtensor<[2,8],f32>
  %list2 = torch.prim.ListConstruct %2, %x2 {pygraph.class = "scalar"} : (!torch.vtensor<[2,8],f32>, !torch.vtensor<[2,8],f32>) -> !torch.list<vtensor>
  %3 = torch.aten.cat %list2, %int1 {pygraph.class = "concat"} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[2,16],f32>
  return %1, %3, %2 : !torch.vtensor<[2,16],f32>, !torch.vtensor<[2,16],f32>, !torch.vtensor<[2,8],f32>
}

// -----

// A token embedding, a position embedding broadcast over the batch, their add and the layer norm after
// them: one group (gathers join like pointwise ops of their result's shape); the weights and indices are
// the kernel's inputs.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      %arg0: !torch.vtensor<[100,8],f32>, %arg1: !torch.vtensor<[2,5],si64>, %arg2: !torch.vtensor<[16,8],f32>, %arg3: !torch.vtensor<[1,5],si64>
// CHECK:         torch.aten.embedding %arg0, %arg1,
// CHECK:         torch.aten.embedding %arg2, %arg3,
// CHECK:         torch.aten.add.Tensor
// CHECK:         torch.aten.layer_norm
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[R:.*]] = call @fused_0(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5)
// CHECK-NEXT:    return %[[R]]
func.func @main(%w: !torch.vtensor<[100,8],f32>, %ids: !torch.vtensor<[2,5],si64>, %pw: !torch.vtensor<[16,8],f32>, %pos: !torch.vtensor<[1,5],si64>, %gamma: !torch.vtensor<[8],f32>, %beta: !torch.vtensor<[8],f32>) -> !torch.vtensor<[2,5,8],f32> {
  %int-1 = torch.constant.int -1 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %tok = torch.aten.embedding %w, %ids, %int-1, %false, %false {pygraph.class = "gather", pygraph.layouts = [#pygraph.layout<[2, 5, 8], [40, 8, 1], 0 : i64, f32>]} : !torch.vtensor<[100,8],f32>, !torch.vtensor<[2,5],si64>, !torch.int, !torch.bool, !torch.bool -> !torch.vtensor<[2,5,8],f32>
  %p = torch.aten.embedding %pw, %pos, %int-1, %false, %false {pygraph.class = "gather", pygraph.layouts = [#pygraph.layout<[1, 5, 8], [40, 8, 1], 0 : i64, f32>]} : !torch.vtensor<[16,8],f32>, !torch.vtensor<[1,5],si64>, !torch.int, !torch.bool, !torch.bool -> !torch.vtensor<[1,5,8],f32>
  %sum = torch.aten.add.Tensor %tok, %p, %int1 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[2, 5, 8], [40, 8, 1], 0 : i64, f32>]} : !torch.vtensor<[2,5,8],f32>, !torch.vtensor<[1,5,8],f32>, !torch.int -> !torch.vtensor<[2,5,8],f32>
  %int8 = torch.constant.int 8 {pygraph.class = "scalar"}
  %shape = torch.prim.ListConstruct %int8 {pygraph.class = "scalar"} : (!torch.int) -> !torch.list<int>
  %eps = torch.constant.float 1.000000e-05 {pygraph.class = "scalar"}
  %ln = torch.aten.layer_norm %sum, %shape, %gamma, %beta, %eps, %false {pygraph.class = "reduction", pygraph.layouts = [#pygraph.layout<[2, 5, 8], [40, 8, 1], 0 : i64, f32>]} : !torch.vtensor<[2,5,8],f32>, !torch.list<int>, !torch.vtensor<[8],f32>, !torch.vtensor<[8],f32>, !torch.float, !torch.bool -> !torch.vtensor<[2,5,8],f32>
  return %ln : !torch.vtensor<[2,5,8],f32>
}

// -----

// A gather reads its source at its indices, so it never joins the group computing its source (x * 2);
// nor does an index_select join the group computing its index (which spans one of its result's dims, not
// all): both stay kernels of their own, and the gathers join the group of what reads them.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-NEXT:    torch.constant.int 2
// CHECK-NEXT:    torch.aten.mul.Scalar
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @fused_1(
// CHECK-NEXT:    torch.constant.int 1
// CHECK-NEXT:    torch.aten.add.Scalar
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @fused_2(
// CHECK:         torch.aten.gather %arg0,
// CHECK:         torch.aten.add.Scalar
// CHECK:         torch.aten.index_select %arg2, %{{.*}}, %arg3
// CHECK:         torch.aten.mul.Tensor
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[Y:.*]] = call @fused_0(%arg0)
// CHECK-NEXT:    %[[I:.*]] = call @fused_1(%arg2)
// CHECK-NEXT:    %{{.*}}:2 = call @fused_2(%[[Y]], %arg1, %arg0, %[[I]])
func.func @main(%x: !torch.vtensor<[4,6],f32>, %idx: !torch.vtensor<[4,3],si64>, %sel: !torch.vtensor<[3],si64>) -> (!torch.vtensor<[4,3],f32>, !torch.vtensor<[4,3],f32>) {
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %y = torch.aten.mul.Scalar %x, %int2 {pygraph.class = "pointwise"} : !torch.vtensor<[4,6],f32>, !torch.int -> !torch.vtensor<[4,6],f32>
  %g = torch.aten.gather %y, %int1, %idx, %false {pygraph.class = "gather"} : !torch.vtensor<[4,6],f32>, !torch.int, !torch.vtensor<[4,3],si64>, !torch.bool -> !torch.vtensor<[4,3],f32>
  %r = torch.aten.add.Scalar %g, %int1, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[4,3],f32>, !torch.int, !torch.int -> !torch.vtensor<[4,3],f32>
  %shifted = torch.aten.add.Scalar %sel, %int1, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[3],si64>, !torch.int, !torch.int -> !torch.vtensor<[3],si64>
  %s = torch.aten.index_select %x, %int1, %shifted {pygraph.class = "gather"} : !torch.vtensor<[4,6],f32>, !torch.int, !torch.vtensor<[3],si64> -> !torch.vtensor<[4,3],f32>
  %t = torch.aten.mul.Tensor %s, %g {pygraph.class = "pointwise"} : !torch.vtensor<[4,3],f32>, !torch.vtensor<[4,3],f32> -> !torch.vtensor<[4,3],f32>
  return %r, %t : !torch.vtensor<[4,3],f32>, !torch.vtensor<[4,3],f32>
}

// -----

// DeBERTa's relative positions: a small group computing a gather's index, read through an expand only by
// the gather (per element: `gather`'s index has the result's shape), is recomputed in the kernel of the
// gather, the add and the softmax.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      %arg0: !torch.vtensor<[1,4,4],si64>, %arg1: !torch.vtensor<[3,4,8],f32>, %arg2: !torch.vtensor<[3,4,4],f32>
// CHECK:         %[[S:.*]] = torch.aten.add.Scalar %arg0,
// CHECK:         %[[P:.*]] = torch.aten.clamp %[[S]],
// CHECK:         torch.aten.gather %arg1, %{{.*}}, %[[P]], %{{.*}} -> !torch.vtensor<[3,4,4],f32>
// CHECK:         torch.aten.softmax.int
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[R:.*]] = call @fused_0(%arg2, %arg1, %arg0)
// CHECK-NEXT:    return %[[R]]
func.func @main(%scores: !torch.vtensor<[3,4,4],f32>, %c2p: !torch.vtensor<[3,4,8],f32>, %rel: !torch.vtensor<[1,4,4],si64>) -> !torch.vtensor<[3,4,4],f32> {
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %int4 = torch.constant.int 4 {pygraph.class = "scalar"}
  %int7 = torch.constant.int 7 {pygraph.class = "scalar"}
  %int3 = torch.constant.int 3 {pygraph.class = "scalar"}
  %int-1 = torch.constant.int -1 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %none = torch.constant.none {pygraph.class = "scalar"}
  %shifted = torch.aten.add.Scalar %rel, %int4, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[1,4,4],si64>, !torch.int, !torch.int -> !torch.vtensor<[1,4,4],si64>
  %pos = torch.aten.clamp %shifted, %int0, %int7 {pygraph.class = "pointwise"} : !torch.vtensor<[1,4,4],si64>, !torch.int, !torch.int -> !torch.vtensor<[1,4,4],si64>
  %sizes = torch.prim.ListConstruct %int3, %int4, %int4 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %index = torch.aten.expand %pos, %sizes, %false {pygraph.class = "view"} : !torch.vtensor<[1,4,4],si64>, !torch.list<int>, !torch.bool -> !torch.vtensor<[3,4,4],si64>
  %g = torch.aten.gather %c2p, %int-1, %index, %false {pygraph.class = "gather"} : !torch.vtensor<[3,4,8],f32>, !torch.int, !torch.vtensor<[3,4,4],si64>, !torch.bool -> !torch.vtensor<[3,4,4],f32>
  %sum = torch.aten.add.Tensor %scores, %g, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[3,4,4],f32>, !torch.vtensor<[3,4,4],f32>, !torch.int -> !torch.vtensor<[3,4,4],f32>
  %p = torch.aten.softmax.int %sum, %int-1, %none {pygraph.class = "reduction"} : !torch.vtensor<[3,4,4],f32>, !torch.int, !torch.none -> !torch.vtensor<[3,4,4],f32>
  return %p : !torch.vtensor<[3,4,4],f32>
}

// -----

// An arange read at a broadcast shape ([8] added to [4, 8]) is not recomputed in its reader's kernel:
// its values are its kernel's element index, so it stays a kernel of its own shape.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      -> !torch.vtensor<[8],f32>
// CHECK:         torch.aten.arange
// CHECK-LABEL: func.func private @fused_1(
// CHECK-SAME:      -> !torch.vtensor<[4,8],f32>
// CHECK-NOT:     torch.aten.arange
// CHECK:         torch.aten.add.Tensor
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[R:.*]] = call @fused_0()
// CHECK-NEXT:    %[[Y:.*]] = call @fused_1(%arg0, %[[R]])
// CHECK-NEXT:    return %[[Y]]
func.func @main(%x: !torch.vtensor<[4,8],f32>) -> !torch.vtensor<[4,8],f32> {
  %int8 = torch.constant.int 8 {pygraph.class = "scalar"}
  %int6 = torch.constant.int 6 {pygraph.class = "scalar"}
  %none = torch.constant.none {pygraph.class = "scalar"}
  %cpu = torch.constant.device "cpu" {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %0 = torch.aten.arange %int8, %int6, %none, %cpu, %false {pygraph.class = "pointwise"} : !torch.int, !torch.int, !torch.none, !torch.Device, !torch.bool -> !torch.vtensor<[8],f32>
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %1 = torch.aten.add.Tensor %x, %0, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[4,8],f32>, !torch.vtensor<[8],f32>, !torch.int -> !torch.vtensor<[4,8],f32>
  return %1 : !torch.vtensor<[4,8],f32>
}

// -----

// The gate and up products of a gated MLP share a kernel whose epilogue is `silu(g) * u` (its one reader),
// which a residual input joins; neither product is returned. The next product's row is that epilogue's
// result, so it takes no prologue.
// CHECK-LABEL: func.func private @fused_0(
// CHECK-SAME:      -> !torch.vtensor<[1,1,6],f32>
// CHECK:         %[[G:.*]] = torch.aten.linear %arg0, %arg1, %none {pygraph.class = "matvec"}
// CHECK-NEXT:    %[[U:.*]] = torch.aten.linear %arg0, %arg2, %none {pygraph.class = "matvec"}
// CHECK-NEXT:    %[[S:.*]] = torch.aten.silu %[[G]]
// CHECK-NEXT:    %[[M:.*]] = torch.aten.mul.Tensor %[[S]], %[[U]]
// CHECK:         %[[A:.*]] = torch.aten.add.Tensor %[[M]], %arg3
// CHECK-NEXT:    return %[[A]]
// CHECK-LABEL: func.func private @fused_1(
// CHECK:         torch.aten.linear %arg0, %arg1, %none {pygraph.class = "matvec"}
// CHECK-NEXT:    return
// CHECK-LABEL: func.func @gated
// CHECK:         %[[H:.*]] = call @fused_0(%arg0, %arg1, %arg2, %arg4)
// CHECK-NEXT:    %[[O:.*]] = call @fused_1(%[[H]], %arg3)
// CHECK-NEXT:    return %[[O]]
func.func @gated(%x: !torch.vtensor<[1,1,8],f32>, %wg: !torch.vtensor<[6,8],f32>, %wu: !torch.vtensor<[6,8],f32>, %wd: !torch.vtensor<[8,6],f32>, %r: !torch.vtensor<[6],f32>) -> !torch.vtensor<[1,1,8],f32> {
  %none = torch.constant.none {pygraph.class = "scalar"}
  %g = torch.aten.linear %x, %wg, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,1,8],f32>, !torch.vtensor<[6,8],f32>, !torch.none -> !torch.vtensor<[1,1,6],f32>
  %u = torch.aten.linear %x, %wu, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,1,8],f32>, !torch.vtensor<[6,8],f32>, !torch.none -> !torch.vtensor<[1,1,6],f32>
  %s = torch.aten.silu %g {pygraph.class = "pointwise"} : !torch.vtensor<[1,1,6],f32> -> !torch.vtensor<[1,1,6],f32>
  %m = torch.aten.mul.Tensor %s, %u {pygraph.class = "pointwise"} : !torch.vtensor<[1,1,6],f32>, !torch.vtensor<[1,1,6],f32> -> !torch.vtensor<[1,1,6],f32>
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %a = torch.aten.add.Tensor %m, %r, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[1,1,6],f32>, !torch.vtensor<[6],f32>, !torch.int -> !torch.vtensor<[1,1,6],f32>
  %o = torch.aten.linear %a, %wd, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,1,6],f32>, !torch.vtensor<[8,6],f32>, !torch.none -> !torch.vtensor<[1,1,8],f32>
  return %o : !torch.vtensor<[1,1,8],f32>
}

// -----

// No epilogue: the products of one row here have two shapes (one is returned, two are added, one is read
// by a ReLU whose group holds a softmax), so the kernel returns each of them.
// CHECK-LABEL: func.func private @fused_0(
// CHECK:         %[[P:.*]] = torch.aten.linear %arg0, %arg1, %none {pygraph.class = "matvec"}
// CHECK-NEXT:    %[[Q:.*]] = torch.aten.mm %arg0, %arg1 {pygraph.class = "matvec"}
// CHECK-NEXT:    %[[Q1:.*]] = torch.aten.linear %arg0, %arg2, %none {pygraph.class = "matvec"}
// CHECK-NEXT:    return %[[P]], %[[Q]], %[[Q1]]
// CHECK-LABEL: func.func @no_epilogues
// CHECK-NEXT:    %[[R:.*]]:3 = call @fused_0(%arg0, %arg1, %arg2)
// CHECK-NEXT:    %[[S:.*]] = call @fused_1(%[[R]]#1, %[[R]]#2)
// CHECK:         %[[T:.*]] = call @fused_2(%[[R]]#0)
// CHECK-NEXT:    return %[[R]]#0, %[[S]], %[[T]]
func.func @no_epilogues(%x: !torch.vtensor<[1,8],f32>, %w: !torch.vtensor<[8,8],f32>, %w1: !torch.vtensor<[1,8],f32>) -> (!torch.vtensor<[1,8],f32>, !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,8],f32>) {
  %none = torch.constant.none {pygraph.class = "scalar"}
  %p = torch.aten.linear %x, %w, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[8,8],f32>, !torch.none -> !torch.vtensor<[1,8],f32>
  %r = torch.aten.relu %p {pygraph.class = "pointwise"} : !torch.vtensor<[1,8],f32> -> !torch.vtensor<[1,8],f32>
  %q = torch.aten.mm %x, %w {pygraph.class = "matvec"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[8,8],f32> -> !torch.vtensor<[1,8],f32>
  %q1 = torch.aten.linear %x, %w1, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,8],f32>, !torch.none -> !torch.vtensor<[1,1],f32>
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %s = torch.aten.add.Tensor %q, %q1, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,1],f32>, !torch.int -> !torch.vtensor<[1,8],f32>
  %int-1 = torch.constant.int -1 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %t = torch.aten._softmax %r, %int-1, %false {pygraph.class = "reduction"} : !torch.vtensor<[1,8],f32>, !torch.int, !torch.bool -> !torch.vtensor<[1,8],f32>
  return %p, %s, %t : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,8],f32>
}

// -----

// A residual add and RMS norm before a product of one row: the kernel computes them in its prologue and
// returns the sum too, for the next residual add (with a softmax: no epilogue) after the product. Where
// another op reads the sum before the product (`@read_before`), the norm stays a kernel of its own.
// CHECK-LABEL: func.func private @fused_0(
// CHECK:         %[[H:.*]] = torch.aten.add.Tensor %arg0, %arg1
// CHECK:         torch.aten.mean.dim
// CHECK:         %[[P:.*]] = torch.aten.linear %{{.*}}, %arg2, %none {pygraph.class = "matvec"}
// CHECK-NEXT:    return %[[H]], %[[P]]
// CHECK-LABEL: func.func @side_output
// CHECK-NEXT:    %[[R:.*]]:2 = call @fused_0(%arg0, %arg1, %arg2)
// CHECK-NEXT:    %[[O:.*]] = call @fused_1(%[[R]]#0, %[[R]]#1)
// CHECK-NEXT:    return %[[O]]
func.func @side_output(%x: !torch.vtensor<[1,8],f32>, %r: !torch.vtensor<[1,8],f32>, %w: !torch.vtensor<[8,8],f32>) -> !torch.vtensor<[1,8],f32> {
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %h = torch.aten.add.Tensor %x, %r, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,8],f32>, !torch.int -> !torch.vtensor<[1,8],f32>
  %sq = torch.aten.mul.Tensor %h, %h {pygraph.class = "pointwise"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,8],f32> -> !torch.vtensor<[1,8],f32>
  %int-1 = torch.constant.int -1 {pygraph.class = "scalar"}
  %dims = torch.prim.ListConstruct %int-1 {pygraph.class = "scalar"} : (!torch.int) -> !torch.list<int>
  %true = torch.constant.bool true {pygraph.class = "scalar"}
  %none = torch.constant.none {pygraph.class = "scalar"}
  %m = torch.aten.mean.dim %sq, %dims, %true, %none {pygraph.class = "reduction"} : !torch.vtensor<[1,8],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[1,1],f32>
  %s = torch.aten.rsqrt %m {pygraph.class = "pointwise"} : !torch.vtensor<[1,1],f32> -> !torch.vtensor<[1,1],f32>
  %n = torch.aten.mul.Tensor %h, %s {pygraph.class = "pointwise"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,1],f32> -> !torch.vtensor<[1,8],f32>
  %p = torch.aten.linear %n, %w, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[8,8],f32>, !torch.none -> !torch.vtensor<[1,8],f32>
  %o = torch.aten.add.Tensor %h, %p, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,8],f32>, !torch.int -> !torch.vtensor<[1,8],f32>
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %t = torch.aten._softmax %o, %int-1, %false {pygraph.class = "reduction"} : !torch.vtensor<[1,8],f32>, !torch.int, !torch.bool -> !torch.vtensor<[1,8],f32>
  return %t : !torch.vtensor<[1,8],f32>
}

// -----

// CHECK-LABEL: func.func @read_before
// CHECK:         %[[N:.*]]:2 = call @fused_0(%arg0, %arg1)
// CHECK:         %[[C:.*]] = torch.aten.clone %[[N]]#0
// CHECK-NEXT:    %[[P:.*]] = call @fused_1(%[[N]]#1, %arg2)
// CHECK-NEXT:    return %[[P]], %[[C]]
func.func @read_before(%x: !torch.vtensor<[1,8],f32>, %r: !torch.vtensor<[1,8],f32>, %w: !torch.vtensor<[8,8],f32>) -> (!torch.vtensor<[1,8],f32>, !torch.vtensor<[1,8],f32>) {
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %h = torch.aten.add.Tensor %x, %r, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,8],f32>, !torch.int -> !torch.vtensor<[1,8],f32>
  %int-1 = torch.constant.int -1 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %n = torch.aten._softmax %h, %int-1, %false {pygraph.class = "reduction"} : !torch.vtensor<[1,8],f32>, !torch.int, !torch.bool -> !torch.vtensor<[1,8],f32>
  %none = torch.constant.none {pygraph.class = "scalar"}
  %c = torch.aten.clone %h, %none {pygraph.class = "library"} : !torch.vtensor<[1,8],f32>, !torch.none -> !torch.vtensor<[1,8],f32>
  %p = torch.aten.linear %n, %w, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[8,8],f32>, !torch.none -> !torch.vtensor<[1,8],f32>
  return %p, %c : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,8],f32>
}
