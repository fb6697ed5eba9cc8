// RUN: pygraph-opt %s -p fuse-pointwise --split-input-file --verify-diagnostics

// classify-ops calls an op pointwise only if the kernel table has it: anything else is a bug upstream.
func.func @not_in_table(%arg0: !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[4,4],f32> {
  // expected-error @+1 {{aten.mm.default is classified pointwise but has no kernel template}}
  %0 = torch.aten.mm %arg0, %arg0 {pygraph.class = "pointwise"} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  return %0 : !torch.vtensor<[4,4],f32>
}
