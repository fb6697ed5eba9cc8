// RUN: pygraph-opt %s -p place-constants --split-input-file | filecheck %s

// A CPU constant in a GPU program goes to the GPU once; the change is recorded for explain().
// CHECK:       module attributes {pygraph.transforms = [{location = "{{.*}}", pass = "place-constants", what = "constant 'lifted_tensor_0' placed on the GPU once, at compile time"}]}
// CHECK-LABEL: func.func @main
// CHECK-SAME:    pygraph.device = "cuda", pygraph.name = "x"
// CHECK-SAME:    pygraph.device = "cuda", pygraph.name = "lifted_tensor_0", pygraph.role = "constant"
func.func @main(%arg0: !torch.vtensor<[4],f32> {pygraph.device = "cuda", pygraph.name = "x", pygraph.role = "input"},
                %arg1: !torch.vtensor<[],f32> {pygraph.device = "cpu", pygraph.name = "lifted_tensor_0", pygraph.role = "constant"}) -> !torch.vtensor<[4],f32> {
  %int1 = torch.constant.int 1
  %0 = torch.aten.add.Tensor %arg0, %arg1, %int1 : !torch.vtensor<[4],f32>, !torch.vtensor<[],f32>, !torch.int -> !torch.vtensor<[4],f32>
  return %0 : !torch.vtensor<[4],f32>
}

// -----

// A CPU program: nothing moves.
// CHECK-NOT:   pygraph.transforms
// CHECK-LABEL: func.func @cpu
// CHECK-SAME:    pygraph.device = "cpu", pygraph.name = "lifted_tensor_0"
func.func @cpu(%arg0: !torch.vtensor<[4],f32> {pygraph.device = "cpu", pygraph.name = "x", pygraph.role = "input"},
               %arg1: !torch.vtensor<[],f32> {pygraph.device = "cpu", pygraph.name = "lifted_tensor_0", pygraph.role = "constant"}) -> !torch.vtensor<[4],f32> {
  return %arg0 : !torch.vtensor<[4],f32>
}
