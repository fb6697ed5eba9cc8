// RUN: pygraph-opt %s -p place-constants,hoist-host-copies --split-input-file | filecheck %s

// A GPU model copies a CPU buffer, a CPU constant and a CPU input to the GPU in forward. The buffer and
// the constant (never written) are placed on the GPU once; the input is staged by the runtime. Every
// copy goes away but the cast to float16, which stays on the GPU (no device argument).
// CHECK:       module attributes {pygraph.transforms = [
// CHECK-SAME:    {location = "{{.*}}", pass = "place-constants", what = "constant 'lut' placed on the GPU once, at compile time"},
// CHECK-SAME:    {location = "model.py:5 (node _to_copy)", pass = "hoist-host-copies", what = "the copy of buffer 'table' to the GPU in every call is gone: it is placed there once"},
// CHECK-SAME:    {location = "model.py:6 (node _to_copy_1)", pass = "hoist-host-copies", what = "the copy of buffer 'table' to the GPU in every call is gone: it is placed there once"},
// CHECK-SAME:    {location = "model.py:7 (node _to_copy_2)", pass = "hoist-host-copies", what = "the copy of constant 'lut' to the GPU in every call is gone: it is placed there once"},
// CHECK-SAME:    {location = "model.py:8 (node _to_copy_3)", pass = "hoist-host-copies", what = "the copy of input 'm' to the GPU is made by the runtime before the graphs"}]}
// CHECK-LABEL: func.func @main
// CHECK-SAME:    %arg1: !torch.vtensor<[8],f32> {pygraph.device = "cpu", pygraph.name = "m", pygraph.role = "input"}
// CHECK-SAME:    %arg2: !torch.vtensor<[8],f32> {pygraph.device = "cuda", pygraph.name = "table", pygraph.role = "buffer"}
// CHECK-SAME:    %arg3: !torch.vtensor<[8],f32> {pygraph.device = "cuda", pygraph.name = "lut", pygraph.role = "constant"}
// CHECK:         %[[NONE:none_[0-9]+]] = torch.constant.none
// CHECK-NEXT:    %[[HALF:.*]] = torch.aten._to_copy %arg2, %int5, %none, %[[NONE]], %none, %false, %none :
// CHECK:         %[[A:.*]] = torch.aten.mul.Tensor %arg0, %arg2
// CHECK:         %[[B:.*]] = torch.aten.add.Tensor %[[A]], %[[HALF]]
// CHECK:         %[[C:.*]] = torch.aten.add.Tensor %[[B]], %arg3
// CHECK:         torch.aten.add.Tensor %[[C]], %arg1
// CHECK-NOT:     torch.aten._to_copy
func.func @main(%arg0: !torch.vtensor<[8],f32> {pygraph.device = "cuda", pygraph.name = "x", pygraph.role = "input"},
                %arg1: !torch.vtensor<[8],f32> {pygraph.device = "cpu", pygraph.name = "m", pygraph.role = "input"},
                %arg2: !torch.vtensor<[8],f32> {pygraph.device = "cpu", pygraph.name = "table", pygraph.role = "buffer"},
                %arg3: !torch.vtensor<[8],f32> {pygraph.device = "cpu", pygraph.name = "lut", pygraph.role = "constant"}) -> !torch.vtensor<[8],f32> {
  %none = torch.constant.none
  %false = torch.constant.bool false
  %int1 = torch.constant.int 1
  %int5 = torch.constant.int 5
  %cuda = torch.constant.device "cuda:0"
  %0 = torch.aten._to_copy %arg2, %none, %none, %cuda, %none, %false, %none : !torch.vtensor<[8],f32>, !torch.none, !torch.none, !torch.Device, !torch.none, !torch.bool, !torch.none -> !torch.vtensor<[8],f32> loc(#c0)
  %1 = torch.aten._to_copy %arg2, %int5, %none, %cuda, %none, %false, %none : !torch.vtensor<[8],f32>, !torch.int, !torch.none, !torch.Device, !torch.none, !torch.bool, !torch.none -> !torch.vtensor<[8],f16> loc(#c1)
  %2 = torch.aten._to_copy %arg3, %none, %none, %cuda, %none, %false, %none : !torch.vtensor<[8],f32>, !torch.none, !torch.none, !torch.Device, !torch.none, !torch.bool, !torch.none -> !torch.vtensor<[8],f32> loc(#c2)
  %3 = torch.aten._to_copy %arg1, %none, %none, %cuda, %none, %false, %none : !torch.vtensor<[8],f32>, !torch.none, !torch.none, !torch.Device, !torch.none, !torch.bool, !torch.none -> !torch.vtensor<[8],f32> loc(#c3)
  %4 = torch.aten.mul.Tensor %arg0, %0 : !torch.vtensor<[8],f32>, !torch.vtensor<[8],f32> -> !torch.vtensor<[8],f32>
  %5 = torch.aten.add.Tensor %4, %1, %int1 : !torch.vtensor<[8],f32>, !torch.vtensor<[8],f16>, !torch.int -> !torch.vtensor<[8],f32>
  %6 = torch.aten.add.Tensor %5, %2, %int1 : !torch.vtensor<[8],f32>, !torch.vtensor<[8],f32>, !torch.int -> !torch.vtensor<[8],f32>
  %7 = torch.aten.add.Tensor %6, %3, %int1 : !torch.vtensor<[8],f32>, !torch.vtensor<[8],f32>, !torch.int -> !torch.vtensor<[8],f32>
  return %7 : !torch.vtensor<[8],f32>
}
#c0 = loc("_to_copy"("model.py":5:0))
#c1 = loc("_to_copy_1"("model.py":6:0))
#c2 = loc("_to_copy_2"("model.py":7:0))
#c3 = loc("_to_copy_3"("model.py":8:0))

// -----

// Copies that stay: a cast on the GPU (no device argument), and a copy of a value computed in the
// program. Nothing is recorded.
// CHECK-NOT:   pygraph.transforms
// CHECK-LABEL: func.func @kept
// CHECK-SAME:    pygraph.device = "cpu", pygraph.name = "table", pygraph.role = "buffer"
// CHECK:         torch.aten._to_copy %arg1, %int5
// CHECK:         torch.aten._to_copy %{{.*}}, %none, %none, %cuda3A0
func.func @kept(%arg0: !torch.vtensor<[8],f32> {pygraph.device = "cuda", pygraph.name = "x", pygraph.role = "input"},
                %arg1: !torch.vtensor<[8],f32> {pygraph.device = "cpu", pygraph.name = "table", pygraph.role = "buffer"}) -> !torch.vtensor<[8],f16> {
  %none = torch.constant.none
  %false = torch.constant.bool false
  %int5 = torch.constant.int 5
  %cuda = torch.constant.device "cuda:0"
  %0 = torch.aten._to_copy %arg1, %int5, %none, %none, %none, %false, %none : !torch.vtensor<[8],f32>, !torch.int, !torch.none, !torch.none, !torch.none, !torch.bool, !torch.none -> !torch.vtensor<[8],f16>
  %1 = torch.aten._to_copy %0, %none, %none, %cuda, %none, %false, %none : !torch.vtensor<[8],f16>, !torch.none, !torch.none, !torch.Device, !torch.none, !torch.bool, !torch.none -> !torch.vtensor<[8],f16>
  return %1 : !torch.vtensor<[8],f16>
}
