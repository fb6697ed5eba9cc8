// RUN: pygraph-opt %s -p pad-selections --split-input-file | filecheck %s

// One expert of a mixture: the tokens choosing it (`nonzero(choice == e).squeeze(1)`), their rows
// gathered, a product with the expert's weight, a pointwise op, and `index_add` (an accumulating
// index_put). The selection becomes nonzero_static of the mask's 8 elements (rows of -1 past the
// selected ones); every padded index is read as 0 and every padded row scatters -0.0; the range check of
// the row count goes, and every value of the rows has 8 of them.
// CHECK:       module attributes {pygraph.transforms = [{location = "moe.py:5 (node nonzero)", pass = "pad-selections", what = "a selection of up to 8 rows by the data padded to 8: its 6 ops stay in graphs (estimated
// CHECK-LABEL: func.func @main
// CHECK:         %[[MASK:.*]] = torch.aten.eq.Scalar %arg1
// CHECK:         %[[PADDED:.*]] = torch.aten.nonzero_static %[[MASK]], %{{.*}}, %{{.*}} : !torch.vtensor<[8],i1>, !torch.int, !torch.int -> !torch.vtensor<[8,1],si64>
// CHECK:         %[[FIRST:.*]] = torch.aten.select.int %[[PADDED]], %{{.*}}, %{{.*}} : !torch.vtensor<[8,1],si64>, !torch.int, !torch.int -> !torch.vtensor<[8],si64>
// CHECK:         %[[VALID:.*]] = torch.aten.ge.Scalar %[[FIRST]], %{{.*}} : !torch.vtensor<[8],si64>, !torch.int -> !torch.vtensor<[8],i1>
// CHECK-NOT:     torch.aten._assert_scalar
// CHECK:         %[[ROWS:.*]] = torch.aten.squeeze.dim %[[PADDED]], %{{.*}} : !torch.vtensor<[8,1],si64>, !torch.int -> !torch.vtensor<[8],si64>
// CHECK:         %[[INDEX:.*]] = torch.aten.where.ScalarOther %[[VALID]], %[[ROWS]], %{{.*}} : !torch.vtensor<[8],i1>, !torch.vtensor<[8],si64>, !torch.int -> !torch.vtensor<[8],si64>
// CHECK:         %[[LIST:.*]] = torch.prim.ListConstruct %[[INDEX]]
// CHECK:         %[[X:.*]] = torch.aten.index.Tensor %arg0, %[[LIST]] : {{.*}} -> !torch.vtensor<[8,16],f32>
// CHECK:         %[[H:.*]] = torch.aten.linear %[[X]], %arg2, %arg3 : {{.*}} -> !torch.vtensor<[8,32],f32>
// CHECK:         %[[G:.*]] = torch.aten.relu %[[H]] : !torch.vtensor<[8,32],f32> -> !torch.vtensor<[8,32],f32>
// CHECK:         %[[SCATTERED:.*]] = torch.prim.ListConstruct %[[INDEX]]
// CHECK:         %[[ROWS_VIEW:.*]] = torch.aten.view %[[VALID]], %{{.*}} : !torch.vtensor<[8],i1>, !torch.list<int> -> !torch.vtensor<[8,1],i1>
// CHECK:         %[[NEG_ZERO:.*]] = torch.constant.float -0.000000e+00
// CHECK:         %[[VALUES:.*]] = torch.aten.where.ScalarOther %[[ROWS_VIEW]], %[[G]], %[[NEG_ZERO]] : {{.*}} -> !torch.vtensor<[8,32],f32>
// CHECK:         torch.aten.index_put %arg4, %[[SCATTERED]], %[[VALUES]], %{{.*}} : {{.*}} -> !torch.vtensor<[8,32],f32>
// CHECK-NOT:     torch.aten.nonzero {{.*}}?
func.func @main(%arg0: !torch.vtensor<[8,16],f32> {pygraph.device = "cuda", pygraph.role = "input"}, %arg1: !torch.vtensor<[8],si64> {pygraph.device = "cuda", pygraph.role = "input"}, %arg2: !torch.vtensor<[32,16],f32> {pygraph.device = "cuda", pygraph.role = "parameter"}, %arg3: !torch.vtensor<[32],f32> {pygraph.device = "cuda", pygraph.role = "parameter"}, %arg4: !torch.vtensor<[8,32],f32> {pygraph.device = "cuda", pygraph.role = "input"}) -> !torch.vtensor<[8,32],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int8 = torch.constant.int 8
  %true = torch.constant.bool true
  %0 = torch.aten.eq.Scalar %arg1, %int1 : !torch.vtensor<[8],si64>, !torch.int -> !torch.vtensor<[8],i1>
  %1 = torch.aten.nonzero %0 : !torch.vtensor<[8],i1> -> !torch.vtensor<[?,1],si64> loc(#nonzero)
  %2 = torch.aten.size.int %1, %int0 : !torch.vtensor<[?,1],si64>, !torch.int -> !torch.int
  %3 = torch.aten.le.int %2, %int8 : !torch.int, !torch.int -> !torch.bool
  %4 = torch.aten.Int.bool %3 : !torch.bool -> !torch.int
  %str = torch.constant.str "Runtime assertion failed for expression u0 <= 8 on node 'le'"
  torch.aten._assert_scalar %4, %str : !torch.int, !torch.str
  %5 = torch.aten.squeeze.dim %1, %int1 : !torch.vtensor<[?,1],si64>, !torch.int -> !torch.vtensor<[?],si64>
  %6 = torch.prim.ListConstruct %5 : (!torch.vtensor<[?],si64>) -> !torch.list<optional<vtensor>>
  %7 = torch.aten.index.Tensor %arg0, %6 : !torch.vtensor<[8,16],f32>, !torch.list<optional<vtensor>> -> !torch.vtensor<[?,16],f32>
  %8 = torch.aten.linear %7, %arg2, %arg3 : !torch.vtensor<[?,16],f32>, !torch.vtensor<[32,16],f32>, !torch.vtensor<[32],f32> -> !torch.vtensor<[?,32],f32>
  %9 = torch.aten.relu %8 : !torch.vtensor<[?,32],f32> -> !torch.vtensor<[?,32],f32>
  %10 = torch.prim.ListConstruct %5 : (!torch.vtensor<[?],si64>) -> !torch.list<optional<vtensor>>
  %11 = torch.aten.index_put %arg4, %10, %9, %true : !torch.vtensor<[8,32],f32>, !torch.list<optional<vtensor>>, !torch.vtensor<[?,32],f32>, !torch.bool -> !torch.vtensor<[8,32],f32>
  return %11 : !torch.vtensor<[8,32],f32>
}
#nonzero = loc("nonzero"("moe.py":5:0))

// -----

// A boolean mask's rows (`x[mask]`), scaled, added back where `nonzero(mask)` says (the frontend's
// spelling of `out.index_put_((mask,), v, accumulate=True)`): one selection, padded once; the gather
// reads the mask's coordinates, padded ones as 0.
// CHECK-LABEL: func.func @masked_rows
// CHECK:         %[[PADDED:.*]] = torch.aten.nonzero_static %arg1
// CHECK:         %[[VALID:.*]] = torch.aten.ge.Scalar
// CHECK:         %[[COORDINATE:.*]] = torch.aten.select.int %[[PADDED]]
// CHECK:         %[[INDEX:.*]] = torch.aten.where.ScalarOther %[[VALID]], %[[COORDINATE]]
// CHECK:         %[[LIST:.*]] = torch.prim.ListConstruct %[[INDEX]]
// CHECK:         torch.aten.index.Tensor %arg0, %[[LIST]] : {{.*}} -> !torch.vtensor<[6,4],f32>
// CHECK-NOT:     torch.aten.nonzero %
// CHECK:         torch.aten.index_put
func.func @masked_rows(%arg0: !torch.vtensor<[6,4],f32> {pygraph.device = "cuda", pygraph.role = "input"}, %arg1: !torch.vtensor<[6],i1> {pygraph.device = "cuda", pygraph.role = "input"}, %arg2: !torch.vtensor<[6,4],f32> {pygraph.device = "cuda", pygraph.role = "input"}) -> !torch.vtensor<[6,4],f32> {
  %int1 = torch.constant.int 1
  %float2 = torch.constant.float 2.000000e+00
  %true = torch.constant.bool true
  %0 = torch.prim.ListConstruct %arg1 : (!torch.vtensor<[6],i1>) -> !torch.list<optional<vtensor>>
  %1 = torch.aten.index.Tensor %arg0, %0 : !torch.vtensor<[6,4],f32>, !torch.list<optional<vtensor>> -> !torch.vtensor<[?,4],f32>
  %2 = torch.aten.mul.Scalar %1, %float2 : !torch.vtensor<[?,4],f32>, !torch.float -> !torch.vtensor<[?,4],f32>
  %3 = torch.aten.nonzero %arg1 : !torch.vtensor<[6],i1> -> !torch.vtensor<[?,1],si64>
  %4 = torch.aten.squeeze.dim %3, %int1 : !torch.vtensor<[?,1],si64>, !torch.int -> !torch.vtensor<[?],si64>
  %5 = torch.prim.ListConstruct %4 : (!torch.vtensor<[?],si64>) -> !torch.list<optional<vtensor>>
  %6 = torch.aten.index_put %arg2, %5, %2, %true : !torch.vtensor<[6,4],f32>, !torch.list<optional<vtensor>>, !torch.vtensor<[?,4],f32>, !torch.bool -> !torch.vtensor<[6,4],f32>
  return %6 : !torch.vtensor<[6,4],f32>
}

// -----

// Refused, and left to isolate-data-dependent: rows assigned elsewhere than where the mask took them
// (`out[perm[rows]] = v`: padded rows would write), the rows' maximum (which eager refuses for no rows),
// and a selection whose padded work at its bound
// (4096 rows through a 4096 x 4096 product) costs more than the host time it would save.
// CHECK-NOT:   pygraph.transforms
// CHECK-LABEL: func.func @refused
// CHECK:         torch.aten.nonzero %arg1 : !torch.vtensor<[8],i1> -> !torch.vtensor<[?,1],si64>
// CHECK:         torch.aten.nonzero %arg2 : !torch.vtensor<[8],i1> -> !torch.vtensor<[?,1],si64>
// CHECK:         torch.aten.nonzero %arg4 : !torch.vtensor<[4096],i1> -> !torch.vtensor<[?,1],si64>
func.func @refused(%arg0: !torch.vtensor<[8,16],f32> {pygraph.device = "cuda", pygraph.role = "input"}, %arg1: !torch.vtensor<[8],i1> {pygraph.device = "cuda", pygraph.role = "input"}, %arg2: !torch.vtensor<[8],i1> {pygraph.device = "cuda", pygraph.role = "input"}, %arg3: !torch.vtensor<[4096,4096],f32> {pygraph.device = "cuda", pygraph.role = "input"}, %arg4: !torch.vtensor<[4096],i1> {pygraph.device = "cuda", pygraph.role = "input"}, %arg5: !torch.vtensor<[8],si64> {pygraph.device = "cuda", pygraph.role = "input"}) -> (!torch.vtensor<[8,16],f32>, !torch.vtensor<[16],f32>, !torch.vtensor<[4096,4096],f32>) {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %false = torch.constant.bool false
  %true = torch.constant.bool true
  %none = torch.constant.none
  %0 = torch.aten.nonzero %arg1 : !torch.vtensor<[8],i1> -> !torch.vtensor<[?,1],si64>
  %1 = torch.aten.squeeze.dim %0, %int1 : !torch.vtensor<[?,1],si64>, !torch.int -> !torch.vtensor<[?],si64>
  %2 = torch.prim.ListConstruct %1 : (!torch.vtensor<[?],si64>) -> !torch.list<optional<vtensor>>
  %3 = torch.aten.index.Tensor %arg0, %2 : !torch.vtensor<[8,16],f32>, !torch.list<optional<vtensor>> -> !torch.vtensor<[?,16],f32>
  %4 = torch.aten.tanh %3 : !torch.vtensor<[?,16],f32> -> !torch.vtensor<[?,16],f32>
  %perm = torch.aten.index.Tensor %arg5, %2 : !torch.vtensor<[8],si64>, !torch.list<optional<vtensor>> -> !torch.vtensor<[?],si64>
  %5 = torch.prim.ListConstruct %perm : (!torch.vtensor<[?],si64>) -> !torch.list<optional<vtensor>>
  %6 = torch.aten.index_put %arg0, %5, %4, %false : !torch.vtensor<[8,16],f32>, !torch.list<optional<vtensor>>, !torch.vtensor<[?,16],f32>, !torch.bool -> !torch.vtensor<[8,16],f32>
  %7 = torch.aten.nonzero %arg2 : !torch.vtensor<[8],i1> -> !torch.vtensor<[?,1],si64>
  %8 = torch.aten.squeeze.dim %7, %int1 : !torch.vtensor<[?,1],si64>, !torch.int -> !torch.vtensor<[?],si64>
  %9 = torch.prim.ListConstruct %8 : (!torch.vtensor<[?],si64>) -> !torch.list<optional<vtensor>>
  %10 = torch.aten.index.Tensor %arg0, %9 : !torch.vtensor<[8,16],f32>, !torch.list<optional<vtensor>> -> !torch.vtensor<[?,16],f32>
  %dims = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %11 = torch.aten.amax %10, %dims, %false : !torch.vtensor<[?,16],f32>, !torch.list<int>, !torch.bool -> !torch.vtensor<[16],f32>
  %12 = torch.aten.nonzero %arg4 : !torch.vtensor<[4096],i1> -> !torch.vtensor<[?,1],si64>
  %13 = torch.aten.squeeze.dim %12, %int1 : !torch.vtensor<[?,1],si64>, !torch.int -> !torch.vtensor<[?],si64>
  %14 = torch.prim.ListConstruct %13 : (!torch.vtensor<[?],si64>) -> !torch.list<optional<vtensor>>
  %15 = torch.aten.index.Tensor %arg3, %14 : !torch.vtensor<[4096,4096],f32>, !torch.list<optional<vtensor>> -> !torch.vtensor<[?,4096],f32>
  %16 = torch.aten.mm %15, %arg3 : !torch.vtensor<[?,4096],f32>, !torch.vtensor<[4096,4096],f32> -> !torch.vtensor<[?,4096],f32>
  %17 = torch.prim.ListConstruct %13 : (!torch.vtensor<[?],si64>) -> !torch.list<optional<vtensor>>
  %18 = torch.aten.index_put %arg3, %17, %16, %true : !torch.vtensor<[4096,4096],f32>, !torch.list<optional<vtensor>>, !torch.vtensor<[?,4096],f32>, !torch.bool -> !torch.vtensor<[4096,4096],f32>
  return %6, %11, %18 : !torch.vtensor<[8,16],f32>, !torch.vtensor<[16],f32>, !torch.vtensor<[4096,4096],f32>
}

// -----

// Switch Transformers' `out[take] = expert(h[take])` with `take` a [batch, tokens] mask: the gather and
// the assignment index by the mask itself; both read its two coordinates, and the assignment becomes a
// sum into negative zeros kept where the mask is true.
// CHECK-LABEL: func.func @assigned_by_mask
// CHECK:         %[[PADDED:.*]] = torch.aten.nonzero_static %arg1, {{.*}} -> !torch.vtensor<[6,2],si64>
// CHECK:         %[[I:.*]] = torch.aten.where.ScalarOther {{.*}} -> !torch.vtensor<[6],si64>
// CHECK:         %[[J:.*]] = torch.aten.where.ScalarOther {{.*}} -> !torch.vtensor<[6],si64>
// CHECK:         %[[AT:.*]] = torch.prim.ListConstruct %[[I]], %[[J]]
// CHECK:         %[[ROWS:.*]] = torch.aten.index.Tensor %arg0, %[[AT]] : {{.*}} -> !torch.vtensor<[6,4],f32>
// CHECK:         %[[V:.*]] = torch.aten.tanh %[[ROWS]]
// CHECK:         %[[PUT:.*]] = torch.prim.ListConstruct %[[I]], %[[J]]
// CHECK:         %[[VALUES:.*]] = torch.aten.where.ScalarOther %{{.*}}, %[[V]], %{{.*}} : {{.*}} -> !torch.vtensor<[6,4],f32>
// CHECK:         %[[ZEROS:.*]] = torch.aten.full_like %arg0, %{{.*}}
// CHECK:         %[[SUM:.*]] = torch.aten.index_put %[[ZEROS]], %[[PUT]], %[[VALUES]], %{{.*}} :
// CHECK:         %[[TAKE:.*]] = torch.aten.view %arg1, {{.*}} -> !torch.vtensor<[2,3,1],i1>
// CHECK:         %[[OUT:.*]] = torch.aten.where.self %[[TAKE]], %[[SUM]], %arg0
// CHECK:         return %[[OUT]]
func.func @assigned_by_mask(%arg0: !torch.vtensor<[2,3,4],f32> {pygraph.device = "cuda", pygraph.role = "input"}, %arg1: !torch.vtensor<[2,3],i1> {pygraph.device = "cuda", pygraph.role = "input"}) -> !torch.vtensor<[2,3,4],f32> {
  %false = torch.constant.bool false
  %0 = torch.prim.ListConstruct %arg1 : (!torch.vtensor<[2,3],i1>) -> !torch.list<optional<vtensor>>
  %1 = torch.aten.index.Tensor %arg0, %0 : !torch.vtensor<[2,3,4],f32>, !torch.list<optional<vtensor>> -> !torch.vtensor<[?,4],f32>
  %2 = torch.aten.tanh %1 : !torch.vtensor<[?,4],f32> -> !torch.vtensor<[?,4],f32>
  %3 = torch.prim.ListConstruct %arg1 : (!torch.vtensor<[2,3],i1>) -> !torch.list<optional<vtensor>>
  %4 = torch.aten.index_put %arg0, %3, %2, %false : !torch.vtensor<[2,3,4],f32>, !torch.list<optional<vtensor>>, !torch.vtensor<[?,4],f32>, !torch.bool -> !torch.vtensor<[2,3,4],f32>
  return %4 : !torch.vtensor<[2,3,4],f32>
}

// -----

// The selected rows' mean over them: a sum of their values with -0.0 in the padded rows, divided by the
// count of selected rows (the mask's nonzero_static rows that are not -1).
// CHECK-LABEL: func.func @pooled
// CHECK:         %[[PADDED:.*]] = torch.aten.nonzero_static %arg1
// CHECK:         %[[VALID:.*]] = torch.aten.ge.Scalar
// CHECK:         %[[ROWS:.*]] = torch.aten.index.Tensor %arg0, {{.*}} -> !torch.vtensor<[8,16],f32>
// CHECK:         %[[VIEW:.*]] = torch.aten.view %[[VALID]], {{.*}} -> !torch.vtensor<[8,1],i1>
// CHECK:         %[[ZEROED:.*]] = torch.aten.where.ScalarOther %[[VIEW]], %[[ROWS]], %{{.*}} : {{.*}} -> !torch.vtensor<[8,16],f32>
// CHECK:         %[[SUM:.*]] = torch.aten.sum.dim_IntList %[[ZEROED]], {{.*}} -> !torch.vtensor<[16],f32>
// CHECK:         %[[COUNT:.*]] = torch.aten.sum %[[VALID]], {{.*}} -> !torch.vtensor<[],si64>
// CHECK:         %[[MEAN:.*]] = torch.aten.div.Tensor %[[SUM]], %[[COUNT]] : {{.*}} -> !torch.vtensor<[16],f32>
// CHECK:         return %[[MEAN]]
func.func @pooled(%arg0: !torch.vtensor<[8,16],f32> {pygraph.device = "cuda", pygraph.role = "input"}, %arg1: !torch.vtensor<[8],i1> {pygraph.device = "cuda", pygraph.role = "input"}) -> !torch.vtensor<[16],f32> {
  %int0 = torch.constant.int 0
  %false = torch.constant.bool false
  %none = torch.constant.none
  %0 = torch.prim.ListConstruct %arg1 : (!torch.vtensor<[8],i1>) -> !torch.list<optional<vtensor>>
  %1 = torch.aten.index.Tensor %arg0, %0 : !torch.vtensor<[8,16],f32>, !torch.list<optional<vtensor>> -> !torch.vtensor<[?,16],f32>
  %dims = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %2 = torch.aten.mean.dim %1, %dims, %false, %none : !torch.vtensor<[?,16],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[16],f32>
  return %2 : !torch.vtensor<[16],f32>
}
