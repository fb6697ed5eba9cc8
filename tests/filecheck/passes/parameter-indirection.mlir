// RUN: pygraph-opt %s -p parameter-indirection --split-input-file | filecheck %s
// RUN: pygraph-opt %s -p 'parameter-indirection{static-outputs=true}' --split-input-file | filecheck %s --check-prefix=STATIC

// %x only feeds a kernel: reached through the table. %y feeds a vendor call: a copy kernel moves it
// into a static buffer first. Output 0 is written by one kernel: it writes the fresh tensor through
// the table. Output 1 comes from a vendor call: a copy kernel moves it into the fresh tensor.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    %arg0: !pygraph.buf {{{.*}}pygraph.io = "indirect", pygraph.io_choice = "indirect", pygraph.io_costs = {indirect = 0.000000e+00 : f64, patch = 2.100000e+00 : f64, stage = {{.*}}}{{.*}}pygraph.slot = 2 : i64}
// CHECK-SAME:    %arg1: !pygraph.buf {{{.*}}pygraph.io = "copy", pygraph.io_choice = "copy", pygraph.io_costs = {copy = {{.*}}, eager = {{.*}}, patch = {{.*}}, stage = {{.*}}}{{.*}}pygraph.slot = 3 : i64}
// CHECK-SAME:    -> (!pygraph.buf {pygraph.io = "indirect", pygraph.io_choice = "indirect", {{.*}}pygraph.slot = 0 : i64}, !pygraph.buf {pygraph.io = "indirect", pygraph.io_choice = "copy kernel", {{.*}}pygraph.slot = 1 : i64})
// CHECK-SAME:    pygraph.table_slots = 4 : i64
// CHECK-NEXT:    %[[SBUF:.*]] = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[4], [1], 0 : i64, f32>}
// CHECK-NEXT:    "pygraph.kernel"(%arg1, %[[SBUF]]) {{{.*}}kernel = @copy_1
// CHECK-NEXT:    %[[OUT1:.*]] = "pygraph.output"() {index = 1 : i64
// CHECK-NEXT:    %[[OUT0:.*]] = "pygraph.output"() {index = 0 : i64
// CHECK-NEXT:    "pygraph.kernel"(%arg0, %[[OUT0]]) {{{.*}}kernel = @k
// CHECK-NEXT:    %[[LIB:.*]] = "pygraph.library"(%[[SBUF]])
// CHECK-NEXT:    "pygraph.kernel"(%[[LIB]], %[[OUT1]]) {{{.*}}kernel = @copy_0
// CHECK-NEXT:    return %[[OUT0]], %[[OUT1]]
// STATIC-LABEL: func.func @main
// STATIC-SAME:    -> (!pygraph.buf {pygraph.io = "static", pygraph.io_choice = "static", {{.*}}}, !pygraph.buf {pygraph.io = "static"
module {
  func.func private @k(%a: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> attributes {pygraph.fused} {
    return %a : !torch.vtensor<[4],f32>
  }
  func.func @main(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>, pygraph.io = "stage"},
                  %y: !pygraph.buf {pygraph.role = "input", pygraph.name = "y", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>, pygraph.io = "stage"})
      -> (!pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>}, !pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>}) {
    %a = "pygraph.alloc"() {layout = #pygraph.layout<[4], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%x, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    %l = "pygraph.library"(%y) {op = "aten.relu.default", args = [0 : index], layouts = [#pygraph.layout<[4], [1], 0 : i64, f32>], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
    return %a, %l : !pygraph.buf, !pygraph.buf
  }
}

// -----

// A 64 MiB input feeding a convolution: the runtime patches its address into the convolution's recorded
// kernels (host time, which this GPU-bound call hides), cheaper than copying it into the graph or running
// the convolution outside it. The output is patched into the kernel that writes it; nothing else uses the
// table, so there is none (its writer would cost more than the two patches).
// CHECK-LABEL: func.func @big
// CHECK-SAME:    pygraph.io = "patch", pygraph.io_choice = "patch", pygraph.io_costs = {copy = {{.*}}, eager = 1.460000e+00 : f64, patch = 2.100000e-01 : f64,
// CHECK-SAME:    -> (!pygraph.buf {pygraph.io = "patch", pygraph.io_choice = "patch"
// CHECK-SAME:    pygraph.table_slots = 0 : i64
// CHECK-NEXT:    %[[CONV:.*]] = "pygraph.library"(%arg0, %arg1) {{{.*}}op = "aten.convolution.default"
// CHECK-NEXT:    %[[OUT:.*]] = "pygraph.output"() {index = 0 : i64
// CHECK-NEXT:    "pygraph.kernel"(%[[CONV]], %[[OUT]])
func.func private @k(%a: !torch.vtensor<[16,4,512,512],f32>) -> !torch.vtensor<[16,4,512,512],f32> attributes {pygraph.fused} {
  return %a : !torch.vtensor<[16,4,512,512],f32>
}
func.func @big(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[16, 4, 512, 512], [1048576, 262144, 512, 1], 0 : i64, f32>, pygraph.io = "stage"},
               %w: !pygraph.buf {pygraph.role = "parameter", pygraph.name = "w", pygraph.layout = #pygraph.layout<[4, 4, 1, 1], [4, 1, 1, 1], 0 : i64, f32>, pygraph.io = "direct"})
    -> (!pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[16, 4, 512, 512], [1048576, 262144, 512, 1], 0 : i64, f32>}) {
  %c = "pygraph.library"(%x, %w) {op = "aten.convolution.default", args = [0 : index, 1 : index, unit, [1, 1], [0, 0], [1, 1], false, [0, 0], 1], layouts = [#pygraph.layout<[16, 4, 512, 512], [1048576, 262144, 512, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf
  %r = "pygraph.alloc"() {layout = #pygraph.layout<[16, 4, 512, 512], [1048576, 262144, 512, 1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
  "pygraph.kernel"(%c, %r) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
  return %r : !pygraph.buf
}

// -----

// A GPU-bound call (a 1024^3 matmul outlasts the host's part of a replay): host time counts a tenth up to
// that slack, so the matmul that produces the output writes the fresh tensor itself, its recorded kernel's
// parameters patched each call, instead of a copy kernel moving 4 MiB or the matmul running after the
// graph; it reads its input where it is (nothing is copied).
// CHECK-LABEL: func.func @gpu_bound
// CHECK-SAME:    pygraph.io = "patch", pygraph.io_choice = "patch"
// CHECK-SAME:    -> (!pygraph.buf {pygraph.io = "patch", pygraph.io_choice = "patch", pygraph.io_costs = {copy = {{.*}}, "copy kernel" = {{.*}}, eager = 1.460000e+00 : f64, patch = 2.100000e-01 : f64}
// CHECK:         %[[MM:.*]] = "pygraph.library"(%arg0, %arg1) {{{.*}}op = "aten.mm.default"
// CHECK-NEXT:    return %[[MM]]
func.func @gpu_bound(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[1024, 1024], [1024, 1], 0 : i64, f32>, pygraph.io = "stage"},
                     %w: !pygraph.buf {pygraph.role = "parameter", pygraph.name = "w", pygraph.layout = #pygraph.layout<[1024, 1024], [1024, 1], 0 : i64, f32>, pygraph.io = "direct"})
    -> (!pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[1024, 1024], [1024, 1], 0 : i64, f32>}) {
  %m = "pygraph.library"(%x, %w) {op = "aten.mm.default", args = [0 : index, 1 : index], layouts = [#pygraph.layout<[1024, 1024], [1024, 1], 0 : i64, f32>], operandSegmentSizes = array<i32: 2>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf, !pygraph.buf) -> !pygraph.buf
  return %m : !pygraph.buf
}

// -----

// Already decided (the table exists): nothing changes.
// CHECK-LABEL: func.func @decided
// CHECK-SAME:    pygraph.io = "stage"
// CHECK-SAME:    pygraph.table_slots = 0 : i64
// CHECK-NEXT:    return %arg0
func.func @decided(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>, pygraph.io = "stage"})
    -> (!pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>}) attributes {pygraph.table_slots = 0 : i64} {
  return %x : !pygraph.buf
}

// -----

// The seed and offset of random kernels (role "rng") travel in value slots (even slots: 16-byte aligned); a host op's result that only
// a kernel reads is reached through the table (the graph after the host op reads it where the op put
// it), and one whose shape the data decides is returned as a copy.
// CHECK-LABEL: func.func @rng_and_host
// CHECK-SAME:    pygraph.name = "x", pygraph.role = "input", pygraph.slot = 2 : i64}
// CHECK-SAME:    {pygraph.device = "cpu", pygraph.io = "value", pygraph.layout = #pygraph.layout<[], [], 0 : i64, si64>, pygraph.name = "seed", pygraph.role = "rng", pygraph.slot = 4 : i64}
// CHECK-SAME:    {pygraph.device = "cpu", pygraph.io = "value", pygraph.layout = #pygraph.layout<[], [], 0 : i64, si64>, pygraph.name = "offset", pygraph.role = "rng", pygraph.slot = 6 : i64}
// CHECK-SAME:    -> (!pygraph.buf {pygraph.io = "indirect", {{.*}}pygraph.slot = 1 : i64}, !pygraph.buf {pygraph.io = "copy", pygraph.io_choice = "copy", pygraph.io_costs = {copy = {{.*}}}
// CHECK:         "pygraph.host"({{.*}}) {{{.*}}op = "aten.sum.default", {{.*}}slots = [0]}
// CHECK:         "pygraph.host"({{.*}}) {{{.*}}op = "aten.nonzero.default", {{.*}}slots = [-1]}
func.func private @k(%a: !torch.vtensor<[],f32>, %b: !torch.vtensor<[],si64>, %c: !torch.vtensor<[],si64>) -> !torch.vtensor<[],f32> attributes {pygraph.fused} {
  return %a : !torch.vtensor<[],f32>
}
func.func @rng_and_host(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.device = "cpu", pygraph.layout = #pygraph.layout<[8], [1], 0 : i64, f32>, pygraph.io = "stage"},
                        %seed: !pygraph.buf {pygraph.role = "rng", pygraph.name = "seed", pygraph.device = "cpu", pygraph.layout = #pygraph.layout<[], [], 0 : i64, si64>, pygraph.io = "direct"},
                        %offset: !pygraph.buf {pygraph.role = "rng", pygraph.name = "offset", pygraph.device = "cpu", pygraph.layout = #pygraph.layout<[], [], 0 : i64, si64>, pygraph.io = "direct"})
    -> (!pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[], [], 0 : i64, f32>}, !pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[-1, -1], [-1, -1], 0 : i64, si64>}) {
  %s = "pygraph.host"(%x) {op = "aten.sum.default", args = [0 : index, unit], layouts = [#pygraph.layout<[], [], 0 : i64, f32>], reason = "an operand's shape depends on the data", slots = [-1], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
  %n = "pygraph.host"(%x) {op = "aten.nonzero.default", args = [0 : index], layouts = [#pygraph.layout<[-1, -1], [-1, -1], 0 : i64, si64>], reason = "its output shape depends on the data", slots = [-1], operandSegmentSizes = array<i32: 1>, resultSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> !pygraph.buf
  %r = "pygraph.alloc"() {layout = #pygraph.layout<[], [], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
  "pygraph.kernel"(%s, %seed, %offset, %r) {kernel = @k, grid = [1, 1, 1], access = ["r", "r", "r", "w"], operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
  return %r, %n : !pygraph.buf, !pygraph.buf
}

// -----

// An input that three kernels read and an output: patching both would update four nodes per call, more
// than the table's writer costs, so both are reached through the table.
// CHECK-LABEL: func.func @table_kept
// CHECK-SAME:    pygraph.io = "indirect", pygraph.io_choice = "indirect", pygraph.io_costs = {indirect = 0.000000e+00 : f64, patch = 6.300000e+00 : f64,
// CHECK-SAME:    -> (!pygraph.buf {pygraph.io = "indirect", pygraph.io_choice = "indirect", pygraph.io_costs = {{{[^}]*}}patch = 2.100000e+00 : f64}
// CHECK-SAME:    pygraph.table_slots = 2 : i64
func.func private @k(%a: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> attributes {pygraph.fused} {
  return %a : !torch.vtensor<[4],f32>
}
func.func @table_kept(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>, pygraph.io = "stage"})
    -> (!pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>}) {
  %a = "pygraph.alloc"() {layout = #pygraph.layout<[4], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
  %b = "pygraph.alloc"() {layout = #pygraph.layout<[4], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
  %r = "pygraph.alloc"() {layout = #pygraph.layout<[4], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
  "pygraph.kernel"(%x, %a) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
  "pygraph.kernel"(%x, %b) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
  "pygraph.kernel"(%x, %r) {kernel = @k, grid = [1, 1, 1], access = ["r", "w"], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
  return %r : !pygraph.buf
}

// -----

// Random numbers keep the table (the seed and offset travel in it), so patching the input and the output
// would only add parameter updates: both are reached through the table, whose writer is paid anyway.
// CHECK-LABEL: func.func @rng_keeps_the_table
// CHECK-SAME:    pygraph.io = "indirect", pygraph.io_choice = "indirect"
// CHECK-SAME:    -> (!pygraph.buf {pygraph.io = "indirect", pygraph.io_choice = "indirect"
func.func private @k(%a: !torch.vtensor<[4],f32>, %b: !torch.vtensor<[],si64>, %c: !torch.vtensor<[],si64>) -> !torch.vtensor<[4],f32> attributes {pygraph.fused} {
  return %a : !torch.vtensor<[4],f32>
}
func.func @rng_keeps_the_table(%x: !pygraph.buf {pygraph.role = "input", pygraph.name = "x", pygraph.device = "cuda", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>, pygraph.io = "stage"},
                               %seed: !pygraph.buf {pygraph.role = "rng", pygraph.name = "seed", pygraph.device = "cpu", pygraph.layout = #pygraph.layout<[], [], 0 : i64, si64>, pygraph.io = "direct"},
                               %offset: !pygraph.buf {pygraph.role = "rng", pygraph.name = "offset", pygraph.device = "cpu", pygraph.layout = #pygraph.layout<[], [], 0 : i64, si64>, pygraph.io = "direct"})
    -> (!pygraph.buf {pygraph.io = "copy", pygraph.layout = #pygraph.layout<[4], [1], 0 : i64, f32>}) {
  %r = "pygraph.alloc"() {layout = #pygraph.layout<[4], [1], 0 : i64, f32>, arena_offset = -1 : i64} : () -> !pygraph.buf
  "pygraph.kernel"(%x, %seed, %offset, %r) {kernel = @k, grid = [1, 1, 1], access = ["r", "r", "r", "w"], operandSegmentSizes = array<i32: 4>} : (!pygraph.buf, !pygraph.buf, !pygraph.buf, !pygraph.buf) -> ()
  return %r : !pygraph.buf
}
