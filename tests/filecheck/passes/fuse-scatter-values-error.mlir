// RUN: pygraph-opt %s -p fuse-scatter-values --verify-diagnostics

// The pass rewrites plans: a function at the tensor level (its arguments tensors, not buffers) is refused.
// expected-error @+1 {{the function is not at the plan level: run lower-to-plan first}}
func.func @main(%arg0: !torch.vtensor<[2,4,16,8],f32>, %arg1: !torch.vtensor<[1],si64>, %arg2: !torch.vtensor<[2,4,1,8],f32>) -> !torch.vtensor<[2,4,16,8],f32> {
  %none = torch.constant.none
  %list = torch.prim.ListConstruct %none, %none, %arg1 : (!torch.none, !torch.none, !torch.vtensor<[1],si64>) -> !torch.list<optional<vtensor>>
  %false = torch.constant.bool false
  %0 = torch.aten.index_put %arg0, %list, %arg2, %false : !torch.vtensor<[2,4,16,8],f32>, !torch.list<optional<vtensor>>, !torch.vtensor<[2,4,1,8],f32>, !torch.bool -> !torch.vtensor<[2,4,16,8],f32>
  return %0 : !torch.vtensor<[2,4,16,8],f32>
}
