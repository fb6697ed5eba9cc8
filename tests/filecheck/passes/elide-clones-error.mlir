// RUN: pygraph-opt %s -p elide-clones --split-input-file --verify-diagnostics

// Whether a copy may go depends on the classes of the copy and of the ops reading it.
func.func @main(%x: !torch.vtensor<[4,4],f32>, %w: !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[4,4],f32> {
  %none = torch.constant.none {pygraph.class = "scalar"}
  // expected-error @+1 {{the copy has no pygraph.class: run classify-ops first}}
  %0 = torch.aten.clone %x, %none : !torch.vtensor<[4,4],f32>, !torch.none -> !torch.vtensor<[4,4],f32>
  %1 = torch.aten.mm %0, %w {pygraph.class = "library"} : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  return %1 : !torch.vtensor<[4,4],f32>
}

// -----

func.func @main(%x: !torch.vtensor<[4,4],f32>, %w: !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[4,4],f32> {
  %none = torch.constant.none {pygraph.class = "scalar"}
  %0 = torch.aten.clone %x, %none {pygraph.class = "pointwise"} : !torch.vtensor<[4,4],f32>, !torch.none -> !torch.vtensor<[4,4],f32>
  // expected-error @+1 {{'torch.aten.mm' has no pygraph.class: run classify-ops first}}
  %1 = torch.aten.mm %0, %w : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  return %1 : !torch.vtensor<[4,4],f32>
}
