// RUN: pygraph-opt %s -p write-in-place --split-input-file | filecheck %s

// A KV cache written at a position given by a tensor (index_put), a slice written at a fixed position
// (select_scatter), and running statistics updated by a kernel: each writes its buffer in place, and
// the copies lower-to-plan emitted for the overwrites at the end of the call are gone.
// CHECK:       module attributes {pygraph.transforms = [
// CHECK-SAME:    {location = "model.py:4 (node index_put)", pass = "write-in-place", what = "aten.index_put.default of 'cache' becomes a scatter kernel writing it in place: only the written elements move"},
// CHECK-SAME:    {location = "model.py:5 (node select_scatter)", pass = "write-in-place", what = "aten.select_scatter.default of 'window' becomes a copy into the view it replaces: only 8 elements move"},
// CHECK-SAME:    {location = "model.py:6 (node add)", pass = "write-in-place", what = "kernel @fused_0 writes 'mean' in place"}]}
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    "pygraph.kernel"(%arg2, %arg1, %arg0, %arg2) {access = ["r", "r", "r", "w"], grid = [1, 1, 1], kernel = @scatter_0
// CHECK-NEXT:    %[[ROW:.*]] = "pygraph.view"(%arg3) {layout = #pygraph.layout<[8], [1], 16 : i64, f32>}
// CHECK-NEXT:    "pygraph.kernel"(%arg0, %[[ROW]]) {access = ["r", "w"], grid = [1, 1, 1], kernel = @copy_1
// CHECK-NEXT:    "pygraph.kernel"(%arg4, %arg4) {access = ["r", "w"], grid = [1, 1, 1], kernel = @fused_0
// CHECK-NEXT:    %[[OUT:.*]] = "pygraph.alloc"
// CHECK-NEXT:    "pygraph.kernel"(%arg2, %[[OUT]]) {{.*}}kernel = @fused_1
// CHECK-NEXT:    return %[[OUT]], %arg4
// The scatter's function: the index_put, whose kernel (codegen-triton) writes only the indexed rows.
// CHECK:       func.func private @scatter_0(%arg0: !torch.vtensor<[16,8],f32>, %arg1: !torch.vtensor<[1],si64>, %arg2: !torch.vtensor<[8],f32>) -> !torch.vtensor<[16,8],f32> attributes {pygraph.fused}
// CHECK-NEXT:    %[[LIST:.*]] = torch.prim.ListConstruct %arg1 {pygraph.class = "scalar"}
// CHECK-NEXT:    %[[FALSE:.*]] = torch.constant.bool false {pygraph.class = "scalar"}
// CHECK-NEXT:    %[[PUT:.*]] = torch.aten.index_put %arg0, %[[LIST]], %arg2, %[[FALSE]] {pygraph.class = "scatter"}
// CHECK-NEXT:    return %[[PUT]]
module {
  func.func private @fused_0(%a: !torch.vtensor<[8],f32>) -> !torch.vtensor<[8],f32> attributes {pygraph.fused} {
    %float = torch.constant.float 0.9 {pygraph.class = "scalar"}
    %0 = torch.aten.mul.Scalar %a, %float {pygraph.class = "pointwise"} : !torch.vtensor<[8],f32>, !torch.float -> !torch.vtensor<[8],f32>
    return %0 : !torch.vtensor<[8],f32>
  }
  func.func private @fused_1(%a: !torch.vtensor<[16,8],f32>) -> !torch.vtensor<[16,8],f32> attributes {pygraph.fused} {
    return %a : !torch.vtensor<[16,8],f32>
  }
  func.func private @copy_0(%a: !torch.vtensor<[4,8],f32>) -> !torch.vtensor<[4,8],f32> attributes {pygraph.fused} {
    return %a : !torch.vtensor<[4,8],f32>
  }
  func.func @main(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[8], [1], 0 : i64, f32>, pygraph.io = "stage"},
                  %pos: !pygraph.buf {pygraph.role = "input", pygraph.name = "pos", pygraph.layout = #pygraph.layout<[1], [1], 0 : i64, si64>, pygraph.io = "stage"},
                  %cache: !pygraph.buf {pygraph.role = "buffer", pygraph.name = "cache", pygraph.layout = #pygraph.layout<[16, 8], [8, 1], 0 : i64, f32>, pygraph.io = "direct"},
                  %window: !pygraph.buf {pygraph.role = "buffer", pygraph.name = "window", pygraph.layout = #pygraph.layout<[4, 8], [8, 1], 0 : i64, f32>, pygraph.io = "direct"},
                  %mean: !pygraph.buf {pygraph.role = "buffer", pygraph.name = "mean", pygraph.layout = #pygraph.layout<[8], [1], 0 : i64, f32>, pygraph.io = "direct"})
      -> (!pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[16, 8], [8, 1], 0 : i64, f32>}, !pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[8], [1], 0 : i64, f32>}) {
    %new = "pygraph.library"(%cache, %pos, %x) {op = "aten.index_put.default", args = [0 : index, [1 : index], 2 : index, false], layouts = [#pygraph.layout<[16, 8], [8, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 3>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> !pygraph.buf loc(#index_put)
    %win = "pygraph.library"(%window, %x) {op = "aten.select_scatter.default", args = [0 : index, 1 : index, 0, 2], layouts = [#pygraph.layout<[4, 8], [8, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf loc(#select_scatter)
    %m = "pygraph.alloc"() {layout = #pygraph.layout<[8], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%mean, %m) {kernel = @fused_0, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> () loc(#add)
    %out = "pygraph.alloc"() {layout = #pygraph.layout<[16, 8], [8, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%new, %out) {kernel = @fused_1, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    "pygraph.copy"(%new, %cache) : (!pygraph.buf, !pygraph.buf) -> ()
    "pygraph.kernel"(%win, %window) {kernel = @copy_0, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    "pygraph.copy"(%m, %mean) : (!pygraph.buf, !pygraph.buf) -> ()
    return %out, %m : !pygraph.buf, !pygraph.buf
  }
}
#index_put = loc("index_put"("model.py":4:0))
#select_scatter = loc("select_scatter"("model.py":5:0))
#add = loc("add"("model.py":6:0))

// -----

// The old cache is read after the new one is made, and the kernel's new statistics are computed with
// a reduction: nothing is written in place, nothing is recorded.
// CHECK-NOT:   pygraph.transforms
// CHECK-LABEL: func.func @kept
// CHECK:         op = "aten.index_put.default"
// CHECK:         "pygraph.kernel"(%arg1, %{{.*}}) {{.*}}kernel = @fused_0
// CHECK:         "pygraph.copy"
// CHECK:         "pygraph.copy"
module {
  func.func private @fused_0(%a: !torch.vtensor<[8],f32>) -> !torch.vtensor<[8],f32> attributes {pygraph.fused} {
    %none = torch.constant.none {pygraph.class = "scalar"}
    %0 = torch.aten.sum %a, %none {pygraph.class = "reduction"} : !torch.vtensor<[8],f32>, !torch.none -> !torch.vtensor<[],f32>
    %int1 = torch.constant.int 1 {pygraph.class = "scalar"}
    %1 = torch.aten.sub.Tensor %a, %0, %int1 {pygraph.class = "pointwise"} : !torch.vtensor<[8],f32>, !torch.vtensor<[],f32>, !torch.int -> !torch.vtensor<[8],f32>
    return %1 : !torch.vtensor<[8],f32>
  }
  func.func @kept(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[8], [1], 0 : i64, f32>, pygraph.io = "stage"},
                  %mean: !pygraph.buf {pygraph.role = "buffer", pygraph.name = "mean", pygraph.layout = #pygraph.layout<[8], [1], 0 : i64, f32>, pygraph.io = "direct"},
                  %pos: !pygraph.buf {pygraph.role = "input", pygraph.name = "pos", pygraph.layout = #pygraph.layout<[1], [1], 0 : i64, si64>, pygraph.io = "stage"},
                  %cache: !pygraph.buf {pygraph.role = "buffer", pygraph.name = "cache", pygraph.layout = #pygraph.layout<[16, 8], [8, 1], 0 : i64, f32>, pygraph.io = "direct"})
      -> (!pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[16, 8], [8, 1], 0 : i64, f32>}) {
    %new = "pygraph.library"(%cache, %pos, %x) {op = "aten.index_put.default", args = [0 : index, [1 : index], 2 : index, false], layouts = [#pygraph.layout<[16, 8], [8, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 3>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> !pygraph.buf
    %old = "pygraph.library"(%cache) {op = "aten.neg.default", args = [0 : index], layouts = [#pygraph.layout<[16, 8], [8, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
    %m = "pygraph.alloc"() {layout = #pygraph.layout<[8], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%mean, %m) {kernel = @fused_0, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    "pygraph.copy"(%new, %cache) : (!pygraph.buf, !pygraph.buf) -> ()
    "pygraph.copy"(%m, %mean) : (!pygraph.buf, !pygraph.buf) -> ()
    return %old : !pygraph.buf
  }
}

// -----

// A buffer updated by a gather of itself (`buf.copy_(buf.gather(0, idx))`): the kernel reads it at its
// indices, so writing it in place would overwrite elements other lanes still read. The copy stays.
// CHECK-NOT:   pygraph.transforms
// CHECK-LABEL: func.func @gathered
// CHECK:         "pygraph.kernel"(%arg1, %arg0, %[[NEW:.*]]) {{.*}}kernel = @fused_0
// CHECK-NEXT:    "pygraph.copy"(%[[NEW]], %arg1)
module {
  func.func private @fused_0(%a: !torch.vtensor<[8],f32>, %i: !torch.vtensor<[8],si64>) -> !torch.vtensor<[8],f32> attributes {pygraph.fused} {
    %int0 = torch.constant.int 0 {pygraph.class = "scalar"}
    %false = torch.constant.bool false {pygraph.class = "scalar"}
    %0 = torch.aten.gather %a, %int0, %i, %false {pygraph.class = "gather"} : !torch.vtensor<[8],f32>, !torch.int, !torch.vtensor<[8],si64>, !torch.bool -> !torch.vtensor<[8],f32>
    return %0 : !torch.vtensor<[8],f32>
  }
  func.func @gathered(%idx: !pygraph.buf {pygraph.role = "input", pygraph.name = "idx", pygraph.layout = #pygraph.layout<[8], [1], 0 : i64, si64>, pygraph.io = "stage"},
                      %buf: !pygraph.buf {pygraph.role = "buffer", pygraph.name = "buf", pygraph.layout = #pygraph.layout<[8], [1], 0 : i64, f32>, pygraph.io = "direct"}) {
    %m = "pygraph.alloc"() {layout = #pygraph.layout<[8], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%buf, %idx, %m) {kernel = @fused_0, grid = [1, 1, 1], access = ["r", "r", "w"], operandSegmentSizes = array<i32: 3>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
    "pygraph.copy"(%m, %buf) : (!pygraph.buf, !pygraph.buf) -> ()
    return
  }
}

// -----

// The new statistics are read back and checked (a branch on data) before the copy into the buffer,
// which isolate-data-dependent put after the check: written in place, the buffer would change even in
// a call that fails the check, which then could not run again another way. The copy stays.
// CHECK-NOT:   pygraph.transforms
// CHECK-LABEL: func.func @checked
// CHECK:         "pygraph.kernel"(%arg0, %[[M:.*]]) {{.*}}kernel = @fused_0
// CHECK:         op = "aten._assert_scalar.default"
// CHECK-NEXT:    "pygraph.copy"(%[[M]], %arg0)
module {
  func.func private @fused_0(%a: !torch.vtensor<[8],f32>) -> !torch.vtensor<[8],f32> attributes {pygraph.fused} {
    %float = torch.constant.float 0.9 {pygraph.class = "scalar"}
    %0 = torch.aten.mul.Scalar %a, %float {pygraph.class = "pointwise"} : !torch.vtensor<[8],f32>, !torch.float -> !torch.vtensor<[8],f32>
    return %0 : !torch.vtensor<[8],f32>
  }
  func.func @checked(%mean: !pygraph.buf {pygraph.role = "buffer", pygraph.name = "mean", pygraph.layout = #pygraph.layout<[8], [1], 0 : i64, f32>, pygraph.io = "direct"})
      -> (!pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[8], [1], 0 : i64, f32>}) {
    %m = "pygraph.alloc"() {layout = #pygraph.layout<[8], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%mean, %m) {kernel = @fused_0, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    %s = "pygraph.host"(%m) {op = "aten.sum.default", args = [0 : index, none], layouts = [#pygraph.layout<[], [], 0 : i64, f32>], reason = "sync", slots = [-1], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
    %n = "pygraph.host"(%s) {op = "aten.item.default", args = [0 : index], layouts = [#pygraph.layout<[], [], 0 : i64, f64>], reason = "it reads a value back to the host", slots = [-1], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
    "pygraph.host"(%n) {op = "aten._assert_scalar.default", args = [0 : index, "model.py:3 (`if self.mean.sum() > 0:`): this call's data break what the compiled program assumed there"], layouts = [], reason = "it checks what the traced program assumed about the call's data", slots = [], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 0>} : (!pygraph.buf) -> ()
    "pygraph.copy"(%m, %mean) : (!pygraph.buf, !pygraph.buf) -> ()
    return %m : !pygraph.buf
  }
}

// -----

// An accumulating index_put (index_add) has no scatter kernel: it becomes ATen's index_put_, which adds,
// and the record says why.
// CHECK:       {location = "model.py:4 (node index_put)", pass = "write-in-place", what = "aten.index_put.default of 'cache' becomes aten.index_put_.default: only the written elements move (no scatter kernel: it accumulates (only a plain index_put is a scatter))"}
// CHECK-LABEL: func.func @adds
// CHECK-NEXT:    "pygraph.library"(%arg1, %arg0, %arg2) {args = [0 : index, [unit, 1 : index], 2 : index, true], layouts = [], op = "aten.index_put_.default"
// CHECK-NEXT:    return
// CHECK-NOT:   @scatter
module {
  func.func @adds(%pos: !pygraph.buf {pygraph.role = "input", pygraph.name = "pos", pygraph.layout = #pygraph.layout<[2], [1], 0 : i64, si64>, pygraph.io = "stage"},
                  %cache: !pygraph.buf {pygraph.role = "buffer", pygraph.name = "cache", pygraph.layout = #pygraph.layout<[8, 16], [16, 1], 0 : i64, f32>, pygraph.io = "direct"},
                  %x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[8, 2], [2, 1], 0 : i64, f32>, pygraph.io = "stage"}) {
    %new = "pygraph.library"(%cache, %pos, %x) {op = "aten.index_put.default", args = [0 : index, [unit, 1 : index], 2 : index, true], layouts = [#pygraph.layout<[8, 16], [16, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 3>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf) -> !pygraph.buf loc(#index_put)
    "pygraph.copy"(%new, %cache) : (!pygraph.buf, !pygraph.buf) -> ()
    return
  }
}
#index_put = loc("index_put"("model.py":4:0))
