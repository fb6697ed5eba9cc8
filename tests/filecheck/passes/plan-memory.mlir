// RUN: pygraph-opt %s -p plan-memory --split-input-file | filecheck %s
// RUN: pygraph-opt %s -p 'plan-memory{reuse=false}' --split-input-file | filecheck %s --check-prefix=NOREUSE
// RUN: pygraph-opt %s -p 'plan-memory{in-place=false}' --split-input-file | filecheck %s --check-prefix=APART
// RUN: pygraph-opt %s -p 'plan-memory{parallel=true}' --split-input-file | filecheck %s --check-prefix=PARALLEL
// RUN: pygraph-opt %s -p 'plan-memory{outputs=false}' --split-input-file | filecheck %s --check-prefix=OUTPUTS

// %a dies after the second kernel reads it, so %c reuses its bytes; %b is live across both.
// Buffers are 256-byte aligned; the arena holds the peak.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    pygraph.arena_bytes = 1280 : i64
// CHECK:         arena_offset = 0 : i64, layout = #pygraph.layout<[256], [1], 0 : i64, f32>
// CHECK:         arena_offset = 1024 : i64, layout = #pygraph.layout<[3], [1], 0 : i64, f32>
// CHECK:         arena_offset = 0 : i64, layout = #pygraph.layout<[200], [1], 0 : i64, f32>
// NOREUSE-LABEL: func.func @main
// NOREUSE-SAME:    pygraph.arena_bytes = 2304 : i64
module {
  "pygraph.triton_kernel"() {sym_name = "k", entry = "k", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32"], source = ""} : () -> ()
  func.func @main(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[3], [1], 0 : i64, f32>}) -> !pygraph.buf {
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[256], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %b = "pygraph.alloc"() {layout = #pygraph.layout<[3], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %c = "pygraph.alloc"() {layout = #pygraph.layout<[200], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.segment"() ({
      "pygraph.kernel"(%arg0, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%a, %b) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%b, %c) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%c, %b) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
    return %b : !pygraph.buf
  }
}

// -----

// Already planned: running the pass again gives the same placement (the input is its own output).
// CHECK-LABEL: func.func @planned
// CHECK-SAME:    pygraph.arena_bytes = 256 : i64
// CHECK:         arena_offset = 0 : i64
func.func @planned(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[3], [1], 0 : i64, f32>}) -> !pygraph.buf attributes {pygraph.arena_bytes = 256 : i64} {
  %a = "pygraph.alloc"() {layout = #pygraph.layout<[3], [1], 0 : i64, f32>, arena_offset = 0 : i64} : () -> !pygraph.buf
  "pygraph.segment"() ({
    "pygraph.copy"(%arg0, %a) : (!pygraph.buf, !pygraph.buf) -> ()
    "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
  }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
  return %a : !pygraph.buf
}

// -----

// A chain of kernels over same-layout buffers, each input dying where the next output is written: every
// output takes its input's bytes (in place), so the chain runs in one buffer. Without in-place writes,
// %a and %c alternate with %b. The parallel option changes nothing here: each kernel already waits for
// the one before.
// CHECK-LABEL: func.func @chain
// CHECK-SAME:    pygraph.arena_bytes = 1024 : i64
// CHECK-COUNT-3: arena_offset = 0 : i64
// APART-LABEL: func.func @chain
// APART-SAME:    pygraph.arena_bytes = 2048 : i64
// APART:         %[[A:.*]] = "pygraph.alloc"() {arena_offset = 0 : i64
// APART-NEXT:    %[[B:.*]] = "pygraph.alloc"() {arena_offset = 1024 : i64
// APART-NEXT:    %[[C:.*]] = "pygraph.alloc"() {arena_offset = 0 : i64
// PARALLEL-LABEL: func.func @chain
// PARALLEL-SAME:    pygraph.arena_bytes = 1024 : i64
module {
  "pygraph.triton_kernel"() {sym_name = "k", entry = "k", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32"], source = ""} : () -> ()
  func.func @chain(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[256], [1], 0 : i64, f32>}) -> !pygraph.buf {
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[256], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %b = "pygraph.alloc"() {layout = #pygraph.layout<[256], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %c = "pygraph.alloc"() {layout = #pygraph.layout<[256], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.segment"() ({
      "pygraph.kernel"(%arg0, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%a, %b) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%b, %c) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
    return %c : !pygraph.buf
  }
}

// -----

// Two branches read %a (as Q and K projections read one input): %q, written last, may take %a's bytes in
// place, but that makes the %k kernel wait for the %q kernel, which it does not otherwise. The parallel
// option keeps them apart, at the cost of a larger arena. A transposed output (another layout) or an
// input also passed as a view is never written in place.
// CHECK-LABEL: func.func @branches
// CHECK-SAME:    pygraph.arena_bytes = 3072 : i64
// CHECK:         %[[A:.*]] = "pygraph.alloc"() {arena_offset = 0 : i64
// CHECK-NEXT:    %[[K:.*]] = "pygraph.alloc"() {arena_offset = 1024 : i64
// CHECK-NEXT:    %[[Q:.*]] = "pygraph.alloc"() {arena_offset = 0 : i64
// CHECK-NEXT:    %[[T:.*]] = "pygraph.alloc"() {arena_offset = 2048 : i64
// PARALLEL-LABEL: func.func @branches
// PARALLEL-SAME:    pygraph.arena_bytes = 4096 : i64
// PARALLEL:         %[[A:.*]] = "pygraph.alloc"() {arena_offset = 0 : i64
// PARALLEL-NEXT:    %[[K:.*]] = "pygraph.alloc"() {arena_offset = 1024 : i64
// PARALLEL-NEXT:    %[[Q:.*]] = "pygraph.alloc"() {arena_offset = 2048 : i64
module {
  "pygraph.triton_kernel"() {sym_name = "k", entry = "k", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32"], source = ""} : () -> ()
  "pygraph.triton_kernel"() {sym_name = "k3", entry = "k3", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32", "*fp32"], source = ""} : () -> ()
  func.func @branches(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[16, 16], [16, 1], 0 : i64, f32>}) -> (!pygraph.buf, !pygraph.buf, !pygraph.buf) {
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[16, 16], [16, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %k = "pygraph.alloc"() {layout = #pygraph.layout<[16, 16], [16, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %q = "pygraph.alloc"() {layout = #pygraph.layout<[16, 16], [16, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %t = "pygraph.alloc"() {layout = #pygraph.layout<[16, 16], [1, 16], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.segment"() ({
      "pygraph.kernel"(%arg0, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%a, %k) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%a, %q) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      %kt = "pygraph.view"(%k) {layout = #pygraph.layout<[16, 16], [1, 16], 0 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
      "pygraph.kernel"(%k, %kt, %t) {kernel = @k3, grid = [1, 1, 1], access = ["r", "r", "w"], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
    return %q, %t, %arg0 : !pygraph.buf, !pygraph.buf, !pygraph.buf
  }
}

// -----

// An attention kernel's result never takes the bytes of an input, not even one of its layout that dies
// there (%v): every program reads all of its head's keys and values.
// CHECK-LABEL: func.func @attention
// CHECK-SAME:    pygraph.arena_bytes = 512 : i64
// CHECK:         %[[V:.*]] = "pygraph.alloc"() {arena_offset = 0 : i64
// CHECK:         %[[OUT:.*]] = "pygraph.alloc"() {arena_offset = 256 : i64
module {
  "pygraph.triton_kernel"() {sym_name = "k", entry = "k", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32"], source = ""} : () -> ()
  func.func private @fused_0(%arg0: !torch.vtensor<[2,16],f32>, %arg1: !torch.vtensor<[2,16],f32>) -> !torch.vtensor<[2,16],f32> attributes {pygraph.fused} {
    %float0 = torch.constant.float 0.000000e+00
    %false = torch.constant.bool false
    %none = torch.constant.none
    %0 = torch.aten.scaled_dot_product_attention %arg0, %arg0, %arg1, %none, %float0, %false, %none, %false {pygraph.attention_kernel = "ieee", pygraph.class = "attention"} : !torch.vtensor<[2,16],f32>, !torch.vtensor<[2,16],f32>, !torch.vtensor<[2,16],f32>, !torch.none, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,16],f32>
    return %0 : !torch.vtensor<[2,16],f32>
  }
  func.func @attention(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[2, 16], [16, 1], 0 : i64, f32>}) -> !pygraph.buf {
    %v = "pygraph.alloc"() {layout = #pygraph.layout<[2, 16], [16, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %out = "pygraph.alloc"() {layout = #pygraph.layout<[2, 16], [16, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.segment"() ({
      "pygraph.kernel"(%arg0, %v) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%arg0, %v, %out) {kernel = @fused_0, grid = [1, 1, 1], access = ["r", "r", "w"], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
    return %out : !pygraph.buf
  }
}

// -----

// A gather reads its source at its indices, not at each lane's element: its result never takes the bytes
// of the source (%s, dying there with the result's layout), while it may take the index's (%i: each lane
// reads the index at its own element before it writes it).
// CHECK-LABEL: func.func @gather
// CHECK-SAME:    pygraph.arena_bytes = 512 : i64
// CHECK:         %[[S:.*]] = "pygraph.alloc"() {arena_offset = 0 : i64
// CHECK-NEXT:    %[[I:.*]] = "pygraph.alloc"() {arena_offset = 256 : i64
// CHECK-NEXT:    %[[OUT:.*]] = "pygraph.alloc"() {arena_offset = 256 : i64
module {
  "pygraph.triton_kernel"() {sym_name = "k", entry = "k", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32"], source = ""} : () -> ()
  func.func private @fused_0(%arg0: !torch.vtensor<[8],si64>, %arg1: !torch.vtensor<[8],si64>) -> !torch.vtensor<[8],si64> attributes {pygraph.fused} {
    %int0 = torch.constant.int 0
    %false = torch.constant.bool false
    %0 = torch.aten.gather %arg0, %int0, %arg1, %false {pygraph.class = "gather"} : !torch.vtensor<[8],si64>, !torch.int, !torch.vtensor<[8],si64>, !torch.bool -> !torch.vtensor<[8],si64>
    return %0 : !torch.vtensor<[8],si64>
  }
  func.func @gather(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[8], [1], 0 : i64, si64>}) -> !pygraph.buf {
    %s = "pygraph.alloc"() {layout = #pygraph.layout<[8], [1], 0 : i64, si64>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %i = "pygraph.alloc"() {layout = #pygraph.layout<[8], [1], 0 : i64, si64>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %out = "pygraph.alloc"() {layout = #pygraph.layout<[8], [1], 0 : i64, si64>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.segment"() ({
      "pygraph.kernel"(%arg0, %s) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%arg0, %i) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%s, %i, %out) {kernel = @fused_0, grid = [1, 1, 1], access = ["r", "r", "w"], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
    return %out : !pygraph.buf
  }
}

// -----

// Four buffers of 4, 3, 1 and 4 blocks of 256 bytes, each living across its neighbours' ends: placed
// largest first they need 8 blocks (the one-block buffer finds no gap), placed by first use 7, which
// the pass keeps (what is live at once never exceeds 7).
// CHECK-LABEL: func.func @phases
// CHECK-SAME:    pygraph.arena_bytes = 1792 : i64
// CHECK:         %[[D:.*]] = "pygraph.alloc"() {arena_offset = 0 : i64, layout = #pygraph.layout<[256], [1], 0 : i64, f32>}
// CHECK-NEXT:    %[[A:.*]] = "pygraph.alloc"() {arena_offset = 1024 : i64, layout = #pygraph.layout<[192], [1], 0 : i64, f32>}
// CHECK-NEXT:    %[[C:.*]] = "pygraph.alloc"() {arena_offset = 0 : i64, layout = #pygraph.layout<[64], [1], 0 : i64, f32>}
// CHECK-NEXT:    %[[B:.*]] = "pygraph.alloc"() {arena_offset = 256 : i64, layout = #pygraph.layout<[256], [1], 0 : i64, f32>}
module {
  "pygraph.triton_kernel"() {sym_name = "k", entry = "k", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32"], source = ""} : () -> ()
  func.func @phases(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[3], [1], 0 : i64, f32>}) {
    %d = "pygraph.alloc"() {layout = #pygraph.layout<[256], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[192], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %c = "pygraph.alloc"() {layout = #pygraph.layout<[64], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %b = "pygraph.alloc"() {layout = #pygraph.layout<[256], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %d) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    "pygraph.kernel"(%d, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    "pygraph.kernel"(%a, %c) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    "pygraph.kernel"(%c, %b) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    "pygraph.kernel"(%b, %arg0) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    return
  }
}

// -----

// Outputs as scratch: %a and %b (one buffer, in place) die where the output is first written, by a kernel
// reading %b element for element: they live in the output's own bytes, as views of it, and the arena
// holds only %d, which is read after the output is written. The output is reached through the table, so
// no node is patched for it (its kernels, not yet written by codegen-triton, will load its address from
// the slot). Without the option, the arena holds both.
// CHECK-LABEL: func.func @scratch
// CHECK-SAME:    pygraph.arena_bytes = 1024 : i64
// CHECK-NEXT:    %[[O:.*]] = "pygraph.output"() {index = 0 : i64
// CHECK-NEXT:    %[[A:.*]] = "pygraph.view"(%[[O]]) {layout = #pygraph.layout<[256], [1], 0 : i64, f32>}
// CHECK-NEXT:    %[[B:.*]] = "pygraph.view"(%[[O]]) {layout = #pygraph.layout<[256], [1], 0 : i64, f32>}
// CHECK-NEXT:    %[[D:.*]] = "pygraph.alloc"() {arena_offset = 0 : i64
// OUTPUTS-LABEL: func.func @scratch
// OUTPUTS-SAME:    pygraph.arena_bytes = 2048 : i64
// OUTPUTS-COUNT-3: "pygraph.alloc"()
// OUTPUTS-NEXT:    "pygraph.output"()
module {
  func.func private @f(%arg0: !torch.vtensor<[256],f32>) -> !torch.vtensor<[256],f32> attributes {pygraph.fused} {
    return %arg0 : !torch.vtensor<[256],f32>
  }
  func.func private @f2(%arg0: !torch.vtensor<[256],f32>, %arg1: !torch.vtensor<[256],f32>) -> !torch.vtensor<[256],f32> attributes {pygraph.fused} {
    return %arg0 : !torch.vtensor<[256],f32>
  }
  func.func @scratch(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[256], [1], 0 : i64, f32>}) -> (!pygraph.buf {pygraph.io = "indirect", pygraph.slot = 0 : i64}, !pygraph.buf) {
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[256], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %b = "pygraph.alloc"() {layout = #pygraph.layout<[256], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %d = "pygraph.alloc"() {layout = #pygraph.layout<[256], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %o = "pygraph.output"() {index = 0 : i64, layout = #pygraph.layout<[256], [1], 0 : i64, f32>} : () -> !pygraph.buf
    "pygraph.segment"() ({
      "pygraph.kernel"(%arg0, %a) {kernel = @f, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%a, %b) {kernel = @f, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%arg0, %d) {kernel = @f, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%b, %arg0, %o) {kernel = @f2, grid = [1, 1, 1], access = ["r", "r", "w"], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%d, %o) {kernel = @f, grid = [1, 1, 1], access = ["r", "rw"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
    return %o, %d : !pygraph.buf, !pygraph.buf
  }
}

// -----

// A patched output: each node touching a buffer in its bytes is patched every call. Where the GPU's work
// is short (host-bound, no slack), the buffers stay in the arena. Where it is long (64 MB and more per
// buffer), patching three more nodes costs next to no time: %a and %c, which die before the output is written,
// live in its bytes side by side, and the view taken of %c moves with it. %b, read where the output is
// written but in another layout, stays in the arena.
// CHECK-LABEL: func.func @host_bound
// CHECK-SAME:    pygraph.arena_bytes = 1024 : i64
// CHECK-NOT:     "pygraph.view"(
// CHECK-LABEL: func.func @gpu_bound
// CHECK-SAME:    pygraph.arena_bytes = 134217728 : i64
// CHECK-NEXT:    %[[O:.*]] = "pygraph.output"() {index = 0 : i64
// CHECK-NEXT:    %[[A:.*]] = "pygraph.view"(%[[O]]) {layout = #pygraph.layout<[2048, 8192], [8192, 1], 0 : i64, f32>}
// CHECK-NEXT:    %[[C:.*]] = "pygraph.view"(%[[O]]) {layout = #pygraph.layout<[2048, 8192], [8192, 1], 16777216 : i64, f32>}
// CHECK-NEXT:    %[[B:.*]] = "pygraph.alloc"() {arena_offset = 0 : i64
// CHECK:         "pygraph.view"(%[[C]]) {layout = #pygraph.layout<[2048, 4096], [8192, 1], 16781312 : i64, f32>}
module {
  "pygraph.triton_kernel"() {sym_name = "k", entry = "k", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32"], source = ""} : () -> ()
  func.func @host_bound(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[256], [1], 0 : i64, f32>}) -> (!pygraph.buf {pygraph.io = "patch"}) {
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[256], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %b = "pygraph.alloc"() {layout = #pygraph.layout<[256], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %o = "pygraph.output"() {index = 0 : i64, layout = #pygraph.layout<[256], [1], 0 : i64, f32>} : () -> !pygraph.buf
    "pygraph.segment"() ({
      "pygraph.kernel"(%arg0, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%a, %b) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%b, %o) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
    return %o : !pygraph.buf
  }
}

// -----

module {
  "pygraph.triton_kernel"() {sym_name = "k", entry = "k", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32"], source = ""} : () -> ()
  "pygraph.triton_kernel"() {sym_name = "k3", entry = "k3", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32", "*fp32"], source = ""} : () -> ()
  func.func @gpu_bound(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[8192, 8192], [8192, 1], 0 : i64, f32>}) -> (!pygraph.buf {pygraph.io = "patch"}) {
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[2048, 8192], [8192, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %c = "pygraph.alloc"() {layout = #pygraph.layout<[2048, 8192], [8192, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %b = "pygraph.alloc"() {layout = #pygraph.layout<[4096, 8192], [8192, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %o = "pygraph.output"() {index = 0 : i64, layout = #pygraph.layout<[8192, 8192], [8192, 1], 0 : i64, f32>} : () -> !pygraph.buf
    "pygraph.segment"() ({
      "pygraph.kernel"(%arg0, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%arg0, %c) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      %right = "pygraph.view"(%c) {layout = #pygraph.layout<[2048, 4096], [8192, 1], 4096 : i64, f32>} : (!pygraph.buf) -> !pygraph.buf
      "pygraph.kernel"(%a, %right, %b) {kernel = @k3, grid = [1, 1, 1], access = ["r", "r", "w"], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%b, %o) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
    return %o : !pygraph.buf
  }
}

// -----

// A host op's view (`x[i.item()]` runs between graphs) lies in %a's bytes: %a lives until the view's last
// reader, so %c, written while the view is still to be read, does not take them.
// CHECK-LABEL: func.func @host_view
// CHECK:         arena_offset = 0 : i64, layout = #pygraph.layout<[4, 8], [8, 1], 0 : i64, f32>
// CHECK:         arena_offset = 256 : i64, layout = #pygraph.layout<[8], [1], 0 : i64, f32>
// CHECK:         arena_offset = 256 : i64, layout = #pygraph.layout<[8], [1], 0 : i64, f32>
module {
  "pygraph.triton_kernel"() {sym_name = "k", entry = "k", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32"], source = ""} : () -> ()
  func.func @host_view(%arg0: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[4, 8], [8, 1], 0 : i64, f32>}) -> !pygraph.buf {
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[4, 8], [8, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %c = "pygraph.alloc"() {layout = #pygraph.layout<[8], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    %b = "pygraph.alloc"() {layout = #pygraph.layout<[8], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.segment"() ({
      "pygraph.kernel"(%arg0, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
    %v = "pygraph.host"(%a) {args = [0 : index, 0, 0], layouts = [#pygraph.layout<[8], [1], 0 : i64, f32>], op = "aten.select.int", reason = "its index is read from the data", slots = [-1], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
    "pygraph.segment"() ({
      "pygraph.kernel"(%v, %c) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.kernel"(%v, %b) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
      "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
    }) {mode = "graph", info = {}, resultSegmentSizes = array<i32: 0>} : () -> ()
    return %b : !pygraph.buf
  }
}
