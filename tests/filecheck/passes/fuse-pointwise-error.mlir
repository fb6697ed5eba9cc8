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

// -----

// Likewise for gathers: classify-ops calls an `index` by two tensors a library op.
func.func @not_a_gather(%x: !torch.vtensor<[5,6],f32>, %i: !torch.vtensor<[3],si64>) -> !torch.vtensor<[3],f32> {
  %two = torch.prim.ListConstruct %i, %i {pygraph.class = "scalar"} : (!torch.vtensor<[3],si64>, !torch.vtensor<[3],si64>) -> !torch.list<optional<vtensor>>
  // expected-error @+1 {{aten.index.Tensor is classified gather, but no kernel computes it: it indexes by 2 tensors, not one}}
  %0 = torch.aten.index.Tensor %x, %two {pygraph.class = "gather"} : !torch.vtensor<[5,6],f32>, !torch.list<optional<vtensor>> -> !torch.vtensor<[3],f32>
  return %0 : !torch.vtensor<[3],f32>
}
