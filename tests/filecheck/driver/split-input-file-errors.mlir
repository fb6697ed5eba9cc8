// A failing part prints its errors (at lines of this file) and nothing else; the other parts still
// print, and the exit code is 1.
// RUN: not pygraph-opt %s --split-input-file -o %t 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file %t

"func.func"() <{function_type = () -> (), sym_name = "good"}> ({
  "func.return"() : () -> ()
}) : () -> ()

// -----

"func.func"() <{function_type = () -> (), sym_name = "bad"}> ({
  "pygraph.fill"(%undefined) {byte = 0 : i64} : (!pygraph.buf) -> ()
  "func.return"() : () -> ()
}) : () -> ()

// -----

"func.func"() <{function_type = () -> (), sym_name = "also_good"}> ({
  "func.return"() : () -> ()
}) : () -> ()

// ERR: split-input-file-errors.mlir:13:18: error: use of undeclared SSA value name

// CHECK:      func.func @good
// CHECK:      // -----
// CHECK-NEXT: // -----
// CHECK-NEXT: module {
// CHECK-NEXT:   func.func @also_good
