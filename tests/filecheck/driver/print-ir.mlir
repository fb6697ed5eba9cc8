// Upstream passes go through MLIR's PassManager; the IR dumps and timings go to stderr.
// RUN: pygraph-opt %s -p canonicalize,cse --print-ir-after-all -o /dev/null 2>&1 | filecheck %s --check-prefix=ALL
// RUN: pygraph-opt %s -p canonicalize,cse --print-ir-after=cse -o /dev/null 2>&1 | filecheck %s --check-prefix=CSE
// RUN: pygraph-opt %s -p canonicalize --time-passes -o /dev/null 2>&1 | filecheck %s --check-prefix=TIME
// RUN: pygraph-opt %s -p canonicalize | filecheck %s

"func.func"() <{function_type = () -> (), sym_name = "main"}> ({
  %0 = "arith.constant"() <{value = 1 : i64}> : () -> i64
  %1 = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[4], [1], 0, f32>} : () -> !pygraph.buf
  "pygraph.fill"(%1) {byte = 0 : i64} : (!pygraph.buf) -> ()
  "func.return"() : () -> ()
}) : () -> ()

// ALL:      // -----// IR Dump After canonicalize //----- //
// ALL-NOT:  arith.constant
// ALL:      pygraph.fill
// ALL:      // -----// IR Dump After cse //----- //
// ALL:      pygraph.fill

// CSE-NOT:  IR Dump After canonicalize
// CSE:      // -----// IR Dump After cse //----- //

// TIME:     Pass execution timing report
// TIME:     canonicalize
// TIME:     Total

// The dead constant is gone, the pygraph ops (not pure) stay.
// CHECK-LABEL: func.func @main()
// CHECK-NEXT:   %0 = "pygraph.alloc"()
// CHECK-NEXT:   "pygraph.fill"(%0) {byte = 0 : i64}
// CHECK-NEXT:   return
