// RUN: pygraph-opt %s -p form-segments --split-input-file --verify-diagnostics

func.func @not_lowered(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  // expected-error @+1 {{'torch.aten.sin' is not a plan-level op: run lower-to-plan first}}
  %0 = torch.aten.sin %arg0 : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  return %0 : !torch.vtensor<[4],f32>
}
