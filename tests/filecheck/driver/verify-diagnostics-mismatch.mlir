// Disagreements between diagnostics and expectations are reported as mlir-opt does, with exit code 1.
// RUN: not pygraph-opt %s --split-input-file --verify-diagnostics -o /dev/null 2>&1 | filecheck %s

// A diagnostic on a line with no expectation, and an expectation on a line with no diagnostic.
"func.func"() <{function_type = (!pygraph.buf) -> (), sym_name = "f"}> ({
^bb0(%arg0: !pygraph.buf):
  "pygraph.kernel"(%arg0) {access = ["x"], grid = [1, 1, 1], kernel = @k, operandSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> ()
  // expected-error @+1 {{access modes must be}}
  "func.return"() : () -> ()
}) : () -> ()

// -----

// The right line but the wrong message: both sides complain.
"func.func"() <{function_type = () -> (), sym_name = "g"}> ({
  // expected-error @+1 {{this is not what the verifier says}}
  %0 = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[4], [-1], 0, f32>} : () -> !pygraph.buf
  "func.return"() : () -> ()
}) : () -> ()

// -----

// Severity counts: an error does not meet an expected warning.
"func.func"() <{function_type = () -> (), sym_name = "h"}> ({
  "pygraph.fill"(%missing) {byte = 0 : i64} : (!pygraph.buf) -> () // expected-warning {{use of undeclared SSA value name}}
  "func.return"() : () -> ()
}) : () -> ()

// CHECK:      verify-diagnostics-mismatch.mlir:7:3: error: unexpected error: 'pygraph.kernel' op access modes must be "r", "w" or "rw"
// CHECK-NEXT: verify-diagnostics-mismatch.mlir:8:6: error: expected error "access modes must be" was not produced
// CHECK-NEXT: verify-diagnostics-mismatch.mlir:17:8: error: unexpected error: 'pygraph.alloc' op layout has a negative size or stride
// CHECK-NEXT: verify-diagnostics-mismatch.mlir:16:6: error: expected error "this is not what the verifier says" was not produced
// CHECK-NEXT: verify-diagnostics-mismatch.mlir:25:18: error: unexpected error: use of undeclared SSA value name
// CHECK-NEXT: verify-diagnostics-mismatch.mlir:25:71: error: expected warning "use of undeclared SSA value name" was not produced
