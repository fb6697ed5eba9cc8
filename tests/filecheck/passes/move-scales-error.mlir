// RUN: pygraph-opt %s -p move-scales --split-input-file --verify-diagnostics

// Only a vendor product's scale moves: the product must have its class.
func.func @main(%x: !torch.vtensor<[4,4],f32>, %w: !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[4,4],f32> {
  %float8 = torch.constant.float 8.000000e+00 {pygraph.class = "scalar"}
  %0 = torch.aten.div.Scalar %x, %float8 {pygraph.class = "pointwise"} : !torch.vtensor<[4,4],f32>, !torch.float -> !torch.vtensor<[4,4],f32>
  // expected-error @+1 {{the product has no pygraph.class: run classify-ops first}}
  %1 = torch.aten.mm %0, %w : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  return %1 : !torch.vtensor<[4,4],f32>
}
