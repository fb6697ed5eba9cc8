// RUN: pygraph-opt %s -p fuse-pointwise --split-input-file --verify-diagnostics

// classify-ops calls an op pointwise only if the kernel table has it: anything else is a bug upstream.
func.func @not_in_table(%arg0: !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[4,4],f32> {
  // expected-error @+1 {{aten.mm.default is classified pointwise but has no kernel template}}
  %0 = torch.aten.mm %arg0, %arg0 {pygraph.class = "pointwise"} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  return %0 : !torch.vtensor<[4,4],f32>
}

// -----

// Likewise for reductions: prod has no kernel template (classify-ops calls it a library op).
func.func @not_a_reduction(%arg0: !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[],f32> {
  %none = torch.constant.none {pygraph.class = "scalar"}
  // expected-error @+1 {{aten.prod.default is classified reduction but has no kernel template}}
  %0 = torch.aten.prod %arg0, %none {pygraph.class = "reduction"} : !torch.vtensor<[4,4],f32>, !torch.none -> !torch.vtensor<[],f32>
  return %0 : !torch.vtensor<[],f32>
}
