// RUN: pygraph-opt %s -p move-scales --split-input-file | filecheck %s

// DeBERTa's scores, bmm(q, k.transpose(-1, -2) / 8.0) with 8.0 a folded constant (NumToTensor), viewed per
// head and masked: the division moves after the view, where masked_fill's kernel computes it, and bmm
// reads the transposed keys as they are.
// CHECK-LABEL: func.func @main
// CHECK:         %[[EIGHT:.*]] = torch.prim.NumToTensor.Scalar
// CHECK:         %[[KT:.*]] = torch.aten.transpose.int %arg1
// CHECK-NEXT:    %[[S:.*]] = torch.aten.bmm %arg0, %[[KT]]
// CHECK:         %[[V:.*]] = torch.aten.view %[[S]]
// CHECK-NEXT:    %[[D:.*]] = torch.aten.div.Tensor %[[V]], %[[EIGHT]] {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[1, 2, 4, 4], [32, 16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[1,2,4,4],f32>, !torch.vtensor<[],f32> -> !torch.vtensor<[1,2,4,4],f32>
// CHECK-NEXT:    torch.aten.masked_fill.Scalar %[[D]], %arg2
func.func @main(%q: !torch.vtensor<[2,4,4],f32>, %k: !torch.vtensor<[2,4,4],f32>, %mask: !torch.vtensor<[1,1,4,4],i1>) -> !torch.vtensor<[1,2,4,4],f32> {
  %int-2 = torch.constant.int -2 {pygraph.class = "scalar"}
  %int-1 = torch.constant.int -1 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %int4 = torch.constant.int 4 {pygraph.class = "scalar"}
  %float8 = torch.constant.float 8.000000e+00 {pygraph.class = "scalar"}
  %min = torch.constant.float -3.4028234663852886E+38 {pygraph.class = "scalar"}
  %eight = torch.prim.NumToTensor.Scalar %float8 {pygraph.class = "constant"} : !torch.float -> !torch.vtensor<[],f32>
  %0 = torch.aten.transpose.int %k, %int-1, %int-2 {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [16, 1, 4], 0 : i64, f32>]} : !torch.vtensor<[2,4,4],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,4,4],f32>
  %1 = torch.aten.div.Tensor %0, %eight {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [16, 1, 4], 0 : i64, f32>]} : !torch.vtensor<[2,4,4],f32>, !torch.vtensor<[],f32> -> !torch.vtensor<[2,4,4],f32>
  %2 = torch.aten.bmm %q, %1 {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,4],f32>, !torch.vtensor<[2,4,4],f32> -> !torch.vtensor<[2,4,4],f32>
  %heads = torch.prim.ListConstruct %int-1, %int2, %int4, %int4 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.aten.view %2, %heads {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[1, 2, 4, 4], [32, 16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,4],f32>, !torch.list<int> -> !torch.vtensor<[1,2,4,4],f32>
  %4 = torch.aten.masked_fill.Scalar %3, %mask, %min {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[1, 2, 4, 4], [32, 16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[1,2,4,4],f32>, !torch.vtensor<[1,1,4,4],i1>, !torch.float -> !torch.vtensor<[1,2,4,4],f32>
  return %4 : !torch.vtensor<[1,2,4,4],f32>
}

// -----

// A scale of the first operand by a Python number, the product read by a softmax: the scale moves
// between them (one kernel: "softmax after a scale").
// CHECK-LABEL: func.func @main
// CHECK:         %[[P:.*]] = torch.aten.mm %arg0, %arg1
// CHECK-NEXT:    %[[M:.*]] = torch.aten.mul.Scalar %[[P]], %{{.*}} {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]}
// CHECK-NEXT:    torch.aten.softmax.int %[[M]]
func.func @main(%q: !torch.vtensor<[4,8],f32>, %k: !torch.vtensor<[8,4],f32>) -> !torch.vtensor<[4,4],f32> {
  %none = torch.constant.none {pygraph.class = "scalar"}
  %int-1 = torch.constant.int -1 {pygraph.class = "scalar"}
  %eighth = torch.constant.float 1.250000e-01 {pygraph.class = "scalar"}
  %0 = torch.aten.mul.Scalar %q, %eighth {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 8], [8, 1], 0 : i64, f32>]} : !torch.vtensor<[4,8],f32>, !torch.float -> !torch.vtensor<[4,8],f32>
  %1 = torch.aten.mm %0, %k {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,8],f32>, !torch.vtensor<[8,4],f32> -> !torch.vtensor<[4,4],f32>
  %2 = torch.aten.softmax.int %1, %int-1, %none {pygraph.class = "reduction", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.int, !torch.none -> !torch.vtensor<[4,4],f32>
  return %2 : !torch.vtensor<[4,4],f32>
}

// -----

// Scales that stay: by sqrt(48) (not a power of two: the rounding would differ), in float16 (whose range
// unscaled scores may leave), of an operand the scale's kernel reads at strides ATen would copy inside the
// product (every other column), of an operand something else reads too, and of a product another library
// op reads (no kernel would take the scale).
// CHECK-LABEL: func.func @main
// CHECK:         %[[A:.*]] = torch.aten.div.Scalar %arg0
// CHECK-NEXT:    torch.aten.mm %[[A]], %arg1
// CHECK:         %[[B:.*]] = torch.aten.div.Scalar %arg2
// CHECK-NEXT:    torch.aten.mm %[[B]], %arg3
// CHECK:         %[[C:.*]] = torch.aten.div.Scalar %{{.*}}
// CHECK-NEXT:    torch.aten.mm %[[C]], %arg1
// CHECK:         %[[D:.*]] = torch.aten.div.Scalar %arg0
// CHECK-NEXT:    torch.aten.mm %[[D]], %arg1
// CHECK:         %[[E:.*]] = torch.aten.div.Scalar %arg0
// CHECK-NEXT:    %[[F:.*]] = torch.aten.mm %[[E]], %arg1
// CHECK-NEXT:    torch.aten.mm %[[F]], %arg1
func.func @main(%x: !torch.vtensor<[4,4],f32>, %w: !torch.vtensor<[4,4],f32>, %h: !torch.vtensor<[4,4],f16>, %hw: !torch.vtensor<[4,4],f16>, %wide: !torch.vtensor<[4,8],f32>) -> (!torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f16>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>) {
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %int8 = torch.constant.int 8 {pygraph.class = "scalar"}
  %root48 = torch.constant.float 6.9282032302755088 {pygraph.class = "scalar"}
  %float8 = torch.constant.float 8.000000e+00 {pygraph.class = "scalar"}
  %0 = torch.aten.div.Scalar %x, %root48 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.float -> !torch.vtensor<[4,4],f32>
  %1 = torch.aten.mm %0, %w {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %2 = torch.aten.relu %1 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %3 = torch.aten.div.Scalar %h, %float8 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f16>]} : !torch.vtensor<[4,4],f16>, !torch.float -> !torch.vtensor<[4,4],f16>
  %4 = torch.aten.mm %3, %hw {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f16>]} : !torch.vtensor<[4,4],f16>, !torch.vtensor<[4,4],f16> -> !torch.vtensor<[4,4],f16>
  %5 = torch.aten.relu %4 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f16>]} : !torch.vtensor<[4,4],f16> -> !torch.vtensor<[4,4],f16>
  %6 = torch.aten.slice.Tensor %wide, %int1, %int0, %int8, %int2 {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[4, 4], [8, 2], 0 : i64, f32>]} : !torch.vtensor<[4,8],f32>, !torch.int, !torch.int, !torch.int, !torch.int -> !torch.vtensor<[4,4],f32>
  %7 = torch.aten.div.Scalar %6, %float8 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.float -> !torch.vtensor<[4,4],f32>
  %8 = torch.aten.mm %7, %w {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %9 = torch.aten.relu %8 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %10 = torch.aten.div.Scalar %x, %float8 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.float -> !torch.vtensor<[4,4],f32>
  %11 = torch.aten.mm %10, %w {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %12 = torch.aten.relu %11 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %13 = torch.aten.div.Scalar %x, %float8 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.float -> !torch.vtensor<[4,4],f32>
  %14 = torch.aten.mm %13, %w {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %15 = torch.aten.mm %14, %w {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  return %2, %5, %9, %12, %10, %15 : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f16>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>
}
