// RUN: pygraph-opt %s -p classify-ops --split-input-file --verify-diagnostics

func.func @foreign(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  // expected-error @+1 {{'arith.constant' is not an ATen op pygraph knows}}
  %0 = arith.constant 1 : i32
  return %arg0 : !torch.vtensor<[4],f32>
}

// -----

func.func @attention_with_dropout(%q: !torch.vtensor<[2,4,32,16],f32>) -> !torch.vtensor<[2,4,32,16],f32> {
  %float5 = torch.constant.float 5.000000e-01
  %false = torch.constant.bool false
  %none = torch.constant.none
  // expected-error @+1 {{the attention kernel cannot compute this attention: dropout_p is 0.5 (the kernel has no dropout)}}
  %0 = torch.aten.scaled_dot_product_attention %q, %q, %q, %none, %float5, %false, %none, %false {pygraph.attention_kernel = "ieee"} : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.none, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,32,16],f32>
  return %0 : !torch.vtensor<[2,4,32,16],f32>
}

// -----

func.func @attention_precision(%q: !torch.vtensor<[2,4,32,16],f32>) -> !torch.vtensor<[2,4,32,16],f32> {
  %float0 = torch.constant.float 0.000000e+00
  %false = torch.constant.bool false
  %none = torch.constant.none
  // expected-error @+1 {{pygraph.attention_kernel is 'fp8', not one of ieee, tf32}}
  %0 = torch.aten.scaled_dot_product_attention %q, %q, %q, %none, %float0, %false, %none, %false {pygraph.attention_kernel = "fp8"} : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.none, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,32,16],f32>
  return %0 : !torch.vtensor<[2,4,32,16],f32>
}

// -----

func.func @bitcast_to_another_size(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[8],f16> {
  %int5 = torch.constant.int 5
  // expected-error @+1 {{aten.view.dtype from float32 to float16: pygraph reinterprets bits only between dtypes of one size, bool excepted}}
  %0 = torch.aten.view.dtype %arg0, %int5 : !torch.vtensor<[4],f32>, !torch.int -> !torch.vtensor<[8],f16>
  return %0 : !torch.vtensor<[8],f16>
}
