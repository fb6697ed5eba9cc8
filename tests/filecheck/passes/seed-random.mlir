// RUN: pygraph-opt %s -p seed-random --split-input-file | filecheck %s

// Two random ops on a GPU: each becomes a Philox kernel that reads the per-call seed and offset
// (appended arguments of role "rng") and draws its own counters: rand_like the first 32 numbers,
// randn the next 16; the call draws 48. The vendor calls are gone; their results are arena buffers.
// CHECK:       module attributes {pygraph.transforms = [
// CHECK-SAME:    {location = "model.py:7 (node rand_like)", pass = "seed-random", what = "aten.rand_like.default draws 32 numbers in kernel @uniform_0 from the seed and offset the runtime feeds each call (numbers 0 to 31)"},
// CHECK-SAME:    {location = "model.py:8 (node randn)", pass = "seed-random", what = "aten.randn.default draws 16 numbers in kernel @normal_0 from the seed and offset the runtime feeds each call (numbers 32 to 47)"}]}
// CHECK:       "pygraph.triton_kernel"() {entry = "uniform_0", {{.*}}signature = ["*i64", "*i64", "*fp32:16"], source = "{{.*}}def uniform_0(seed, offset, out):{{.*}}counter = tl.load(offset) + 0 + i{{.*}}tl.umulhi(0xCD9E8D57, a2){{.*}}tl.store(out + i, value.to(tl.float32), mask=mask)
// CHECK:       "pygraph.triton_kernel"() {entry = "normal_0", {{.*}}signature = ["*i64", "*i64", "*fp16:16"], source = "{{.*}}counter = tl.load(offset) + 32 + i{{.*}}tl.cos(6.283185307179586 * u2){{.*}}value.to(tl.float16)
// CHECK-LABEL: func.func @main
// CHECK-SAME:    %arg1: !pygraph.buf {pygraph.device = "cpu", pygraph.io = "direct", pygraph.layout = #pygraph.layout<[], [], 0 : i64, si64>, pygraph.name = "seed", pygraph.role = "rng"}
// CHECK-SAME:    %arg2: !pygraph.buf {pygraph.device = "cpu", pygraph.io = "direct", pygraph.layout = #pygraph.layout<[], [], 0 : i64, si64>, pygraph.name = "offset", pygraph.role = "rng"}
// CHECK-SAME:    pygraph.random_numbers = 48 : i64
// CHECK-NEXT:    %[[R:.*]] = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[4, 8], [1, 4], 0 : i64, f32>}
// CHECK-NEXT:    "pygraph.kernel"(%arg1, %arg2, %[[R]]) {access = ["r", "r", "w"], grid = [1, 1, 1], kernel = @uniform_0
// CHECK-NEXT:    %[[N:.*]] = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[16], [1], 0 : i64, f16>}
// CHECK-NEXT:    "pygraph.kernel"(%arg1, %arg2, %[[N]]) {access = ["r", "r", "w"], grid = [1, 1, 1], kernel = @normal_0
// CHECK-NEXT:    return %[[R]], %[[N]]
module {
  func.func @main(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.device = "cuda", pygraph.layout = #pygraph.layout<[4, 8], [1, 4], 0 : i64, f32>, pygraph.io = "stage"})
      -> (!pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[4, 8], [1, 4], 0 : i64, f32>}, !pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[16], [1], 0 : i64, f16>}) {
    %r = "pygraph.library"(%x) {op = "aten.rand_like.default", args = [0 : index, unit, unit, unit, unit, unit], layouts = [#pygraph.layout<[4, 8], [1, 4], 0 : i64, f32>], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf loc(#rand_like)
    %n = "pygraph.library"() {op = "aten.randn.default", args = [[16], 5, unit, #pygraph.device<"cuda">, false], layouts = [#pygraph.layout<[16], [1], 0 : i64, f16>], operandSegmentSizes = array<i32: 0>, resultSegmentSizes = array<i32: 1>} : () -> !pygraph.buf loc(#randn)
    return %r, %n : !pygraph.buf, !pygraph.buf
  }
}
#rand_like = loc("rand_like"("model.py":7:0))
#randn = loc("randn"("model.py":8:0))

// -----

// No random op: nothing changes, no rng arguments.
// CHECK-NOT:   pygraph.transforms
// CHECK-LABEL: func.func @deterministic
// CHECK-NOT:     pygraph.role = "rng"
// CHECK:         "pygraph.library"{{.*}}op = "aten.relu.default"
module {
  func.func @deterministic(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>, pygraph.io = "stage"})
      -> (!pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>}) {
    %l = "pygraph.library"(%x) {op = "aten.relu.default", args = [0 : index], layouts = [#pygraph.layout<[4], [1], 0 : i64, f32>], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
    return %l : !pygraph.buf
  }
}
