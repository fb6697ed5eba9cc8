// RUN: pygraph-opt %s -p classify-ops,isolate-data-dependent --split-input-file | filecheck %s

// A boolean mask selects a data-dependent number of elements on the GPU: the selection and the sum
// over it run on the host between graphs; the sum has a static shape, so the add after it is in a
// graph again. Export's checks on the selection's size (`u0 >= 0`) are dropped: host ops run at the sizes
// they meet. The mean, which does not depend on the host ops, moves before them, into the first graph.
// CHECK:       module attributes {pygraph.transforms = [
// CHECK-SAME:    {location = "model.py:3 (node index)", pass = "isolate-data-dependent", what = "aten.index.Tensor runs between graphs: its output shape depends on the data"},
// CHECK-SAME:    {location = "model.py:4 (node sum_1)", pass = "isolate-data-dependent", what = "aten.sum.default runs between graphs: an operand's shape depends on the data"}]}
// CHECK-LABEL: func.func @main
// CHECK:         torch.aten.gt.Scalar {{.*}}pygraph.class = "pointwise"
// CHECK:         torch.prim.ListConstruct {{.*}}pygraph.class = "scalar"
// CHECK:         %[[MEAN:.*]] = torch.aten.mean {{.*}}pygraph.class = "reduction"
// CHECK:         %[[SEL:.*]] = torch.aten.index.Tensor {{.*}}{pygraph.class = "host", pygraph.reason = "its output shape depends on the data"}
// CHECK-NEXT:    %[[SUM:.*]] = torch.aten.sum %[[SEL]], {{.*}}pygraph.class = "host", {{.*}}pygraph.reason = "an operand's shape depends on the data"
// CHECK-NEXT:    torch.aten.size.int {{.*}}{pygraph.class = "nop"}
// CHECK-NEXT:    torch.aten.ge.int {{.*}}{pygraph.class = "nop"}
// CHECK-NEXT:    torch.aten.Int.bool {{.*}}{pygraph.class = "nop"}
// CHECK-NEXT:    torch.aten._assert_scalar {{.*}}{pygraph.class = "nop"}
// CHECK-NEXT:    torch.aten.add.Tensor %[[MEAN]], %[[SUM]], {{.*}}pygraph.class = "pointwise"
func.func @main(%arg0: !torch.vtensor<[8],f32> {pygraph.device = "cuda", pygraph.name = "x", pygraph.role = "input"}) -> !torch.vtensor<[],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %none = torch.constant.none
  %0 = torch.aten.gt.Scalar %arg0, %int0 {pygraph.layouts = [#pygraph.layout<[8], [1], 0 : i64, i1>]} : !torch.vtensor<[8],f32>, !torch.int -> !torch.vtensor<[8],i1> loc(#gt)
  %1 = torch.prim.ListConstruct %0 : (!torch.vtensor<[8],i1>) -> !torch.list<optional<vtensor>> loc(#index)
  %2 = torch.aten.index.Tensor %arg0, %1 : !torch.vtensor<[8],f32>, !torch.list<optional<vtensor>> -> !torch.vtensor<[?],f32> loc(#index)
  %3 = torch.aten.size.int %2, %int0 : !torch.vtensor<[?],f32>, !torch.int -> !torch.int loc(#index)
  %4 = torch.aten.ge.int %3, %int0 : !torch.int, !torch.int -> !torch.bool loc(#index)
  %5 = torch.aten.Int.bool %4 : !torch.bool -> !torch.int loc(#index)
  %str = torch.constant.str "Runtime assertion failed for expression u0 >= 0 on node 'ge_1'"
  torch.aten._assert_scalar %5, %str : !torch.int, !torch.str loc(#index)
  %6 = torch.aten.sum %2, %none {pygraph.layouts = [#pygraph.layout<[], [], 0 : i64, f32>]} : !torch.vtensor<[?],f32>, !torch.none -> !torch.vtensor<[],f32> loc(#sum)
  %7 = torch.aten.mean %arg0, %none {pygraph.layouts = [#pygraph.layout<[], [], 0 : i64, f32>]} : !torch.vtensor<[8],f32>, !torch.none -> !torch.vtensor<[],f32>
  %8 = torch.aten.add.Tensor %7, %6, %int1 {pygraph.layouts = [#pygraph.layout<[], [], 0 : i64, f32>]} : !torch.vtensor<[],f32>, !torch.vtensor<[],f32>, !torch.int -> !torch.vtensor<[],f32> loc(#add)
  return %8 : !torch.vtensor<[],f32>
}
#gt = loc("gt"("model.py":3:0))
#index = loc("index"("model.py":3:0))
#sum = loc("sum_1"("model.py":4:0))
#add = loc("add"("model.py":4:0))

// -----

// `.item()` feeding a shape: the read-back and the op sized by it run on the host; the number's check
// is dropped, and so is a size that only feeds a check.
// CHECK-LABEL: func.func @item_to_shape
// CHECK:         torch.aten.sum {{.*}}pygraph.class = "reduction"
// CHECK:         torch.aten.item {{.*}}{pygraph.class = "host", pygraph.reason = "it reads a value back to the host"}
// CHECK:         torch.aten.le.int {{.*}}{pygraph.class = "nop"}
// CHECK:         torch.prim.ListConstruct {{.*}}{pygraph.class = "scalar"}
// CHECK:         torch.aten.zeros {{.*}}{pygraph.class = "host", pygraph.reason = "it takes a number computed from the data when the program runs"}
// CHECK:         torch.aten.sum {{.*}}pygraph.class = "host"
func.func @item_to_shape(%arg0: !torch.vtensor<[8],si64> {pygraph.device = "cuda", pygraph.name = "x", pygraph.role = "input"}) -> !torch.vtensor<[],f32> {
  %none = torch.constant.none
  %int8 = torch.constant.int 8
  %false = torch.constant.bool false
  %cuda = torch.constant.device "cuda"
  %0 = torch.aten.sum %arg0, %none {pygraph.layouts = [#pygraph.layout<[], [], 0 : i64, si64>]} : !torch.vtensor<[8],si64>, !torch.none -> !torch.vtensor<[],si64>
  %1 = torch.aten.item %0 : !torch.vtensor<[],si64> -> !torch.int
  %2 = torch.aten.le.int %1, %int8 : !torch.int, !torch.int -> !torch.bool
  %3 = torch.prim.ListConstruct %1 : (!torch.int) -> !torch.list<int>
  %4 = torch.aten.zeros %3, %none, %none, %cuda, %false : !torch.list<int>, !torch.none, !torch.none, !torch.Device, !torch.bool -> !torch.vtensor<[?],f32>
  %5 = torch.aten.sum %4, %none {pygraph.layouts = [#pygraph.layout<[], [], 0 : i64, f32>]} : !torch.vtensor<[?],f32>, !torch.none -> !torch.vtensor<[],f32>
  return %5 : !torch.vtensor<[],f32>
}

// -----

// Static shapes only (a size read at compile time, a host op whose layout is known): nothing changes
// and nothing is recorded.
// CHECK-NOT:   pygraph.transforms
// CHECK-LABEL: func.func @static
// CHECK:         torch.aten.size.int {{.*}}{pygraph.class = "scalar"}
// CHECK:         torch.aten.nonzero {{.*}}{pygraph.class = "host", pygraph.layouts
// CHECK-NOT:     pygraph.reason
func.func @static(%arg0: !torch.vtensor<[4],f32> {pygraph.device = "cuda", pygraph.name = "x", pygraph.role = "input"}) -> !torch.vtensor<[4,1],si64> {
  %int0 = torch.constant.int 0
  %0 = torch.aten.size.int %arg0, %int0 : !torch.vtensor<[4],f32>, !torch.int -> !torch.int
  %1 = torch.aten.nonzero %arg0 {pygraph.layouts = [#pygraph.layout<[4, 1], [1, 1], 0 : i64, si64>]} : !torch.vtensor<[4],f32> -> !torch.vtensor<[4,1],si64>
  return %1 : !torch.vtensor<[4,1],si64>
}

// -----

// A GPU program computes on the CPU (`torch.cumsum(h.cpu(), 0) * 3`, copied back): the copy to the host,
// the ops on the host copy and the copy back run between graphs; the add after the copy back, on the GPU,
// is in a graph again, and so is the op before the copy to the host.
// CHECK-LABEL: func.func @on_the_cpu
// CHECK:         torch.aten.mul.Scalar %arg0, {{.*}}pygraph.class = "pointwise"
// CHECK:         torch.aten._to_copy {{.*}}pygraph.class = "host", {{.*}}pygraph.reason = "it copies a GPU tensor to the CPU, as the model asks"
// CHECK:         torch.aten.cumsum {{.*}}pygraph.class = "host", {{.*}}pygraph.reason = "it computes on the CPU, as the model asks"
// CHECK:         torch.aten.mul.Scalar {{.*}}pygraph.class = "host", {{.*}}pygraph.reason = "it computes on the CPU, as the model asks"
// CHECK:         torch.aten._to_copy {{.*}}pygraph.class = "host", {{.*}}pygraph.reason = "it copies the CPU's result back to the GPU"
// CHECK:         torch.aten.add.Tensor {{.*}}pygraph.class = "pointwise"
func.func @on_the_cpu(%arg0: !torch.vtensor<[8],f32> {pygraph.device = "cuda", pygraph.name = "x", pygraph.role = "input"}) -> !torch.vtensor<[8],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %none = torch.constant.none
  %false = torch.constant.bool false
  %cpu = torch.constant.device "cpu"
  %cuda = torch.constant.device "cuda:0"
  %0 = torch.aten.mul.Scalar %arg0, %int2 {pygraph.layouts = [#pygraph.layout<[8], [1], 0 : i64, f32>]} : !torch.vtensor<[8],f32>, !torch.int -> !torch.vtensor<[8],f32>
  %1 = torch.aten._to_copy %0, %none, %none, %cpu, %none, %false, %none {pygraph.layouts = [#pygraph.layout<[8], [1], 0 : i64, f32>]} : !torch.vtensor<[8],f32>, !torch.none, !torch.none, !torch.Device, !torch.none, !torch.bool, !torch.none -> !torch.vtensor<[8],f32>
  %2 = torch.aten.cumsum %1, %int0, %none {pygraph.layouts = [#pygraph.layout<[8], [1], 0 : i64, f32>]} : !torch.vtensor<[8],f32>, !torch.int, !torch.none -> !torch.vtensor<[8],f32>
  %3 = torch.aten.mul.Scalar %2, %int3 {pygraph.layouts = [#pygraph.layout<[8], [1], 0 : i64, f32>]} : !torch.vtensor<[8],f32>, !torch.int -> !torch.vtensor<[8],f32>
  %4 = torch.aten._to_copy %3, %none, %none, %cuda, %none, %false, %none {pygraph.layouts = [#pygraph.layout<[8], [1], 0 : i64, f32>]} : !torch.vtensor<[8],f32>, !torch.none, !torch.none, !torch.Device, !torch.none, !torch.bool, !torch.none -> !torch.vtensor<[8],f32>
  %5 = torch.aten.add.Tensor %4, %0, %int1 {pygraph.layouts = [#pygraph.layout<[8], [1], 0 : i64, f32>]} : !torch.vtensor<[8],f32>, !torch.vtensor<[8],f32>, !torch.int -> !torch.vtensor<[8],f32>
  return %5 : !torch.vtensor<[8],f32>
}

// -----

// An op that no graph may hold although its shapes are static (`pygraph.outside_graphs`: torch tags it
// cudagraph_unsafe, or recording it failed) runs between graphs, with that reason; the ops around it do not.
// CHECK-LABEL: func.func @outside_graphs
// CHECK:         torch.aten.mul.Scalar %arg0, {{.*}}pygraph.class = "pointwise"
// CHECK:         torch.operator "torch.demo.synchronising"{{.*}}pygraph.class = "host", {{.*}}pygraph.reason = "torch tags demo.synchronising.default cudagraph_unsafe"
// CHECK:         torch.aten.add.Tensor {{.*}}pygraph.class = "pointwise"
func.func @outside_graphs(%arg0: !torch.vtensor<[8],f32> {pygraph.device = "cuda", pygraph.name = "x", pygraph.role = "input"}) -> !torch.vtensor<[8],f32> {
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %0 = torch.aten.mul.Scalar %arg0, %int2 {pygraph.layouts = [#pygraph.layout<[8], [1], 0 : i64, f32>]} : !torch.vtensor<[8],f32>, !torch.int -> !torch.vtensor<[8],f32>
  %1 = torch.operator "torch.demo.synchronising"(%0) {pygraph.layouts = [#pygraph.layout<[8], [1], 0 : i64, f32>], pygraph.outside_graphs = "torch tags demo.synchronising.default cudagraph_unsafe"} : (!torch.vtensor<[8],f32>) -> !torch.vtensor<[8],f32>
  %2 = torch.aten.add.Tensor %1, %0, %int1 {pygraph.layouts = [#pygraph.layout<[8], [1], 0 : i64, f32>]} : !torch.vtensor<[8],f32>, !torch.vtensor<[8],f32>, !torch.int -> !torch.vtensor<[8],f32>
  return %2 : !torch.vtensor<[8],f32>
}

// -----

// A branch on the data that draft export traced one way (`if x.sum() > 0:`, frontend/branches.py): the
// condition is read back and checked on the host after the graph that computes it, where a call whose
// data take the other way fails. The product, which the way taken computes, stays in that graph. A check
// on numbers known when compiling (a size) computes nothing at run time.
// CHECK-LABEL: func.func @branch
// CHECK:         torch.aten.sum {{.*}}pygraph.class = "reduction"
// CHECK:         torch.aten._assert_scalar %{{.*}} {pygraph.class = "nop"}
// CHECK:         torch.aten.mul.Scalar {{.*}}pygraph.class = "pointwise"
// CHECK:         torch.aten.item {{.*}}{pygraph.class = "host", pygraph.reason = "it reads a value back to the host"}
// CHECK-NEXT:    torch.aten.eq.int {{.*}}pygraph.class = "host"
// CHECK-NEXT:    torch.aten.Int.bool {{.*}}pygraph.class = "host"
// CHECK-NEXT:    torch.aten._assert_scalar {{.*}} {pygraph.class = "host", pygraph.reason = "it checks what the traced program assumed about the call's data"}
func.func @branch(%arg0: !torch.vtensor<[8],f32> {pygraph.device = "cuda", pygraph.name = "x", pygraph.role = "input"}) -> !torch.vtensor<[8],f32> {
  %none = torch.constant.none
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int4 = torch.constant.int 4
  %int8 = torch.constant.int 8
  %false = torch.constant.bool false
  %0 = torch.aten.sum %arg0, %none {pygraph.layouts = [#pygraph.layout<[], [], 0 : i64, f32>]} : !torch.vtensor<[8],f32>, !torch.none -> !torch.vtensor<[],f32>
  %1 = torch.aten.gt.Scalar %0, %int0 {pygraph.layouts = [#pygraph.layout<[], [], 0 : i64, i1>]} : !torch.vtensor<[],f32>, !torch.int -> !torch.vtensor<[],i1>
  %2 = torch.aten._to_copy %1, %int4, %none, %none, %none, %false, %none {pygraph.layouts = [#pygraph.layout<[], [], 0 : i64, si64>]} : !torch.vtensor<[],i1>, !torch.int, !torch.none, !torch.none, !torch.none, !torch.bool, !torch.none -> !torch.vtensor<[],si64>
  %3 = torch.aten.item %2 : !torch.vtensor<[],si64> -> !torch.int
  %4 = torch.aten.eq.int %3, %int1 : !torch.int, !torch.int -> !torch.bool
  %5 = torch.aten.Int.bool %4 : !torch.bool -> !torch.int
  %str = torch.constant.str "model.py:3 (`if x.sum() > 0:`): this call's data break what the compiled program assumed there (Eq(u0, 1))"
  torch.aten._assert_scalar %5, %str : !torch.int, !torch.str
  %6 = torch.aten.size.int %arg0, %int0 : !torch.vtensor<[8],f32>, !torch.int -> !torch.int
  %7 = torch.aten.le.int %6, %int8 : !torch.int, !torch.int -> !torch.bool
  %8 = torch.aten.Int.bool %7 : !torch.bool -> !torch.int
  %str_0 = torch.constant.str "Runtime assertion failed for expression s0 <= 8"
  torch.aten._assert_scalar %8, %str_0 : !torch.int, !torch.str
  %9 = torch.aten.mul.Scalar %arg0, %int2 {pygraph.layouts = [#pygraph.layout<[8], [1], 0 : i64, f32>]} : !torch.vtensor<[8],f32>, !torch.int -> !torch.vtensor<[8],f32>
  return %9 : !torch.vtensor<[8],f32>
}

// -----

// Where the program checks the data, a write of state (`self.calls.add_(1)`, written before the branch in
// the model) comes after the checks, with the op making the value written and what reads that value (the
// returned `calls * 2`): a call whose data fail a check has written nothing, and runs again another way,
// while write-in-place may still make the value in its target. The product the way taken computes
// without the new value stays before the checks.
// CHECK-LABEL: func.func @branch_writes
// CHECK:         torch.aten.sum
// CHECK:         torch.aten.mul.Scalar %arg0
// CHECK:         torch.aten._assert_scalar {{.*}}pygraph.class = "host"
// CHECK-NEXT:    %[[CALLS:.*]] = torch.aten.add.Scalar %arg1
// CHECK-NEXT:    "pygraph.overwrite"(%[[CALLS]], %arg1)
// CHECK-NEXT:    torch.aten.mul.Scalar %[[CALLS]]
// CHECK-NEXT:    return
func.func @branch_writes(%arg0: !torch.vtensor<[8],f32> {pygraph.device = "cuda", pygraph.name = "x", pygraph.role = "input"}, %arg1: !torch.vtensor<[],f32> {pygraph.device = "cuda", pygraph.name = "calls", pygraph.role = "buffer"}) -> (!torch.vtensor<[8],f32>, !torch.vtensor<[],f32>) {
  %none = torch.constant.none
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int4 = torch.constant.int 4
  %false = torch.constant.bool false
  %calls = torch.aten.add.Scalar %arg1, %int1, %int1 {pygraph.layouts = [#pygraph.layout<[], [], 0 : i64, f32>]} : !torch.vtensor<[],f32>, !torch.int, !torch.int -> !torch.vtensor<[],f32>
  "pygraph.overwrite"(%calls, %arg1) : (!torch.vtensor<[],f32>, !torch.vtensor<[],f32>) -> ()
  %0 = torch.aten.sum %arg0, %none {pygraph.layouts = [#pygraph.layout<[], [], 0 : i64, f32>]} : !torch.vtensor<[8],f32>, !torch.none -> !torch.vtensor<[],f32>
  %1 = torch.aten.gt.Scalar %0, %int0 {pygraph.layouts = [#pygraph.layout<[], [], 0 : i64, i1>]} : !torch.vtensor<[],f32>, !torch.int -> !torch.vtensor<[],i1>
  %2 = torch.aten._to_copy %1, %int4, %none, %none, %none, %false, %none {pygraph.layouts = [#pygraph.layout<[], [], 0 : i64, si64>]} : !torch.vtensor<[],i1>, !torch.int, !torch.none, !torch.none, !torch.none, !torch.bool, !torch.none -> !torch.vtensor<[],si64>
  %3 = torch.aten.item %2 : !torch.vtensor<[],si64> -> !torch.int
  %4 = torch.aten.eq.int %3, %int1 : !torch.int, !torch.int -> !torch.bool
  %5 = torch.aten.Int.bool %4 : !torch.bool -> !torch.int
  %str = torch.constant.str "model.py:4 (`return x * 2 if x.sum() > 0 else x - 1`): this call's data break what the compiled program assumed there (Eq(u0, 1))"
  torch.aten._assert_scalar %5, %str : !torch.int, !torch.str
  %6 = torch.aten.mul.Scalar %arg0, %int2 {pygraph.layouts = [#pygraph.layout<[8], [1], 0 : i64, f32>]} : !torch.vtensor<[8],f32>, !torch.int -> !torch.vtensor<[8],f32>
  %7 = torch.aten.mul.Scalar %calls, %int2 {pygraph.layouts = [#pygraph.layout<[], [], 0 : i64, f32>]} : !torch.vtensor<[],f32>, !torch.int -> !torch.vtensor<[],f32>
  return %6, %7 : !torch.vtensor<[8],f32>, !torch.vtensor<[],f32>
}

// -----

// A size the data decide that the trace assumed (a loop over a mask's selection of five elements made five
// selects): its check runs on the host after the selection, where a call with another count fails, while
// the range checks every selection from 8 elements meets (`u0 >= 0`, `u0 <= 8`) compute nothing.
// CHECK-LABEL: func.func @size_assumed
// CHECK:         torch.aten.index.Tensor {{.*}}pygraph.class = "host"
// CHECK:         torch.aten.eq.int {{.*}}pygraph.class = "host"
// CHECK:         torch.aten._assert_scalar {{.*}}{pygraph.class = "host", pygraph.reason = "it checks what the traced program assumed about a size the data decide"}
// CHECK-NEXT:    torch.aten.select.int {{.*}}pygraph.class = "host"
// CHECK:         torch.aten.ge.int {{.*}}{pygraph.class = "nop"}
// CHECK:         torch.aten._assert_scalar {{.*}}{pygraph.class = "nop"}
// CHECK:         torch.aten.le.int {{.*}}{pygraph.class = "nop"}
// CHECK:         torch.aten._assert_scalar {{.*}}{pygraph.class = "nop"}
func.func @size_assumed(%arg0: !torch.vtensor<[8],f32> {pygraph.device = "cuda", pygraph.name = "x", pygraph.role = "input"}) -> !torch.vtensor<[],f32> {
  %int0 = torch.constant.int 0
  %int4 = torch.constant.int 4
  %int5 = torch.constant.int 5
  %0 = torch.aten.gt.Scalar %arg0, %int0 {pygraph.layouts = [#pygraph.layout<[8], [1], 0 : i64, i1>]} : !torch.vtensor<[8],f32>, !torch.int -> !torch.vtensor<[8],i1>
  %1 = torch.prim.ListConstruct %0 : (!torch.vtensor<[8],i1>) -> !torch.list<optional<vtensor>>
  %2 = torch.aten.index.Tensor %arg0, %1 : !torch.vtensor<[8],f32>, !torch.list<optional<vtensor>> -> !torch.vtensor<[?],f32>
  %3 = torch.aten.size.int %2, %int0 : !torch.vtensor<[?],f32>, !torch.int -> !torch.int
  %4 = torch.aten.ge.int %3, %int0 : !torch.int, !torch.int -> !torch.bool
  %5 = torch.aten.Int.bool %4 : !torch.bool -> !torch.int
  %str = torch.constant.str "Runtime assertion failed for expression u0 >= 0 on node 'ge'"
  torch.aten._assert_scalar %5, %str : !torch.int, !torch.str
  %int8 = torch.constant.int 8
  %le = torch.aten.le.int %3, %int8 : !torch.int, !torch.int -> !torch.bool
  %le_int = torch.aten.Int.bool %le : !torch.bool -> !torch.int
  %str_le = torch.constant.str "Runtime assertion failed for expression u0 <= 8 on node 'le'"
  torch.aten._assert_scalar %le_int, %str_le : !torch.int, !torch.str
  %6 = torch.aten.eq.int %3, %int5 : !torch.int, !torch.int -> !torch.bool
  %7 = torch.aten.Int.bool %6 : !torch.bool -> !torch.int
  %str_0 = torch.constant.str "Runtime assertion failed for expression Eq(u0, 5) on node 'eq'"
  torch.aten._assert_scalar %7, %str_0 : !torch.int, !torch.str
  %8 = torch.aten.select.int %2, %int0, %int4 : !torch.vtensor<[?],f32>, !torch.int, !torch.int -> !torch.vtensor<[],f32>
  return %8 : !torch.vtensor<[],f32>
}
