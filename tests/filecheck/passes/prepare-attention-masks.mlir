// RUN: pygraph-opt %s -p prepare-attention-masks --split-input-file | filecheck %s

// A boolean [1, 1, 32, 32] mask read by two attention calls: one dense additive mask [2, 4, 32, 32] in
// q's dtype, computed once before the first call, and both calls read it; their results take the
// layouts the frontend found ATen gives with that mask (`pygraph.dense_mask_layouts`), and the
// transpose of the second result follows.
// CHECK-LABEL: func.func @main
// CHECK:         %[[SIZES:.*]] = torch.prim.ListConstruct %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {pygraph.class = "scalar"}
// CHECK:         %[[WIDE:.*]] = torch.aten.expand %arg3, %[[SIZES]], %{{.*}} {pygraph.class = "view"} : !torch.vtensor<[1,1,32,32],i1>, !torch.list<int>, !torch.bool -> !torch.vtensor<[2,4,32,32],i1>
// CHECK:         %[[MASK:.*]] = torch.aten.where.Scalar %[[WIDE]], %{{.*}}, %{{.*}} {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[2, 4, 32, 32], [4096, 1024, 32, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,32,32],i1>, !torch.float, !torch.float -> !torch.vtensor<[2,4,32,32],f32>
// CHECK-NEXT:    %[[A:.*]] = torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %[[MASK]], {{.*}}pygraph.layouts = [#pygraph.layout<[2, 4, 32, 16], [2048, 16, 64, 1], 0 : i64, f32>]
// CHECK-NEXT:    %[[B:.*]] = torch.aten.scaled_dot_product_attention %[[A]], %arg1, %arg2, %[[MASK]],
// CHECK:         torch.aten.transpose.int %[[B]], %{{.*}}, %{{.*}} {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[2, 32, 4, 16], [2048, 64, 16, 1], 0 : i64, f32>]}
func.func @main(%q: !torch.vtensor<[2,4,32,16],f32>, %k: !torch.vtensor<[2,4,32,16],f32>, %v: !torch.vtensor<[2,4,32,16],f32>, %m: !torch.vtensor<[1,1,32,32],i1>) -> !torch.vtensor<[2,32,4,16],f32> {
  %float0 = torch.constant.float 0.000000e+00 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %none = torch.constant.none {pygraph.class = "scalar"}
  %0 = torch.aten.scaled_dot_product_attention %q, %k, %v, %m, %float0, %false, %none, %false {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[2, 4, 32, 16], [2048, 512, 16, 1], 0 : i64, f32>], pygraph.dense_mask_layouts = [#pygraph.layout<[2, 4, 32, 16], [2048, 16, 64, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[1,1,32,32],i1>, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,32,16],f32>
  %1 = torch.aten.scaled_dot_product_attention %0, %k, %v, %m, %float0, %false, %none, %false {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[2, 4, 32, 16], [2048, 512, 16, 1], 0 : i64, f32>], pygraph.dense_mask_layouts = [#pygraph.layout<[2, 4, 32, 16], [2048, 16, 64, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[1,1,32,32],i1>, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,32,16],f32>
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %2 = torch.aten.transpose.int %1, %int1, %int2 {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[2, 32, 4, 16], [2048, 16, 512, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,32,16],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,32,4,16],f32>
  return %2 : !torch.vtensor<[2,32,4,16],f32>
}

// -----

// A float mask broadcast along heads: expanded and copied into the dense form (no conversion).
// CHECK-LABEL: func.func @main
// CHECK:         %[[WIDE:.*]] = torch.aten.expand %arg3, %{{.*}} : !torch.vtensor<[2,1,1,32],f32>, !torch.list<int>, !torch.bool -> !torch.vtensor<[2,4,32,32],f32>
// CHECK:         %[[MASK:.*]] = torch.aten.clone %[[WIDE]], %{{.*}} {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[2, 4, 32, 32], [4096, 1024, 32, 1], 0 : i64, f32>]}
// CHECK-NEXT:    torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %[[MASK]],
func.func @main(%q: !torch.vtensor<[2,4,32,16],f32>, %k: !torch.vtensor<[2,4,32,16],f32>, %v: !torch.vtensor<[2,4,32,16],f32>, %m: !torch.vtensor<[2,1,1,32],f32>) -> !torch.vtensor<[2,4,32,16],f32> {
  %float0 = torch.constant.float 0.000000e+00 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %none = torch.constant.none {pygraph.class = "scalar"}
  %0 = torch.aten.scaled_dot_product_attention %q, %k, %v, %m, %float0, %false, %none, %false {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[2, 4, 32, 16], [2048, 512, 16, 1], 0 : i64, f32>], pygraph.dense_mask_layouts = [#pygraph.layout<[2, 4, 32, 16], [2048, 16, 64, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,1,1,32],f32>, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,32,16],f32>
  return %0 : !torch.vtensor<[2,4,32,16],f32>
}

// -----

// Unchanged: a mask already dense in q's dtype, a key length that is not a multiple of 16 (ATen pads
// it), a call without a mask, and a boolean mask without the frontend's dense-mask layouts (the
// result's strides would be unknown).
// CHECK-LABEL: func.func @main
// CHECK-NOT:     torch.aten.expand
// CHECK-NOT:     torch.aten.where
// CHECK:         %[[DENSE:.*]] = torch.aten.clone %arg3
// CHECK-NEXT:    torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %[[DENSE]],
// CHECK:         torch.aten.scaled_dot_product_attention %arg0, %arg4, %arg4, %arg5,
// CHECK:         torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %none,
// CHECK:         torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %arg6,
func.func @main(%q: !torch.vtensor<[2,4,32,16],f32>, %k: !torch.vtensor<[2,4,32,16],f32>, %v: !torch.vtensor<[2,4,32,16],f32>, %dense: !torch.vtensor<[2,4,32,32],f32>,
                %k20: !torch.vtensor<[2,4,20,16],f32>, %m20: !torch.vtensor<[1,1,32,20],i1>, %m: !torch.vtensor<[1,1,32,32],i1>) -> (!torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>) {
  %float0 = torch.constant.float 0.000000e+00 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %none = torch.constant.none {pygraph.class = "scalar"}
  %0 = torch.aten.clone %dense, %none {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[2, 4, 32, 32], [4096, 1024, 32, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,32,32],f32>, !torch.none -> !torch.vtensor<[2,4,32,32],f32>
  %1 = torch.aten.scaled_dot_product_attention %q, %k, %v, %0, %float0, %false, %none, %false {pygraph.class = "library"} : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,32],f32>, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,32,16],f32>
  %2 = torch.aten.scaled_dot_product_attention %q, %k20, %k20, %m20, %float0, %false, %none, %false {pygraph.class = "library"} : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,20,16],f32>, !torch.vtensor<[2,4,20,16],f32>, !torch.vtensor<[1,1,32,20],i1>, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,32,16],f32>
  %3 = torch.aten.scaled_dot_product_attention %q, %k, %v, %none, %float0, %false, %none, %false {pygraph.class = "library"} : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.none, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,32,16],f32>
  %4 = torch.aten.scaled_dot_product_attention %q, %k, %v, %m, %float0, %false, %none, %false {pygraph.class = "library"} : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[1,1,32,32],i1>, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,32,16],f32>
  return %1, %2, %3, %4 : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>
}
// -----
// Unchanged: with the dense mask's layouts, the `view` that reads the result could not view it.
// CHECK-LABEL: func.func @main
// CHECK-NOT:     torch.aten.where
// CHECK:         torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %arg3,
func.func @main(%q: !torch.vtensor<[2,4,32,16],f32>, %k: !torch.vtensor<[2,4,32,16],f32>, %v: !torch.vtensor<[2,4,32,16],f32>, %m: !torch.vtensor<[1,1,32,32],i1>) -> !torch.vtensor<[2,2048],f32> {
  %float0 = torch.constant.float 0.000000e+00 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %none = torch.constant.none {pygraph.class = "scalar"}
  %0 = torch.aten.scaled_dot_product_attention %q, %k, %v, %m, %float0, %false, %none, %false {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[2, 4, 32, 16], [2048, 512, 16, 1], 0 : i64, f32>], pygraph.dense_mask_layouts = [#pygraph.layout<[2, 4, 32, 16], [2048, 16, 64, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[1,1,32,32],i1>, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,32,16],f32>
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %int2048 = torch.constant.int 2048 {pygraph.class = "scalar"}
  %sizes = torch.prim.ListConstruct %int2, %int2048 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.aten.view %0, %sizes {pygraph.class = "view"} : !torch.vtensor<[2,4,32,16],f32>, !torch.list<int> -> !torch.vtensor<[2,2048],f32>
  return %1 : !torch.vtensor<[2,2048],f32>
}

// -----

// An attention routed to the generated kernel (class "attention") reads its mask as it is.
// CHECK-LABEL: func.func @main
// CHECK-NOT:     torch.aten.where.Scalar
// CHECK:         torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %arg3,
func.func @main(%q: !torch.vtensor<[2,4,32,16],f32>, %k: !torch.vtensor<[2,4,32,16],f32>, %v: !torch.vtensor<[2,4,32,16],f32>, %m: !torch.vtensor<[1,1,32,32],i1>) -> !torch.vtensor<[2,4,32,16],f32> {
  %float0 = torch.constant.float 0.000000e+00 {pygraph.class = "scalar"}
  %false = torch.constant.bool false {pygraph.class = "scalar"}
  %none = torch.constant.none {pygraph.class = "scalar"}
  %0 = torch.aten.scaled_dot_product_attention %q, %k, %v, %m, %float0, %false, %none, %false {pygraph.attention_kernel = "ieee", pygraph.class = "attention", pygraph.layouts = [#pygraph.layout<[2, 4, 32, 16], [2048, 512, 16, 1], 0 : i64, f32>], pygraph.dense_mask_layouts = [#pygraph.layout<[2, 4, 32, 16], [2048, 16, 64, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[1,1,32,32],i1>, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,32,16],f32>
  return %0 : !torch.vtensor<[2,4,32,16],f32>
}
