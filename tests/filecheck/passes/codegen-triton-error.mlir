// RUN: pygraph-opt %s -p codegen-triton --split-input-file --verify-diagnostics

func.func @missing_callee(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>}) {
  // expected-error @+1 {{kernel @nowhere is not a fused function}}
  "pygraph.kernel"(%arg0) {kernel = @nowhere, access = ["rw"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> ()
  return
}

// -----

// A fused function may only hold ops the kernel table knows.
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[4,4],f32> attributes {pygraph.fused} {
    // expected-error @+1 {{'torch.aten.mm' has no kernel template (not a pointwise op)}}
    %0 = torch.aten.mm %arg0, %arg0 : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
    return %0 : !torch.vtensor<[4,4],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[4, 4], [4, 1], 0 : i64, f32>}) {
    "pygraph.kernel"(%arg0, %arg1) {kernel = @fused_0, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    return
  }
}

// -----

// Integer tensors to negative powers are an error in eager; the op's location gets the diagnostic.
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[4],si64>) -> !torch.vtensor<[4],si64> attributes {pygraph.fused} {
    %int-2 = torch.constant.int -2
    // expected-error @+1 {{aten.pow.Tensor_Scalar: integer tensors to the power -2 are not supported}}
    %0 = torch.aten.pow.Tensor_Scalar %arg0, %int-2 : !torch.vtensor<[4],si64>, !torch.int -> !torch.vtensor<[4],si64>
    return %0 : !torch.vtensor<[4],si64>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, si64>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, si64>}) {
    "pygraph.kernel"(%arg0, %arg1) {kernel = @fused_0, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    return
  }
}

// -----

// The launch's buffers must match the fused function's signature.
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> attributes {pygraph.fused} {
    %0 = torch.aten.neg %arg0 : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
    return %0 : !torch.vtensor<[4],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[8], [1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>}) {
    // expected-error @+1 {{cannot generate @fused_0: buffer 0 is float32[8] strides [1] offset 0, the fused function expects !torch.vtensor<[4],f32>}}
    "pygraph.kernel"(%arg0, %arg1) {kernel = @fused_0, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    return
  }
}

// -----

// One kernel has one iteration space: reductions over different dims cannot share it.
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[4,8],f32>) -> (!torch.vtensor<[4],f32>, !torch.vtensor<[8],f32>) attributes {pygraph.fused} {
    %int0 = torch.constant.int 0
    %int1 = torch.constant.int 1
    %false = torch.constant.bool false
    %none = torch.constant.none
    %rows = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
    %cols = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
    %0 = torch.aten.sum.dim_IntList %arg0, %rows, %false, %none : !torch.vtensor<[4,8],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[4],f32>
    %1 = torch.aten.sum.dim_IntList %arg0, %cols, %false, %none : !torch.vtensor<[4,8],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[8],f32>
    return %0, %1 : !torch.vtensor<[4],f32>, !torch.vtensor<[8],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[4, 8], [8, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[8], [1], 0 : i64, f32>}) {
    // expected-error @+1 {{cannot generate @fused_0: the reductions of a fused function must share one iteration space}}
    "pygraph.kernel"(%arg0, %arg1, %arg2) {kernel = @fused_0, access = ["r", "w", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return
  }
}

// -----

// A concatenation is computed over the kernel's whole iteration space: one broadcast to a larger output
// has no kernel (fuse-pointwise keeps such a cat out of the group).
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[1,3],f32>, %arg1: !torch.vtensor<[1,4],f32>, %arg2: !torch.vtensor<[2,7],f32>) -> !torch.vtensor<[2,7],f32> attributes {pygraph.fused} {
    %list = torch.prim.ListConstruct %arg0, %arg1 : (!torch.vtensor<[1,3],f32>, !torch.vtensor<[1,4],f32>) -> !torch.list<vtensor>
    %int1 = torch.constant.int 1
    // expected-error @+1 {{a concatenation must compute the kernel's whole iteration space}}
    %0 = torch.aten.cat %list, %int1 : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[1,7],f32>
    %1 = torch.aten.add.Tensor %0, %arg2, %int1 : !torch.vtensor<[1,7],f32>, !torch.vtensor<[2,7],f32>, !torch.int -> !torch.vtensor<[2,7],f32>
    return %1 : !torch.vtensor<[2,7],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 3], [3, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 4], [4, 1], 0 : i64, f32>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 7], [7, 1], 0 : i64, f32>}, %arg3: !pygraph.buf {pygraph.layout = #pygraph.layout<[2, 7], [7, 1], 0 : i64, f32>}) {
    "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3) {kernel = @fused_0, access = ["r", "r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return
  }
}

// -----

// A piece of a concatenation computed in the kernel by an arange: its values would come from the index of
// the whole concatenation, not of the piece.
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[7],f32> attributes {pygraph.fused} {
    %int3 = torch.constant.int 3
    %none = torch.constant.none
    %cpu = torch.constant.device "cpu"
    %false = torch.constant.bool false
    %int6 = torch.constant.int 6
    // expected-error @+1 {{an arange cannot compute a concatenation's piece in its kernel}}
    %ramp = torch.aten.arange %int3, %int6, %none, %cpu, %false {pygraph.class = "pointwise"} : !torch.int, !torch.int, !torch.none, !torch.Device, !torch.bool -> !torch.vtensor<[3],f32>
    %list = torch.prim.ListConstruct %ramp, %arg0 : (!torch.vtensor<[3],f32>, !torch.vtensor<[4],f32>) -> !torch.list<vtensor>
    %int0 = torch.constant.int 0
    %0 = torch.aten.cat %list, %int0 : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[7],f32>
    return %0 : !torch.vtensor<[7],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[7], [1], 0 : i64, f32>}) {
    "pygraph.kernel"(%arg0, %arg1) {kernel = @fused_0, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    return
  }
}

// -----

// A matmul product marked with a precision tl.dot does not have.
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[4,8],f32>, %arg1: !torch.vtensor<[8,8],f32>) -> !torch.vtensor<[4,8],f32> attributes {pygraph.fused} {
    %0 = torch.aten.mm %arg0, %arg1 {pygraph.class = "matmul", pygraph.matmul_kernel = "fp8"} : !torch.vtensor<[4,8],f32>, !torch.vtensor<[8,8],f32> -> !torch.vtensor<[4,8],f32>
    %1 = torch.aten.relu %0 {pygraph.class = "pointwise"} : !torch.vtensor<[4,8],f32> -> !torch.vtensor<[4,8],f32>
    return %1 : !torch.vtensor<[4,8],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[4, 8], [8, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[8, 8], [8, 1], 0 : i64, f32>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[4, 8], [8, 1], 0 : i64, f32>}) {
    // expected-error @+1 {{cannot generate @fused_0: pygraph.matmul_kernel is 'fp8', not one of ieee, tf32}}
    "pygraph.kernel"(%arg0, %arg1, %arg2) {kernel = @fused_0, access = ["r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return
  }
}

// -----

// A gather's source is read at its indices: it must be an input of the kernel, never computed in it
// (fuse-pointwise keeps them apart).
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[4,6],f32>, %arg1: !torch.vtensor<[4,3],si64>) -> !torch.vtensor<[4,3],f32> attributes {pygraph.fused} {
    %int1 = torch.constant.int 1
    %false = torch.constant.bool false
    %0 = torch.aten.mul.Scalar %arg0, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[4,6],f32>, !torch.int -> !torch.vtensor<[4,6],f32>
    // expected-error @+1 {{aten.gather.default: its source must be an input of the kernel (it is read at the indices)}}
    %1 = torch.aten.gather %0, %int1, %arg1, %false {pygraph.class = "gather"} : !torch.vtensor<[4,6],f32>, !torch.int, !torch.vtensor<[4,3],si64>, !torch.bool -> !torch.vtensor<[4,3],f32>
    return %1 : !torch.vtensor<[4,3],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[4, 6], [6, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[4, 3], [3, 1], 0 : i64, si64>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[4, 3], [3, 1], 0 : i64, f32>}) {
    "pygraph.kernel"(%arg0, %arg1, %arg2) {kernel = @fused_0, access = ["r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return
  }
}

// -----

// An embedding's index spans some of its result's dims: it must be an input of the kernel too.
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[10,4],f32>, %arg1: !torch.vtensor<[3],si64>) -> !torch.vtensor<[3,4],f32> attributes {pygraph.fused} {
    %int1 = torch.constant.int 1
    %int-1 = torch.constant.int -1
    %false = torch.constant.bool false
    %0 = torch.aten.add.Scalar %arg1, %int1, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[3],si64>, !torch.int, !torch.int -> !torch.vtensor<[3],si64>
    // expected-error @+1 {{aten.embedding.default: its index must be an input of the kernel (it spans some of the result's dims)}}
    %1 = torch.aten.embedding %arg0, %0, %int-1, %false, %false {pygraph.class = "gather"} : !torch.vtensor<[10,4],f32>, !torch.vtensor<[3],si64>, !torch.int, !torch.bool, !torch.bool -> !torch.vtensor<[3,4],f32>
    return %1 : !torch.vtensor<[3,4],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[10, 4], [4, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[3], [1], 0 : i64, si64>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[3, 4], [4, 1], 0 : i64, f32>}) {
    "pygraph.kernel"(%arg0, %arg1, %arg2) {kernel = @fused_0, access = ["r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return
  }
}

// -----

// The parts of a split attention must be float32 [key heads, splits, query rows, Ev + 2]; a stage is
// "parts" or "combine".
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[1,2,1,16],f32>, %arg1: !torch.vtensor<[1,2,64,16],f32>, %arg2: !torch.vtensor<[1,2,64,16],f32>) -> !torch.vtensor<[1,2,1,16],f32> attributes {pygraph.fused} {
    %float0 = torch.constant.float 0.000000e+00
    %false = torch.constant.bool false
    %none = torch.constant.none
    %0 = torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %none, %float0, %false, %none, %false {pygraph.attention_kernel = "ieee", pygraph.class = "attention"} : !torch.vtensor<[1,2,1,16],f32>, !torch.vtensor<[1,2,64,16],f32>, !torch.vtensor<[1,2,64,16],f32>, !torch.none, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[1,2,1,16],f32>
    return %0 : !torch.vtensor<[1,2,1,16],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 2, 1, 16], [32, 16, 16, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 2, 64, 16], [2048, 1024, 16, 1], 0 : i64, f32>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 2, 64, 16], [2048, 1024, 16, 1], 0 : i64, f32>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[1, 2, 1, 16], [32, 16, 16, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %1 = "pygraph.alloc"() {layout = #pygraph.layout<[2, 4, 1, 16], [64, 16, 16, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    // expected-error @+1 {{the parts of a split attention are float32[2, 4, 1, 16] strides [64, 16, 16, 1] offset 0, not float32 [2, 4, 1, 18] of 2 or more splits}}
    "pygraph.kernel"(%arg0, %arg1, %arg2, %1) {kernel = @fused_0, access = ["r", "r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 4>, pygraph.split_keys = "parts"} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    // expected-error @+1 {{cannot generate @fused_0: pygraph.split_keys is 'both', not one of parts, combine}}
    "pygraph.kernel"(%1, %0) {kernel = @fused_0, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>, pygraph.split_keys = "both"} : (!pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// A matvec kernel's epilogue computes one value per output of its products, so they must have one shape.
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[1,8],f32>, %arg1: !torch.vtensor<[8,8],f32>, %arg2: !torch.vtensor<[1,8],f32>) -> !torch.vtensor<[1,8],f32> attributes {pygraph.fused} {
    %none = torch.constant.none
    %int1 = torch.constant.int 1
    %0 = torch.aten.linear %arg0, %arg1, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[8,8],f32>, !torch.none -> !torch.vtensor<[1,8],f32>
    %1 = torch.aten.linear %arg0, %arg2, %none {pygraph.class = "matvec"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,8],f32>, !torch.none -> !torch.vtensor<[1,1],f32>
    %2 = torch.aten.add.Tensor %0, %1, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,1],f32>, !torch.int -> !torch.vtensor<[1,8],f32>
    return %2 : !torch.vtensor<[1,8],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 8], [8, 1], 0 : i64, f32>}, %arg1: !pygraph.buf {pygraph.layout = #pygraph.layout<[8, 8], [8, 1], 0 : i64, f32>}, %arg2: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 8], [8, 1], 0 : i64, f32>}, %arg3: !pygraph.buf {pygraph.layout = #pygraph.layout<[1, 8], [8, 1], 0 : i64, f32>}) {
    // expected-error @+1 {{cannot generate @fused_0: the products that an epilogue reads must have one shape}}
    "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3) {kernel = @fused_0, access = ["r", "r", "r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return
  }
}
