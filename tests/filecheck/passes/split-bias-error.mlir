// RUN: pygraph-opt %s -p split-bias --split-input-file --verify-diagnostics

// Whether a kernel can take the bias add depends on the classes of the ops reading the result (through a
// list of pieces, on the class of the op reading the list).
func.func @main(%x: !torch.vtensor<[1,3,6,6],f32>, %w: !torch.vtensor<[8,3,3,3],f32>, %b: !torch.vtensor<[8],f32>) -> !torch.vtensor<[1,8,4,4],f32> {
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %ones = torch.prim.ListConstruct %int1, %int1 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %zeros = torch.prim.ListConstruct %int0, %int0 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.conv2d %x, %w, %b, %ones, %zeros, %ones, %int1 {pygraph.class = "library"} : !torch.vtensor<[1,3,6,6],f32>, !torch.vtensor<[8,3,3,3],f32>, !torch.vtensor<[8],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.int -> !torch.vtensor<[1,8,4,4],f32>
  // expected-error @+1 {{'torch.aten.relu' has no pygraph.class: run classify-ops first}}
  %1 = torch.aten.relu %0 : !torch.vtensor<[1,8,4,4],f32> -> !torch.vtensor<[1,8,4,4],f32>
  return %1 : !torch.vtensor<[1,8,4,4],f32>
}

// -----

func.func @main(%x: !torch.vtensor<[1,3,6,6],f32>, %w: !torch.vtensor<[8,3,3,3],f32>, %b: !torch.vtensor<[8],f32>, %y: !torch.vtensor<[1,8,4,4],f32>) -> !torch.vtensor<[1,16,4,4],f32> {
  %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
  %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
  %ones = torch.prim.ListConstruct %int1, %int1 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %zeros = torch.prim.ListConstruct %int0, %int0 {pygraph.class = "scalar"} : (!torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.conv2d %x, %w, %b, %ones, %zeros, %ones, %int1 {pygraph.class = "library"} : !torch.vtensor<[1,3,6,6],f32>, !torch.vtensor<[8,3,3,3],f32>, !torch.vtensor<[8],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.int -> !torch.vtensor<[1,8,4,4],f32>
  %pieces = torch.prim.ListConstruct %0, %y {pygraph.class = "scalar"} : (!torch.vtensor<[1,8,4,4],f32>, !torch.vtensor<[1,8,4,4],f32>) -> !torch.list<vtensor>
  // expected-error @+1 {{'torch.aten.cat' has no pygraph.class: run classify-ops first}}
  %1 = torch.aten.cat %pieces, %int1 : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[1,16,4,4],f32>
  return %1 : !torch.vtensor<[1,16,4,4],f32>
}
