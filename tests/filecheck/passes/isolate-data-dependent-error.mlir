// RUN: pygraph-opt %s -p classify-ops,isolate-data-dependent --split-input-file --verify-diagnostics

// A buffer cannot be overwritten with a value whose shape the data decides.
func.func @overwrite(%arg0: !torch.vtensor<[8],f32> {pygraph.device = "cuda", pygraph.name = "x", pygraph.role = "input"},
                     %arg1: !torch.vtensor<[8],si64> {pygraph.device = "cuda", pygraph.name = "kept", pygraph.role = "buffer"}) -> !torch.vtensor<[8],f32> {
  %0 = torch.aten.nonzero %arg0 : !torch.vtensor<[8],f32> -> !torch.vtensor<[?,1],si64>
  // expected-error @+1 {{a buffer or input cannot take a shape that depends on the data}}
  "pygraph.overwrite"(%0, %arg1) : (!torch.vtensor<[?,1],si64>, !torch.vtensor<[8],si64>) -> ()
  return %arg0 : !torch.vtensor<[8],f32>
}

// -----

// A tensor made of a number known only at run time is refused (and named).
func.func @number_to_tensor(%arg0: !torch.vtensor<[8],f32> {pygraph.device = "cuda", pygraph.name = "x", pygraph.role = "input"}) -> !torch.vtensor<[],f32> {
  %none = torch.constant.none
  %int1 = torch.constant.int 1
  %0 = torch.aten.sum %arg0, %none {pygraph.layouts = [#pygraph.layout<[], [], 0 : i64, f32>]} : !torch.vtensor<[8],f32>, !torch.none -> !torch.vtensor<[],f32>
  %1 = torch.aten.item %0 : !torch.vtensor<[],f32> -> !torch.float
  // expected-error @+1 {{'torch.prim.NumToTensor.Scalar' makes a tensor of a number known only at run time}}
  %2 = torch.prim.NumToTensor.Scalar %1 : !torch.float -> !torch.vtensor<[],f64>
  %3 = torch.aten.add.Tensor %0, %2, %int1 : !torch.vtensor<[],f32>, !torch.vtensor<[],f64>, !torch.int -> !torch.vtensor<[],f32>
  return %3 : !torch.vtensor<[],f32>
}
