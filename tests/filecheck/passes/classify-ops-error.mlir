// RUN: pygraph-opt %s -p classify-ops --split-input-file --verify-diagnostics

func.func @foreign(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  // expected-error @+1 {{'arith.constant' is not an ATen op pygraph knows}}
  %0 = arith.constant 1 : i32
  return %arg0 : !torch.vtensor<[4],f32>
}

// -----

func.func @data_dependent(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[?,1],si64> {
  // expected-error @+1 {{aten.nonzero.default has an output shape that depends on the data}}
  %0 = torch.aten.nonzero %arg0 : !torch.vtensor<[4],f32> -> !torch.vtensor<[?,1],si64>
  return %0 : !torch.vtensor<[?,1],si64>
}
