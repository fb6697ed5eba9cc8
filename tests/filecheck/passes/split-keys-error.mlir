// RUN: pygraph-opt %s -p 'split-keys{keys=16}' --split-input-file --verify-diagnostics

// The scale must be known at compile time to write the kernels: a launch whose attention takes it from
// an argument is refused, naming the function.
module attributes {pygraph.stage = "plan"} {
  func.func private @fused_0(%arg0: !torch.vtensor<[1,2,1,16],f32>, %arg1: !torch.vtensor<[1,2,64,16],f32>, %arg2: !torch.vtensor<[1,2,64,16],f32>, %arg3: !torch.float) -> !torch.vtensor<[1,2,1,16],f32> attributes {pygraph.fused} {
    %float0.000000e00 = torch.constant.float 0.000000e+00 {pygraph.class = "scalar"}
    %false = torch.constant.bool false {pygraph.class = "scalar"}
    %none = torch.constant.none {pygraph.class = "scalar"}
    %0 = torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %none, %float0.000000e00, %false, %arg3, %false {pygraph.attention_kernel = "ieee", pygraph.class = "attention"} : !torch.vtensor<[1,2,1,16],f32>, !torch.vtensor<[1,2,64,16],f32>, !torch.vtensor<[1,2,64,16],f32>, !torch.none, !torch.float, !torch.bool, !torch.float, !torch.bool -> !torch.vtensor<[1,2,1,16],f32>
    return %0 : !torch.vtensor<[1,2,1,16],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1, 2, 1, 16], [32, 16, 16, 1], 0 : i64, f32>, pygraph.name = "q", pygraph.role = "input"},
                  %arg1: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1, 2, 64, 16], [2048, 1024, 16, 1], 0 : i64, f32>, pygraph.name = "k", pygraph.role = "input"},
                  %arg2: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1, 2, 64, 16], [2048, 1024, 16, 1], 0 : i64, f32>, pygraph.name = "v", pygraph.role = "input"},
                  %arg3: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[], [], 0 : i64, f64>, pygraph.name = "scale", pygraph.role = "input"})
      -> (!pygraph.buf {pygraph.io = "patch"}) {
    %0 = "pygraph.output"() {index = 0 : i64, layout = #pygraph.layout<[1, 2, 1, 16], [32, 16, 16, 1], 0 : i64, f32>} : () -> !pygraph.buf
    // expected-error @+1 {{cannot split @fused_0: dropout_p, is_causal, scale and enable_gqa must be known at compile time}}
    "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3, %0) {access = ["r", "r", "r", "r", "w"], grid = [1, 1, 1], kernel = @fused_0, operandSegmentSizes = array<i32: 5>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// A launch that writes an input as well as the result is not what lower-to-plan makes of an attention.
module attributes {pygraph.stage = "plan"} {
  func.func private @fused_0(%arg0: !torch.vtensor<[1,2,1,16],f32>, %arg1: !torch.vtensor<[1,2,64,16],f32>, %arg2: !torch.vtensor<[1,2,64,16],f32>) -> !torch.vtensor<[1,2,1,16],f32> attributes {pygraph.fused} {
    %float0.000000e00 = torch.constant.float 0.000000e+00 {pygraph.class = "scalar"}
    %false = torch.constant.bool false {pygraph.class = "scalar"}
    %none = torch.constant.none {pygraph.class = "scalar"}
    %0 = torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %none, %float0.000000e00, %false, %none, %false {pygraph.attention_kernel = "ieee", pygraph.class = "attention"} : !torch.vtensor<[1,2,1,16],f32>, !torch.vtensor<[1,2,64,16],f32>, !torch.vtensor<[1,2,64,16],f32>, !torch.none, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[1,2,1,16],f32>
    return %0 : !torch.vtensor<[1,2,1,16],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1, 2, 1, 16], [32, 16, 16, 1], 0 : i64, f32>, pygraph.name = "q", pygraph.role = "input"},
                  %arg1: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1, 2, 64, 16], [2048, 1024, 16, 1], 0 : i64, f32>, pygraph.name = "k", pygraph.role = "input"},
                  %arg2: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1, 2, 64, 16], [2048, 1024, 16, 1], 0 : i64, f32>, pygraph.name = "v", pygraph.role = "input"})
      -> (!pygraph.buf {pygraph.io = "patch"}) {
    %0 = "pygraph.output"() {index = 0 : i64, layout = #pygraph.layout<[1, 2, 1, 16], [32, 16, 16, 1], 0 : i64, f32>} : () -> !pygraph.buf
    // expected-error @+1 {{cannot split @fused_0: its launch does not read its inputs and write one result}}
    "pygraph.kernel"(%arg0, %arg1, %arg2, %0) {access = ["rw", "r", "r", "w"], grid = [1, 1, 1], kernel = @fused_0, operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}
