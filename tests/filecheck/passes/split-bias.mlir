// RUN: pygraph-opt %s -p split-bias --split-input-file | filecheck %s --check-prefixes=CHECK,DEFAULT
// RUN: pygraph-opt %s -p 'split-bias{matmuls=true}' --split-input-file | filecheck %s --check-prefixes=CHECK,MATMUL
// RUN: pygraph-opt %s -p 'split-bias{addmm=false}' --split-input-file | filecheck %s --check-prefixes=KEEP
// RUN: pygraph-opt %s -p 'split-bias{min-rows=8192}' --split-input-file | filecheck %s --check-prefixes=FEW

// linear + GELU: with matmuls=true the bias becomes an add after the linear, which fuse-pointwise puts in
// GELU's kernel; by default the linear keeps its bias (cuBLASLt adds it for free).
// DEFAULT-LABEL: func.func @main
// DEFAULT-NEXT:    %[[Y:.*]] = torch.aten.linear %arg0, %arg1, %arg2
// DEFAULT:         torch.aten.gelu %[[Y]]
// MATMUL-LABEL: func.func @main
// MATMUL-NEXT:    %[[NONE:.*]] = torch.constant.none {pygraph.class = "scalar"}
// MATMUL-NEXT:    %[[Y:.*]] = torch.aten.linear %arg0, %arg1, %[[NONE]] {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[4, 16], [16, 1], 0 : i64, f32>]}
// MATMUL-NEXT:    %[[ONE:.*]] = torch.constant.int 1 {pygraph.class = "scalar"}
// MATMUL-NEXT:    %[[B:.*]] = torch.aten.add.Tensor %[[Y]], %arg2, %[[ONE]] {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 16], [16, 1], 0 : i64, f32>]}
// MATMUL:         torch.aten.gelu %[[B]]
func.func @main(%x: !torch.vtensor<[4,8],f32>, %w: !torch.vtensor<[16,8],f32>, %b: !torch.vtensor<[16],f32>) -> !torch.vtensor<[4,16],f32> {
  %0 = torch.aten.linear %x, %w, %b {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[4, 16], [16, 1], 0 : i64, f32>]} : !torch.vtensor<[4,8],f32>, !torch.vtensor<[16,8],f32>, !torch.vtensor<[16],f32> -> !torch.vtensor<[4,16],f32>
  %str = torch.constant.str "none" {pygraph.class = "scalar"}
  %1 = torch.aten.gelu %0, %str {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[4, 16], [16, 1], 0 : i64, f32>]} : !torch.vtensor<[4,16],f32>, !torch.str -> !torch.vtensor<[4,16],f32>
  return %1 : !torch.vtensor<[4,16],f32>
}

// -----

// GPT-2's addmm, viewed back to [batch, tokens, features] and added to the residual: addmm becomes mm
// (by default: cuBLAS's addmm kernels are slower than mm's) and the bias add goes after the view (the
// bias runs along the last dim, which the view keeps); with addmm=false it stays.
// KEEP-LABEL: func.func @main
// KEEP:         torch.aten.addmm %arg2, %arg0, %arg1
// CHECK-LABEL: func.func @main
// CHECK:           %[[MM:.*]] = torch.aten.mm %arg0, %arg1 {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[8, 4], [4, 1], 0 : i64, f32>]}
// CHECK:           %[[V:.*]] = torch.aten.view %[[MM]]
// CHECK-NEXT:     %[[ONE:.*]] = torch.constant.int 1
// CHECK-NEXT:     %[[B:.*]] = torch.aten.add.Tensor %[[V]], %arg2, %[[ONE]] {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [16, 4, 1], 0 : i64, f32>]}
// CHECK-NEXT:     torch.aten.add.Tensor %arg3, %[[B]]
// CHECK-NOT:      torch.aten.addmm
func.func @main(%x: !torch.vtensor<[8,4],f32>, %w: !torch.vtensor<[4,4],f32>, %b: !torch.vtensor<[4],f32>, %r: !torch.vtensor<[2,4,4],f32>) -> !torch.vtensor<[2,4,4],f32> {
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %0 = torch.aten.addmm %b, %x, %w, %int1, %int1 {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[8, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4],f32>, !torch.vtensor<[8,4],f32>, !torch.vtensor<[4,4],f32>, !torch.int, !torch.int -> !torch.vtensor<[8,4],f32>
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %int4 = torch.constant.int 4 {pygraph.class = "scalar"}
  %shape = torch.prim.ListConstruct %int2, %int4, %int4 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.aten.view %0, %shape {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[8,4],f32>, !torch.list<int> -> !torch.vtensor<[2,4,4],f32>
  %2 = torch.aten.add.Tensor %r, %1, %int1 {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,4],f32>, !torch.vtensor<[2,4,4],f32>, !torch.int -> !torch.vtensor<[2,4,4],f32>
  return %2 : !torch.vtensor<[2,4,4],f32>
}

// -----

// A convolution followed by a reduction (here a mean, as in a squeeze-excitation block): the bias,
// one per channel, is viewed as [C, 1, 1] to broadcast along dim 1 (with or without matmuls).
// CHECK-LABEL: func.func @main
// CHECK:         %[[NONE:.*]] = torch.constant.none
// CHECK-NEXT:    %[[C:.*]] = torch.aten.conv2d %arg0, %arg1, %[[NONE]]
// CHECK:         %[[SHAPE:.*]] = torch.prim.ListConstruct
// CHECK-NEXT:    %[[BV:.*]] = torch.aten.view %arg2, %[[SHAPE]] {pygraph.class = "view"} : !torch.vtensor<[8],f32>, !torch.list<int> -> !torch.vtensor<[8,1,1],f32>
// CHECK-NEXT:    %[[ONE:.*]] = torch.constant.int 1
// CHECK-NEXT:    %[[B:.*]] = torch.aten.add.Tensor %[[C]], %[[BV]], %[[ONE]]
// CHECK:         torch.aten.mean.dim %[[B]]
func.func @main(%x: !torch.vtensor<[1,3,6,6],f32>, %w: !torch.vtensor<[8,3,3,3],f32>, %b: !torch.vtensor<[8],f32>) -> !torch.vtensor<[1,8,1,1],f32> {
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %ones = torch.prim.ListConstruct %int1, %int1 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %zeros = torch.prim.ListConstruct %int0, %int0 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.conv2d %x, %w, %b, %ones, %zeros, %ones, %int1 {pygraph.class = "library"} : !torch.vtensor<[1,3,6,6],f32>, !torch.vtensor<[8,3,3,3],f32>, !torch.vtensor<[8],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.int -> !torch.vtensor<[1,8,4,4],f32>
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %int3 = torch.constant.int 3 {pygraph.class = "scalar"}
  %dims = torch.prim.ListConstruct %int2, %int3 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %true = torch.constant.bool true {pygraph.class = "scalar"}
  %none = torch.constant.none {pygraph.class = "scalar"}
  %1 = torch.aten.mean.dim %0, %dims, %true, %none {pygraph.class = "reduction"} : !torch.vtensor<[1,8,4,4],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[1,8,1,1],f32>
  return %1 : !torch.vtensor<[1,8,1,1],f32>
}

// -----

// Left whole: BERT's query projection (read through views by attention, a library op), a result also
// read by a library op, a result whose reader broadcasts it to a bigger shape (the add would be a
// kernel of its own), addmm scaling its product (alpha = 2), and a linear without bias.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[Q:.*]] = torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "library"}
// CHECK:         %[[M:.*]] = torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "library"}
// CHECK-NEXT:    torch.aten.relu %[[M]]
// CHECK-NEXT:    torch.aten.mm %[[M]], %arg1
// CHECK-NEXT:    %[[WIDE:.*]] = torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "library"}
// CHECK:         torch.aten.add.Tensor %arg3, %[[WIDE]]
// CHECK:         torch.aten.addmm %arg2, %arg0, %arg1, %{{.*}}, %[[TWO:.*]] {pygraph.class = "library"}
// CHECK:         torch.aten.linear %arg0, %arg1, %{{.*}} {pygraph.class = "library"} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.none
// CHECK-NOT:     torch.aten.add.Tensor %{{.*}}, %arg2
func.func @main(%x: !torch.vtensor<[4,4],f32>, %w: !torch.vtensor<[4,4],f32>, %b: !torch.vtensor<[4],f32>, %r: !torch.vtensor<[2,4,4],f32>) -> (!torch.vtensor<[2,2,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[2,4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>) {
  %q = torch.aten.linear %x, %w, %b {pygraph.class = "library"} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4],f32> -> !torch.vtensor<[4,4],f32>
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %shape = torch.prim.ListConstruct %int2, %int2, %int2 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %heads = torch.aten.view %q, %shape {pygraph.class = "view"} : !torch.vtensor<[4,4],f32>, !torch.list<int> -> !torch.vtensor<[2,2,4],f32>
  %m = torch.aten.linear %x, %w, %b {pygraph.class = "library"} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4],f32> -> !torch.vtensor<[4,4],f32>
  %relu = torch.aten.relu %m {pygraph.class = "pointwise"} : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %mm = torch.aten.mm %m, %w {pygraph.class = "library"} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %wide = torch.aten.linear %x, %w, %b {pygraph.class = "library"} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4],f32> -> !torch.vtensor<[4,4],f32>
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %sum = torch.aten.add.Tensor %r, %wide, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[2,4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.int -> !torch.vtensor<[2,4,4],f32>
  %scaled = torch.aten.addmm %b, %x, %w, %int1, %int2 {pygraph.class = "library"} : !torch.vtensor<[4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.int, !torch.int -> !torch.vtensor<[4,4],f32>
  %scaled_relu = torch.aten.relu %scaled {pygraph.class = "pointwise"} : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %none = torch.constant.none {pygraph.class = "scalar"}
  %plain = torch.aten.linear %x, %w, %none {pygraph.class = "library"} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.none -> !torch.vtensor<[4,4],f32>
  %plain_relu = torch.aten.relu %plain {pygraph.class = "pointwise"} : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  return %heads, %relu, %mm, %sum, %scaled_relu, %plain_relu : !torch.vtensor<[2,2,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[2,4,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>
}

// -----

// Linear of many rows (4096 by default) and no more outputs than inputs: split, where the epilogue
// measured slower; one with more outputs than inputs keeps its bias. With min-rows=8192 both keep it.
// CHECK-LABEL:   func.func @main
// DEFAULT:         %[[NARROW:.*]] = torch.aten.linear %arg0, %arg1, %{{.*}} {pygraph.class = "library"} : !torch.vtensor<[64,64,8],f32>, !torch.vtensor<[8,8],f32>, !torch.none
// DEFAULT:         torch.aten.add.Tensor %[[NARROW]], %arg2
// DEFAULT:         torch.aten.linear %arg0, %arg3, %arg4 {pygraph.class = "library"}
// FEW-LABEL:     func.func @main
// FEW:             torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "library"}
// FEW:             torch.aten.linear %arg0, %arg3, %arg4 {pygraph.class = "library"}
func.func @main(%x: !torch.vtensor<[64,64,8],f32>, %w: !torch.vtensor<[8,8],f32>, %b: !torch.vtensor<[8],f32>, %wide: !torch.vtensor<[16,8],f32>, %bw: !torch.vtensor<[16],f32>) -> (!torch.vtensor<[64,64,8],f32>, !torch.vtensor<[64,64,16],f32>) {
  %0 = torch.aten.linear %x, %w, %b {pygraph.class = "library"} : !torch.vtensor<[64,64,8],f32>, !torch.vtensor<[8,8],f32>, !torch.vtensor<[8],f32> -> !torch.vtensor<[64,64,8],f32>
  %1 = torch.aten.relu %0 {pygraph.class = "pointwise"} : !torch.vtensor<[64,64,8],f32> -> !torch.vtensor<[64,64,8],f32>
  %2 = torch.aten.linear %x, %wide, %bw {pygraph.class = "library"} : !torch.vtensor<[64,64,8],f32>, !torch.vtensor<[16,8],f32>, !torch.vtensor<[16],f32> -> !torch.vtensor<[64,64,16],f32>
  %3 = torch.aten.relu %2 {pygraph.class = "pointwise"} : !torch.vtensor<[64,64,16],f32> -> !torch.vtensor<[64,64,16],f32>
  return %1, %3 : !torch.vtensor<[64,64,8],f32>, !torch.vtensor<[64,64,16],f32>
}

// -----

// ViT's patch embedding: conv2d, flatten(2), transpose(1, 2), then the cat with the class token. The add
// follows the views, where the channels are the last dim (the bias as is), and the cat's list reads it:
// fuse-pointwise computes that piece in the cat's kernel.
// CHECK-LABEL: func.func @main
// CHECK:         %[[C:.*]] = torch.aten.conv2d %arg0, %arg1, %{{.*}} : !torch.vtensor<[1,3,8,12],f32>, !torch.vtensor<[5,3,4,4],f32>, !torch.none
// CHECK:         %[[V:.*]] = torch.aten.view %[[C]]
// CHECK:         %[[T:.*]] = torch.aten.transpose.int %[[V]]
// CHECK-NEXT:    %[[ONE:.*]] = torch.constant.int 1
// CHECK-NEXT:    %[[B:.*]] = torch.aten.add.Tensor %[[T]], %arg2, %[[ONE]] {pygraph.class = "pointwise", pygraph.layouts = [#pygraph.layout<[1, 6, 5], [30, 1, 6], 0 : i64, f32>]} : !torch.vtensor<[1,6,5],f32>, !torch.vtensor<[5],f32>
// CHECK-NEXT:    torch.prim.ListConstruct %arg3, %[[B]]
func.func @main(%img: !torch.vtensor<[1,3,8,12],f32>, %w: !torch.vtensor<[5,3,4,4],f32>, %b: !torch.vtensor<[5],f32>, %cls: !torch.vtensor<[1,1,5],f32>, %pos: !torch.vtensor<[1,7,5],f32>) -> !torch.vtensor<[1,7,5],f32> {
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %int4 = torch.constant.int 4 {pygraph.class = "scalar"}
  %int5 = torch.constant.int 5 {pygraph.class = "scalar"}
  %int6 = torch.constant.int 6 {pygraph.class = "scalar"}
  %stride = torch.prim.ListConstruct %int4, %int4 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %zeros = torch.prim.ListConstruct %int0, %int0 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %ones = torch.prim.ListConstruct %int1, %int1 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.conv2d %img, %w, %b, %stride, %zeros, %ones, %int1 {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[1, 5, 2, 3], [30, 6, 3, 1], 0 : i64, f32>]} : !torch.vtensor<[1,3,8,12],f32>, !torch.vtensor<[5,3,4,4],f32>, !torch.vtensor<[5],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.int -> !torch.vtensor<[1,5,2,3],f32>
  %shape = torch.prim.ListConstruct %int1, %int5, %int6 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.aten.view %0, %shape {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[1, 5, 6], [30, 6, 1], 0 : i64, f32>]} : !torch.vtensor<[1,5,2,3],f32>, !torch.list<int> -> !torch.vtensor<[1,5,6],f32>
  %2 = torch.aten.transpose.int %1, %int1, %int2 {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[1, 6, 5], [30, 1, 6], 0 : i64, f32>]} : !torch.vtensor<[1,5,6],f32>, !torch.int, !torch.int -> !torch.vtensor<[1,6,5],f32>
  %pieces = torch.prim.ListConstruct %cls, %2 {pygraph.class = "scalar"} : (!torch.vtensor<[1,1,5],f32>, !torch.vtensor<[1,6,5],f32>) -> !torch.list<vtensor>
  %3 = torch.aten.cat %pieces, %int1 {pygraph.class = "concat"} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[1,7,5],f32>
  %4 = torch.aten.add.Tensor %3, %pos, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[1,7,5],f32>, !torch.vtensor<[1,7,5],f32>, !torch.int -> !torch.vtensor<[1,7,5],f32>
  return %4 : !torch.vtensor<[1,7,5],f32>
}

// -----

// The bias's dim tracked through the views: addmm's features (last dim) moved to dim 1 by a permute, a
// convolution's channels kept at dim 1 by a flatten (both concatenated along dim 2), and an unbatched
// convolution's channels at dim 0: each bias viewed as [C, 1, ...].
// CHECK-LABEL: func.func @main
// CHECK:         %[[MM:.*]] = torch.aten.mm %arg0, %arg1
// CHECK:         %[[V:.*]] = torch.aten.view %[[MM]]
// CHECK:         %[[P:.*]] = torch.aten.permute %[[V]]
// CHECK:         %[[BV:.*]] = torch.aten.view %arg2, %{{.*}} : !torch.vtensor<[4],f32>, !torch.list<int> -> !torch.vtensor<[4,1],f32>
// CHECK:         %[[B:.*]] = torch.aten.add.Tensor %[[P]], %[[BV]]
// CHECK:         %[[C:.*]] = torch.aten.conv2d %arg3, %arg4, %{{.*}} : !torch.vtensor<[2,3,4,4],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.none
// CHECK:         %[[F:.*]] = torch.aten.view %[[C]]
// CHECK:         %[[CV:.*]] = torch.aten.view %arg5, %{{.*}} : !torch.vtensor<[4],f32>, !torch.list<int> -> !torch.vtensor<[4,1],f32>
// CHECK:         %[[D:.*]] = torch.aten.add.Tensor %[[F]], %[[CV]]
// CHECK-NEXT:    torch.prim.ListConstruct %[[B]], %[[D]]
// CHECK:         %[[U:.*]] = torch.aten.conv2d %arg6, %arg4, %{{.*}} : !torch.vtensor<[3,4,4],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.none
// CHECK:         %[[UV:.*]] = torch.aten.view %arg5, %{{.*}} : !torch.vtensor<[4],f32>, !torch.list<int> -> !torch.vtensor<[4,1,1],f32>
// CHECK:         %[[UB:.*]] = torch.aten.add.Tensor %[[U]], %[[UV]]
// CHECK-NEXT:    torch.aten.relu %[[UB]]
func.func @main(%x: !torch.vtensor<[8,3],f32>, %w: !torch.vtensor<[3,4],f32>, %b: !torch.vtensor<[4],f32>, %img: !torch.vtensor<[2,3,4,4],f32>, %cw: !torch.vtensor<[4,3,3,3],f32>, %cb: !torch.vtensor<[4],f32>, %one_img: !torch.vtensor<[3,4,4],f32>) -> (!torch.vtensor<[2,4,8],f32>, !torch.vtensor<[4,2,2],f32>) {
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %int4 = torch.constant.int 4 {pygraph.class = "scalar"}
  %0 = torch.aten.addmm %b, %x, %w, %int1, %int1 {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[8, 4], [4, 1], 0 : i64, f32>]} : !torch.vtensor<[4],f32>, !torch.vtensor<[8,3],f32>, !torch.vtensor<[3,4],f32>, !torch.int, !torch.int -> !torch.vtensor<[8,4],f32>
  %shape = torch.prim.ListConstruct %int2, %int4, %int4 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.aten.view %0, %shape {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[8,4],f32>, !torch.list<int> -> !torch.vtensor<[2,4,4],f32>
  %order = torch.prim.ListConstruct %int0, %int2, %int1 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.aten.permute %1, %order {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [16, 1, 4], 0 : i64, f32>]} : !torch.vtensor<[2,4,4],f32>, !torch.list<int> -> !torch.vtensor<[2,4,4],f32>
  %ones = torch.prim.ListConstruct %int1, %int1 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %zeros = torch.prim.ListConstruct %int0, %int0 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.aten.conv2d %img, %cw, %cb, %ones, %zeros, %ones, %int1 {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[2, 4, 2, 2], [16, 4, 2, 1], 0 : i64, f32>]} : !torch.vtensor<[2,3,4,4],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.vtensor<[4],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.int -> !torch.vtensor<[2,4,2,2],f32>
  %flat = torch.prim.ListConstruct %int2, %int4, %int4 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.aten.view %3, %flat {pygraph.class = "view", pygraph.layouts = [#pygraph.layout<[2, 4, 4], [16, 4, 1], 0 : i64, f32>]} : !torch.vtensor<[2,4,2,2],f32>, !torch.list<int> -> !torch.vtensor<[2,4,4],f32>
  %pieces = torch.prim.ListConstruct %2, %4 {pygraph.class = "scalar"} : (!torch.vtensor<[2,4,4],f32>, !torch.vtensor<[2,4,4],f32>) -> !torch.list<vtensor>
  %5 = torch.aten.cat %pieces, %int2 {pygraph.class = "concat"} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[2,4,8],f32>
  %6 = torch.aten.conv2d %one_img, %cw, %cb, %ones, %zeros, %ones, %int1 {pygraph.class = "library", pygraph.layouts = [#pygraph.layout<[4, 2, 2], [4, 2, 1], 0 : i64, f32>]} : !torch.vtensor<[3,4,4],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.vtensor<[4],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.int -> !torch.vtensor<[4,2,2],f32>
  %7 = torch.aten.relu %6 {pygraph.class = "pointwise"} : !torch.vtensor<[4,2,2],f32> -> !torch.vtensor<[4,2,2],f32>
  return %5, %7 : !torch.vtensor<[2,4,8],f32>, !torch.vtensor<[4,2,2],f32>
}

// -----

// Left whole: a flatten that merges the channels with the pixels (the bias's dim is not kept), a piece
// also read by a second cat, and a piece of a cat no kernel computes (an empty piece).
// CHECK-LABEL: func.func @main
// CHECK-COUNT-3: torch.aten.conv2d %arg0, %arg1, %arg2
// CHECK-NOT:     torch.aten.add.Tensor
func.func @main(%img: !torch.vtensor<[1,3,4,4],f32>, %w: !torch.vtensor<[4,3,3,3],f32>, %b: !torch.vtensor<[4],f32>, %y: !torch.vtensor<[1,4],f32>, %e: !torch.vtensor<[1,4,0],f32>) -> (!torch.vtensor<[1,20],f32>, !torch.vtensor<[1,4,8],f32>, !torch.vtensor<[1,4,4],f32>) {
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %int2 = torch.constant.int 2 {pygraph.class = "scalar"}
  %int4 = torch.constant.int 4 {pygraph.class = "scalar"}
  %int16 = torch.constant.int 16 {pygraph.class = "scalar"}
  %ones = torch.prim.ListConstruct %int1, %int1 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %zeros = torch.prim.ListConstruct %int0, %int0 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.conv2d %img, %w, %b, %ones, %zeros, %ones, %int1 {pygraph.class = "library"} : !torch.vtensor<[1,3,4,4],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.vtensor<[4],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.int -> !torch.vtensor<[1,4,2,2],f32>
  %merged = torch.prim.ListConstruct %int1, %int16 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.aten.view %0, %merged {pygraph.class = "view"} : !torch.vtensor<[1,4,2,2],f32>, !torch.list<int> -> !torch.vtensor<[1,16],f32>
  %l1 = torch.prim.ListConstruct %1, %y {pygraph.class = "scalar"} : (!torch.vtensor<[1,16],f32>, !torch.vtensor<[1,4],f32>) -> !torch.list<vtensor>
  %2 = torch.aten.cat %l1, %int1 {pygraph.class = "concat"} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[1,20],f32>
  %3 = torch.aten.conv2d %img, %w, %b, %ones, %zeros, %ones, %int1 {pygraph.class = "library"} : !torch.vtensor<[1,3,4,4],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.vtensor<[4],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.int -> !torch.vtensor<[1,4,2,2],f32>
  %flat = torch.prim.ListConstruct %int1, %int4, %int4 {pygraph.class = "scalar"} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.aten.view %3, %flat {pygraph.class = "view"} : !torch.vtensor<[1,4,2,2],f32>, !torch.list<int> -> !torch.vtensor<[1,4,4],f32>
  %l2 = torch.prim.ListConstruct %4, %4 {pygraph.class = "scalar"} : (!torch.vtensor<[1,4,4],f32>, !torch.vtensor<[1,4,4],f32>) -> !torch.list<vtensor>
  %5 = torch.aten.cat %l2, %int2 {pygraph.class = "concat"} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[1,4,8],f32>
  %6 = torch.aten.cat %l2, %int1 {pygraph.class = "concat"} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[1,8,4],f32>
  %7 = torch.aten.conv2d %img, %w, %b, %ones, %zeros, %ones, %int1 {pygraph.class = "library"} : !torch.vtensor<[1,3,4,4],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.vtensor<[4],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.int -> !torch.vtensor<[1,4,2,2],f32>
  %8 = torch.aten.view %7, %flat {pygraph.class = "view"} : !torch.vtensor<[1,4,2,2],f32>, !torch.list<int> -> !torch.vtensor<[1,4,4],f32>
  %l3 = torch.prim.ListConstruct %8, %e {pygraph.class = "scalar"} : (!torch.vtensor<[1,4,4],f32>, !torch.vtensor<[1,4,0],f32>) -> !torch.list<vtensor>
  %9 = torch.aten.cat %l3, %int2 {pygraph.class = "concat"} : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[1,4,4],f32>
  return %2, %5, %9 : !torch.vtensor<[1,20],f32>, !torch.vtensor<[1,4,8],f32>, !torch.vtensor<[1,4,4],f32>
}
