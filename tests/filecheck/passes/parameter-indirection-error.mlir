// RUN: pygraph-opt %s -p parameter-indirection --verify-diagnostics

// expected-error @+1 {{the function is not at the plan level: run lower-to-plan first}}
func.func @main(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  return %arg0 : !torch.vtensor<[4],f32>
}
