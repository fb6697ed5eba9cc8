// RUN: pygraph-opt %s -p classify-ops --split-input-file --verify-diagnostics

func.func @foreign(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  // expected-error @+1 {{'arith.constant' is not an ATen op pygraph knows}}
  %0 = arith.constant 1 : i32
  return %arg0 : !torch.vtensor<[4],f32>
}
