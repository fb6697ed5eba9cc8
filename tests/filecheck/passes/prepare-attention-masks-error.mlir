// RUN: pygraph-opt %s -p prepare-attention-masks --verify-diagnostics

// Which ops may join the mask's kernel depends on classes: the pass runs after classify-ops.
func.func @main(%q: !torch.vtensor<[2,4,32,16],f32>, %m: !torch.vtensor<[1,1,32,32],i1>) -> !torch.vtensor<[2,4,32,16],f32> {
  %float0 = torch.constant.float 0.000000e+00
  %false = torch.constant.bool false
  %none = torch.constant.none
  // expected-error @+1 {{the attention call has no pygraph.class: run classify-ops first}}
  %0 = torch.aten.scaled_dot_product_attention %q, %q, %q, %m, %float0, %false, %none, %false : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[1,1,32,32],i1>, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,32,16],f32>
  return %0 : !torch.vtensor<[2,4,32,16],f32>
}
