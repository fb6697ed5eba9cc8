// RUN: pygraph-opt %s -p hoist-host-copies --split-input-file --verify-diagnostics

// A CPU buffer the model writes (a step counter kept on the host) and copies to the GPU: placing it on
// the GPU would lose the host's updates; the copy is named.
func.func @main(%arg0: !torch.vtensor<[1],f32> {pygraph.device = "cuda", pygraph.name = "x", pygraph.role = "input"},
                %arg1: !torch.vtensor<[1],f32> {pygraph.device = "cpu", pygraph.name = "steps", pygraph.role = "buffer"}) -> !torch.vtensor<[1],f32> {
  %none = torch.constant.none
  %false = torch.constant.bool false
  %int1 = torch.constant.int 1
  %cuda = torch.constant.device "cuda:0"
  %0 = torch.aten.add.Scalar %arg1, %int1, %int1 : !torch.vtensor<[1],f32>, !torch.int, !torch.int -> !torch.vtensor<[1],f32>
  // expected-error @+1 {{buffer 'steps' lives on the CPU, the model writes it and copies it to the GPU}}
  %1 = torch.aten._to_copy %arg1, %none, %none, %cuda, %none, %false, %none : !torch.vtensor<[1],f32>, !torch.none, !torch.none, !torch.Device, !torch.none, !torch.bool, !torch.none -> !torch.vtensor<[1],f32>
  %2 = torch.aten.add.Tensor %arg0, %1, %int1 : !torch.vtensor<[1],f32>, !torch.vtensor<[1],f32>, !torch.int -> !torch.vtensor<[1],f32>
  "pygraph.overwrite"(%0, %arg1) : (!torch.vtensor<[1],f32>, !torch.vtensor<[1],f32>) -> ()
  return %2 : !torch.vtensor<[1],f32>
}
