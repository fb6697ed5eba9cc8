// RUN: pygraph-opt %s -p select-graphs --verify-diagnostics

module {
  "pygraph.triton_kernel"() {sym_name = "k", entry = "k", num_warps = 1 : i64, num_stages = 1 : i64, signature = ["*fp32", "*fp32"], source = ""} : () -> ()
  // expected-error @+1 {{the plan has nodes outside segments: run form-segments first}}
  func.func @main(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>}) {
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[4], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%x, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    return
  }
}
