// RUN: pygraph-opt %s -p lower-to-plan --split-input-file --verify-diagnostics

func.func @unclassified(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  // expected-error @+1 {{has no pygraph.class: run classify-ops first}}
  %0 = torch.aten.sin %arg0 : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  return %0 : !torch.vtensor<[4],f32>
}

// -----

func.func @bad_view(%arg0: !torch.vtensor<[4,6],f32>) -> !torch.vtensor<[6,4],f32> {
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %0 = torch.aten.transpose.int %arg0, %int0, %int1 {pygraph.class = "view"} : !torch.vtensor<[4,6],f32>, !torch.int, !torch.int -> !torch.vtensor<[6,4],f32>
  %int24 = torch.constant.int 24 {pygraph.class = "scalar"}
  %list = torch.prim.ListConstruct %int24 {pygraph.class = "scalar"} : (!torch.int) -> !torch.list<int>
  // expected-error @+1 {{cannot view float32[6, 4] strides [1, 6] offset 0 as [24] without a copy}}
  %1 = torch.aten.view %0, %list {pygraph.class = "view"} : !torch.vtensor<[6,4],f32>, !torch.list<int> -> !torch.vtensor<[24],f32>
  return %0 : !torch.vtensor<[6,4],f32>
}

// -----

func.func @runtime_scalar(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  // expected-error @+1 {{cannot evaluate scalar op 'torch.aten.Float.Tensor' at compile time}}
  %0 = torch.aten.Float.Tensor %arg0 {pygraph.class = "scalar"} : !torch.vtensor<[4],f32> -> !torch.float
  return %arg0 : !torch.vtensor<[4],f32>
}
