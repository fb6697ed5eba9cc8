// RUN: pygraph-opt %s -p place-constants --verify-diagnostics

// expected-error @+1 {{argument 0 is on device 'mps'; pygraph runs programs on cpu or cuda}}
func.func @main(%arg0: !torch.vtensor<[4],f32> {pygraph.device = "mps", pygraph.name = "x", pygraph.role = "input"}) -> !torch.vtensor<[4],f32> {
  return %arg0 : !torch.vtensor<[4],f32>
}
