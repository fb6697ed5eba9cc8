// RUN: pygraph-opt %s -p elide-clones --split-input-file | filecheck %s

// Hugging Face's transpose_for_scores of one sequence: x.view(1, 4, 2, 4).permute(0, 2, 1, 3).contiguous()
// .view(-1, 4, 4), the queries read as they are and the keys transposed by bmm. The copies go: the views
// read the permuted heads (queries [2, 4, 4] at strides [4, 8, 1], rows of 4 values 8 apart; keys
// transposed at [4, 1, 8], columns 8 apart), which cuBLAS's strided batched GEMM reads as they are. The
// metadata check on the copy reads the source.
// CHECK-LABEL: func.func @main
// CHECK-NOT:     torch.aten.clone
// CHECK:         %[[Q:.*]] = torch.aten.permute %{{.*}} {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[1, 2, 4, 4], [32, 4, 8, 1], 0 : i64, f32>]}
// CHECK:         torch.aten._assert_tensor_metadata %[[Q]]
// CHECK:         %[[QV:.*]] = torch.aten.view %[[Q]], %{{.*}} {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [4, 8, 1], 0 : i64, f32>]}
// CHECK:         %[[K:.*]] = torch.aten.permute %{{.*}} {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[1, 2, 4, 4], [32, 4, 8, 1], 0 : i64, f32>]}
// CHECK:         %[[KV:.*]] = torch.aten.view %[[K]], %{{.*}} {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [4, 8, 1], 0 : i64, f32>]}
// CHECK:         %[[KT:.*]] = torch.aten.transpose.int %[[KV]], %{{.*}}, %{{.*}} {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [4, 1, 8], 0 : i64, f32>]}
// CHECK:         torch.aten.bmm %[[QV]], %[[KT]]
// CHECK-NOT:     torch.aten.clone
func.func @main(%x: !torch.vtensor<[1,4,8],f32>, %y: !torch.vtensor<[1,4,8],f32>) -> !torch.vtensor<[2,4,4],f32> {
  %none = torch.constant.none {pygraph.class = "scalar"}
  %int-2 = torch.constant.int -2 {pygraph.class = "scalar"}
  %int-1 = torch.constant.int -1 {pygraph.class = "scalar"}
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %int3 = torch.constant.int 3 {pygraph.class = "scalar"}
  %int4 = torch.constant.int 4 {pygraph.class = "scalar"}
  %int6 = torch.constant.int 6 {pygraph.class = "scalar"}
  %heads = torch.prim.ListConstruct %int1, %int4, %int2, %int4 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %order = torch.prim.ListConstruct %int0, %int2, %int1, %int3 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %merged = torch.prim.ListConstruct %int-1, %int4, %int4 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.view %x, %heads {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[1, 4, 2, 4], [32, 8, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[1,4,8],f32>, !torch.list<int> -> !torch.vtensor<[1,4,2,4],f32>
  %1 = torch.aten.permute %0, %order {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[1, 2, 4, 4], [32, 4, 8, 1], 0 : i64, f32>]} : !torch.vtensor<[1,4,2,4],f32>, !torch.list<int> -> !torch.vtensor<[1,2,4,4],f32>
  %2 = torch.aten.clone %1, %int0 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[1, 2, 4, 4], [32, 16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[1,2,4,4],f32>, !torch.int -> !torch.vtensor<[1,2,4,4],f32>
  torch.aten._assert_tensor_metadata %2, %none, %none, %int6, %none, %none {pygraph.class = "nop"} : !torch.vtensor<[1,2,4,4],f32>, !torch.none, !torch.none, !torch.int, !torch.none, !torch.none
  %3 = torch.aten.view %2, %merged {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[1,2,4,4],f32>, !torch.list<int> -> !torch.vtensor<[2,4,4],f32>
  %4 = torch.aten.view %y, %heads {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[1, 4, 2, 4], [32, 8, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[1,4,8],f32>, !torch.list<int> -> !torch.vtensor<[1,4,2,4],f32>
  %5 = torch.aten.permute %4, %order {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[1, 2, 4, 4], [32, 4, 8, 1], 0 : i64, f32>]} : !torch.vtensor<[1,4,2,4],f32>, !torch.list<int> -> !torch.vtensor<[1,2,4,4],f32>
  %6 = torch.aten.clone %5, %int0 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[1, 2, 4, 4], [32, 16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[1,2,4,4],f32>, !torch.int -> !torch.vtensor<[1,2,4,4],f32>
  %7 = torch.aten.view %6, %merged {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[1,2,4,4],f32>, !torch.list<int> -> !torch.vtensor<[2,4,4],f32>
  %8 = torch.aten.transpose.int %7, %int-1, %int-2 {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [16, 1, 4], 0 : i64, f32>]} : !torch.vtensor<[2,4,4],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,4,4],f32>
  %9 = torch.aten.bmm %3, %8 {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,4],f32>, !torch.vtensor<[2,4,4],f32> -> !torch.vtensor<[2,4,4],f32>
  return %9 : !torch.vtensor<[2,4,4],f32>
}

// -----

// Two sequences: merging their heads into one batch dim (view(-1, 4, 4)) needs the copy (eager's `view`
// fails on the permuted strides), so it stays.
// CHECK-LABEL: func.func @main
// CHECK:         %[[C:.*]] = torch.aten.clone
// CHECK:         torch.aten.view %[[C]], %{{.*}} {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[4, 4, 4], [16, 4, 1], 0 : i64, f32>]}
func.func @main(%x: !torch.vtensor<[2,4,8],f32>, %k: !torch.vtensor<[4,4,4],f32>) -> !torch.vtensor<[4,4,4],f32> {
  %int-1 = torch.constant.int -1 {pygraph.class = "scalar"}
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %int3 = torch.constant.int 3 {pygraph.class = "scalar"}
  %int4 = torch.constant.int 4 {pygraph.class = "scalar"}
  %heads = torch.prim.ListConstruct %int2, %int4, %int2, %int4 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %order = torch.prim.ListConstruct %int0, %int2, %int1, %int3 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %merged = torch.prim.ListConstruct %int-1, %int4, %int4 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.view %x, %heads {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[2, 4, 2, 4], [32, 8, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,8],f32>, !torch.list<int> -> !torch.vtensor<[2,4,2,4],f32>
  %1 = torch.aten.permute %0, %order {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[2, 2, 4, 4], [32, 4, 8, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,2,4],f32>, !torch.list<int> -> !torch.vtensor<[2,2,4,4],f32>
  %2 = torch.aten.clone %1, %int0 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[2, 2, 4, 4], [32, 16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[2,2,4,4],f32>, !torch.int -> !torch.vtensor<[2,2,4,4],f32>
  %3 = torch.aten.view %2, %merged {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[4, 4, 4], [16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[2,2,4,4],f32>, !torch.list<int> -> !torch.vtensor<[4,4,4],f32>
  %4 = torch.aten.bmm %3, %k {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[4, 4, 4], [16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4,4],f32>, !torch.vtensor<[4,4,4],f32> -> !torch.vtensor<[4,4,4],f32>
  return %4 : !torch.vtensor<[4,4,4],f32>
}

// -----

// Every other second column: neither stride of the matrices is 1, so ATen would copy the operand inside
// the product; the copy stays, a kernel of pygraph's.
// CHECK-LABEL: func.func @main
// CHECK:         %[[C:.*]] = torch.aten.clone
// CHECK:         torch.aten.mm %[[C]], %arg1
func.func @main(%x: !torch.vtensor<[4,8],f32>, %w: !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[4,4],f32> {
  %none = torch.constant.none {pygraph.class = "scalar"}
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %int8 = torch.constant.int 8 {pygraph.class = "scalar"}
  %0 = torch.aten.slice.Tensor %x, %int1, %int0, %int8, %int2 {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[4, 4], [8, 2], 0 : i64, f32>]} : !torch.vtensor<[4,8],f32>, !torch.int, !torch.int, !torch.int, !torch.int -> !torch.vtensor<[4,4],f32>
  %1 = torch.aten.clone %0, %none {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.none -> !torch.vtensor<[4,4],f32>
  %2 = torch.aten.mm %1, %w {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  return %2 : !torch.vtensor<[4,4],f32>
}

// -----

// A copy that a kernel reads too, one the program returns, one another library op reads: they stay.
// CHECK-LABEL: func.func @main
// CHECK-COUNT-3: torch.aten.clone
func.func @main(%x: !torch.vtensor<[4,4],f32>, %w: !torch.vtensor<[4,4],f32>, %b: !torch.vtensor<[4],f32>) -> (!torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>) {
  %none = torch.constant.none {pygraph.class = "scalar"}
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %0 = torch.aten.transpose.int %x, %int0, %int1 {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[4, 4], [1, 4], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.int, !torch.int -> !torch.vtensor<[4,4],f32>
  %1 = torch.aten.clone %0, %none {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.none -> !torch.vtensor<[4,4],f32>
  %2 = torch.aten.mm %1, %w {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %3 = torch.aten.relu %1 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %4 = torch.aten.clone %0, %none {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.none -> !torch.vtensor<[4,4],f32>
  %5 = torch.aten.clone %0, %none {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.none -> !torch.vtensor<[4,4],f32>
  %6 = torch.aten.linear %5, %w, %b {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4],f32> -> !torch.vtensor<[4,4],f32>
  return %2, %3, %4, %6 : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>
}
