// RUN: pygraph-opt %s -p seed-random --split-input-file --verify-diagnostics

// Random numbers are drawn into dense float tensors; an integer result is refused, naming the op.
module {
  func.func @main(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, si64>, pygraph.io = "stage"})
      -> (!pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, si64>}) {
    // expected-error @+1 {{aten.rand_like.default gives int64[4] strides [1] offset 0: pygraph draws random numbers into dense float tensors}}
    %r = "pygraph.library"(%x) {op = "aten.rand_like.default", args = [0 : index, unit, unit, unit, unit, unit], layouts = [#pygraph.layout<[4], [1], 0 : i64, si64>], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
    return %r : !pygraph.buf
  }
}
