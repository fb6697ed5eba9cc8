// RUN: pygraph-opt %s -p 'row-phases{matmul-precision=tf32}' --verify-diagnostics

// The pass works on buffers: tensor-level IR is refused.
// expected-error @+1 {{the function is not at the plan level: run lower-to-plan first}}
func.func @main(%arg0: !torch.vtensor<[4,4],f32> {pygraph.name = "x", pygraph.role = "input"}) -> !torch.vtensor<[4,4],f32> {
  return %arg0 : !torch.vtensor<[4,4],f32>
}
