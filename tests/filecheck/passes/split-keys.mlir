// RUN: pygraph-opt %s -p 'split-keys{keys=32}' --split-input-file | filecheck %s
// RUN: pygraph-opt %s -p split-keys --split-input-file | filecheck %s --check-prefix=AUTO
// RUN: pygraph-opt %s -p 'split-keys{keys=off}' --split-input-file | filecheck %s --check-prefix=OFF

// A decoding step's attention: 4 query heads over 2 key heads (enable_gqa), one query, 80 keys. With 32
// keys per program, the one launch becomes two of the same function: the parts (2 key heads, 3 splits,
// 2 query rows each, 16 values + maximum + sum) written by the first, read by the second, which writes
// the result where the launch wrote it.
// CHECK-LABEL: func.func @main
// CHECK:         %[[OUT:.*]] = "pygraph.output"()
// CHECK-NEXT:    %[[PARTS:.*]] = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[2, 3, 2, 18], [108, 36, 18, 1], 0 : i64, f32>}
// CHECK-NEXT:    "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3, %[[PARTS]]) {access = ["r", "r", "r", "r", "w"], grid = [1, 1, 1], kernel = @fused_0, {{.*}}pygraph.split_keys = "parts"}
// CHECK-NEXT:    "pygraph.kernel"(%[[PARTS]], %[[OUT]]) {access = ["r", "w"], grid = [1, 1, 1], kernel = @fused_0, {{.*}}pygraph.split_keys = "combine"}
// CHECK-NEXT:    return %[[OUT]]
// The measured rule starts at 128 keys: 80 stay whole.
// AUTO-LABEL: func.func @main
// AUTO:         "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3, %0) {access = ["r", "r", "r", "r", "w"], grid = [1, 1, 1], kernel = @fused_0, operandSegmentSizes = array<i32: 5>}
// AUTO-NEXT:    return
// OFF-LABEL: func.func @main
// OFF-NOT:     pygraph.split_keys
module attributes {pygraph.stage = "plan"} {
  func.func private @fused_0(%arg0: !torch.vtensor<[1,4,1,16],f32>, %arg1: !torch.vtensor<[1,2,80,16],f32>, %arg2: !torch.vtensor<[1,2,80,16],f32>, %arg3: !torch.vtensor<[1,1,1,80],i1>) -> !torch.vtensor<[1,4,1,16],f32> attributes {pygraph.fused} {
    %float0.000000e00 = torch.constant.float 0.000000e+00 {pygraph.class = "scalar"}
    %false = torch.constant.bool false {pygraph.class = "scalar"}
    %none = torch.constant.none {pygraph.class = "scalar"}
    %true = torch.constant.bool true {pygraph.class = "scalar"}
    %0 = torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %arg3, %float0.000000e00, %false, %none, %true {pygraph.attention_kernel = "ieee", pygraph.class = "attention"} : !torch.vtensor<[1,4,1,16],f32>, !torch.vtensor<[1,2,80,16],f32>, !torch.vtensor<[1,2,80,16],f32>, !torch.vtensor<[1,1,1,80],i1>, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[1,4,1,16],f32>
    return %0 : !torch.vtensor<[1,4,1,16],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1, 4, 1, 16], [64, 16, 16, 1], 0 : i64, f32>, pygraph.name = "q", pygraph.role = "input"},
                  %arg1: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1, 2, 80, 16], [2560, 1280, 16, 1], 0 : i64, f32>, pygraph.name = "k", pygraph.role = "input"},
                  %arg2: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1, 2, 80, 16], [2560, 1280, 16, 1], 0 : i64, f32>, pygraph.name = "v", pygraph.role = "input"},
                  %arg3: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1, 1, 1, 80], [80, 80, 80, 1], 0 : i64, i1>, pygraph.name = "mask", pygraph.role = "input"})
      -> (!pygraph.buf {pygraph.io = "patch"}) {
    %0 = "pygraph.output"() {index = 0 : i64, layout = #pygraph.layout<[1, 4, 1, 16], [64, 16, 16, 1], 0 : i64, f32>} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %arg1, %arg2, %arg3, %0) {access = ["r", "r", "r", "r", "w"], grid = [1, 1, 1], kernel = @fused_0, operandSegmentSizes = array<i32: 5>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}

// -----

// 512 keys: the measured rule splits them in 32 of 16 keys (2 key heads: fewer than 64 programs with
// splits of 64 or 32 keys), and so does a forced size. 80 query rows per key head (40 queries of a group of
// 2) do not fit one program (at most 64): the attention stays whole under every setting.
// CHECK-LABEL: func.func @main
// CHECK:         "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[2, 16, 2, 18], [576, 36, 18, 1], 0 : i64, f32>}
// CHECK:         "pygraph.kernel"(%arg3, %arg1, %arg2, %{{.*}}) {{.*}}pygraph.split_keys = "parts"
// CHECK:         pygraph.split_keys = "combine"
// CHECK-NOT:     pygraph.split_keys
// CHECK:         return
// AUTO-LABEL: func.func @main
// AUTO:         "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[2, 32, 2, 18], [1152, 36, 18, 1], 0 : i64, f32>}
// AUTO:         pygraph.split_keys = "parts"
// AUTO:         pygraph.split_keys = "combine"
// AUTO-NOT:     pygraph.split_keys
// AUTO:         return
module attributes {pygraph.stage = "plan"} {
  func.func private @fused_0(%arg0: !torch.vtensor<[1,4,1,16],f32>, %arg1: !torch.vtensor<[1,2,512,16],f32>, %arg2: !torch.vtensor<[1,2,512,16],f32>) -> !torch.vtensor<[1,4,1,16],f32> attributes {pygraph.fused} {
    %float0.000000e00 = torch.constant.float 0.000000e+00 {pygraph.class = "scalar"}
    %false = torch.constant.bool false {pygraph.class = "scalar"}
    %none = torch.constant.none {pygraph.class = "scalar"}
    %true = torch.constant.bool true {pygraph.class = "scalar"}
    %0 = torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %none, %float0.000000e00, %false, %none, %true {pygraph.attention_kernel = "ieee", pygraph.class = "attention"} : !torch.vtensor<[1,4,1,16],f32>, !torch.vtensor<[1,2,512,16],f32>, !torch.vtensor<[1,2,512,16],f32>, !torch.none, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[1,4,1,16],f32>
    return %0 : !torch.vtensor<[1,4,1,16],f32>
  }
  func.func private @fused_1(%arg0: !torch.vtensor<[1,4,40,16],f32>, %arg1: !torch.vtensor<[1,2,512,16],f32>, %arg2: !torch.vtensor<[1,2,512,16],f32>) -> !torch.vtensor<[1,4,40,16],f32> attributes {pygraph.fused} {
    %float0.000000e00 = torch.constant.float 0.000000e+00 {pygraph.class = "scalar"}
    %false = torch.constant.bool false {pygraph.class = "scalar"}
    %none = torch.constant.none {pygraph.class = "scalar"}
    %true = torch.constant.bool true {pygraph.class = "scalar"}
    %0 = torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %none, %float0.000000e00, %false, %none, %true {pygraph.attention_kernel = "ieee", pygraph.class = "attention"} : !torch.vtensor<[1,4,40,16],f32>, !torch.vtensor<[1,2,512,16],f32>, !torch.vtensor<[1,2,512,16],f32>, !torch.none, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[1,4,40,16],f32>
    return %0 : !torch.vtensor<[1,4,40,16],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1, 4, 40, 16], [2560, 640, 16, 1], 0 : i64, f32>, pygraph.name = "q", pygraph.role = "input"},
                  %arg1: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1, 2, 512, 16], [16384, 8192, 16, 1], 0 : i64, f32>, pygraph.name = "k", pygraph.role = "input"},
                  %arg2: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1, 2, 512, 16], [16384, 8192, 16, 1], 0 : i64, f32>, pygraph.name = "v", pygraph.role = "input"},
                  %arg3: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[1, 4, 1, 16], [64, 16, 16, 1], 0 : i64, f32>, pygraph.name = "q1", pygraph.role = "input"})
      -> (!pygraph.buf {pygraph.io = "patch"}, !pygraph.buf {pygraph.io = "patch"}) {
    %0 = "pygraph.output"() {index = 0 : i64, layout = #pygraph.layout<[1, 4, 1, 16], [64, 16, 16, 1], 0 : i64, f32>} : () -> !pygraph.buf
    %1 = "pygraph.output"() {index = 1 : i64, layout = #pygraph.layout<[1, 4, 40, 16], [2560, 640, 16, 1], 0 : i64, f32>} : () -> !pygraph.buf
    "pygraph.kernel"(%arg3, %arg1, %arg2, %0) {access = ["r", "r", "r", "w"], grid = [1, 1, 1], kernel = @fused_0, operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    "pygraph.kernel"(%arg0, %arg1, %arg2, %1) {access = ["r", "r", "r", "w"], grid = [1, 1, 1], kernel = @fused_1, operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0, %1 : !pygraph.buf, !pygraph.buf
  }
}

// -----

// A decoding step of 32 sequences: 64 key heads of 512 keys, a group of 4 query heads each. Whole, the
// kernel makes a program per multiprocessor already: in float32 the measured rule keeps it whole; in
// bfloat16 (whole, ATen's kernel would run it) it splits, in 8 splits of 64 keys.
// AUTO-LABEL: func.func @main
// AUTO:         "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[64, 8, 4, 18], [576, 72, 18, 1], 0 : i64, f32>}
// AUTO:         "pygraph.kernel"(%arg3, %arg1, %arg2, %{{.*}}) {{.*}}kernel = @fused_0, {{.*}}pygraph.split_keys = "parts"
// AUTO:         pygraph.split_keys = "combine"
// AUTO:         "pygraph.kernel"(%arg0, %arg4, %arg5, %{{.*}}) {access = ["r", "r", "r", "w"], grid = [1, 1, 1], kernel = @fused_1, operandSegmentSizes = array<i32: 4>}
// AUTO-NEXT:    return
module attributes {pygraph.stage = "plan"} {
  func.func private @fused_0(%arg0: !torch.vtensor<[32,8,1,16],bf16>, %arg1: !torch.vtensor<[32,2,512,16],bf16>, %arg2: !torch.vtensor<[32,2,512,16],bf16>) -> !torch.vtensor<[32,8,1,16],bf16> attributes {pygraph.fused} {
    %float0.000000e00 = torch.constant.float 0.000000e+00 {pygraph.class = "scalar"}
    %false = torch.constant.bool false {pygraph.class = "scalar"}
    %none = torch.constant.none {pygraph.class = "scalar"}
    %true = torch.constant.bool true {pygraph.class = "scalar"}
    %0 = torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %none, %float0.000000e00, %false, %none, %true {pygraph.attention_kernel = "tf32", pygraph.class = "attention"} : !torch.vtensor<[32,8,1,16],bf16>, !torch.vtensor<[32,2,512,16],bf16>, !torch.vtensor<[32,2,512,16],bf16>, !torch.none, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[32,8,1,16],bf16>
    return %0 : !torch.vtensor<[32,8,1,16],bf16>
  }
  func.func private @fused_1(%arg0: !torch.vtensor<[32,8,1,16],f32>, %arg1: !torch.vtensor<[32,2,512,16],f32>, %arg2: !torch.vtensor<[32,2,512,16],f32>) -> !torch.vtensor<[32,8,1,16],f32> attributes {pygraph.fused} {
    %float0.000000e00 = torch.constant.float 0.000000e+00 {pygraph.class = "scalar"}
    %false = torch.constant.bool false {pygraph.class = "scalar"}
    %none = torch.constant.none {pygraph.class = "scalar"}
    %true = torch.constant.bool true {pygraph.class = "scalar"}
    %0 = torch.aten.scaled_dot_product_attention %arg0, %arg1, %arg2, %none, %float0.000000e00, %false, %none, %true {pygraph.attention_kernel = "ieee", pygraph.class = "attention"} : !torch.vtensor<[32,8,1,16],f32>, !torch.vtensor<[32,2,512,16],f32>, !torch.vtensor<[32,2,512,16],f32>, !torch.none, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[32,8,1,16],f32>
    return %0 : !torch.vtensor<[32,8,1,16],f32>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[32, 8, 1, 16], [128, 16, 16, 1], 0 : i64, f32>, pygraph.name = "q32", pygraph.role = "input"},
                  %arg1: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[32, 2, 512, 16], [16384, 8192, 16, 1], 0 : i64, bf16>, pygraph.name = "k", pygraph.role = "input"},
                  %arg2: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[32, 2, 512, 16], [16384, 8192, 16, 1], 0 : i64, bf16>, pygraph.name = "v", pygraph.role = "input"},
                  %arg3: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[32, 8, 1, 16], [128, 16, 16, 1], 0 : i64, bf16>, pygraph.name = "q", pygraph.role = "input"},
                  %arg4: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[32, 2, 512, 16], [16384, 8192, 16, 1], 0 : i64, f32>, pygraph.name = "k32", pygraph.role = "input"},
                  %arg5: !pygraph.buf {pygraph.io = "stage", pygraph.layout = #pygraph.layout<[32, 2, 512, 16], [16384, 8192, 16, 1], 0 : i64, f32>, pygraph.name = "v32", pygraph.role = "input"})
      -> (!pygraph.buf {pygraph.io = "patch"}, !pygraph.buf {pygraph.io = "patch"}) {
    %0 = "pygraph.output"() {index = 0 : i64, layout = #pygraph.layout<[32, 8, 1, 16], [128, 16, 16, 1], 0 : i64, bf16>} : () -> !pygraph.buf
    %1 = "pygraph.output"() {index = 1 : i64, layout = #pygraph.layout<[32, 8, 1, 16], [128, 16, 16, 1], 0 : i64, f32>} : () -> !pygraph.buf
    "pygraph.kernel"(%arg3, %arg1, %arg2, %0) {access = ["r", "r", "r", "w"], grid = [1, 1, 1], kernel = @fused_0, operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    "pygraph.kernel"(%arg0, %arg4, %arg5, %1) {access = ["r", "r", "r", "w"], grid = [1, 1, 1], kernel = @fused_1, operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    return %0, %1 : !pygraph.buf, !pygraph.buf
  }
}
