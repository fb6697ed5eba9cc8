// Each part between `// -----` lines is parsed and printed on its own; the outputs are separated the
// same way. Errors name lines of this file, not of the part.
// RUN: pygraph-opt %s --split-input-file | filecheck %s
// RUN: pygraph-opt %s | filecheck %s --check-prefix=WHOLE

"func.func"() <{function_type = () -> (), sym_name = "first"}> ({
  %0 = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[8], [1], 0, f16>} : () -> !pygraph.buf
  "func.return"() : () -> ()
}) : () -> ()

// -----

"func.func"() <{function_type = () -> (), sym_name = "second"}> ({
  %0 = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[8], [1], 0, f16>} : () -> !pygraph.buf
  "func.return"() : () -> ()
}) : () -> ()

// CHECK:      module {
// CHECK-NEXT:   func.func @first() {
// CHECK-NEXT:     %0 = "pygraph.alloc"()
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: // -----
// CHECK-NEXT: module {
// CHECK-NEXT:   func.func @second() {

// Without --split-input-file, the file is one module holding both functions.
// WHOLE:      module {
// WHOLE:        func.func @first
// WHOLE:        func.func @second
// WHOLE-NOT:  // -----
