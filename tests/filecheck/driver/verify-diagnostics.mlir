// --verify-diagnostics: every diagnostic must match an `expected-*` comment on its line, and every
// comment must be met; then the exit code is 0 and no diagnostic is printed.
// RUN: pygraph-opt %s --split-input-file --verify-diagnostics -o /dev/null

// The op's verifier (run by the parser): an access mode per argument.
"func.func"() <{function_type = (!pygraph.buf) -> (), sym_name = "kernel_access"}> ({
^bb0(%arg0: !pygraph.buf):
  // expected-error @+1 {{'pygraph.kernel' op has 1 arguments but 2 access modes}}
  "pygraph.kernel"(%arg0) {access = ["r", "w"], grid = [1, 1, 1], kernel = @k, operandSegmentSizes = array<i32: 1>} : (!pygraph.buf) -> ()
  "func.return"() : () -> ()
}) : () -> ()

// -----

// A parse error, expected on the same line.
"func.func"() <{function_type = () -> (), sym_name = "undefined_value"}> ({
  "pygraph.fill"(%missing) {byte = 0 : i64} : (!pygraph.buf) -> () // expected-error {{use of undeclared SSA value name}}
  "func.return"() : () -> ()
}) : () -> ()

// -----

// @above: the nearest line above that is not an expectation.
"func.func"() <{function_type = () -> (), sym_name = "bad_layout"}> ({
  %0 = "pygraph.alloc"() {arena_offset = -1 : i64, layout = #pygraph.layout<[4, 4], [1], 0, f32>} : () -> !pygraph.buf
  // expected-error @above {{layout has 2 sizes but 1 strides}}
  "func.return"() : () -> ()
}) : () -> ()

// -----

// @below: the nearest line below that is not an expectation; @-N counts up.
"func.func"() <{function_type = () -> (), sym_name = "bad_mode"}> ({
  // expected-error @below {{mode must be "graph" or "eager", not "sometimes"}}
  "pygraph.segment"() ({
    "pygraph.yield"() {operandSegmentSizes = array<i32: 0>} : () -> ()
  }) {info = {}, mode = "sometimes", resultSegmentSizes = array<i32: 0>} : () -> ()
  // expected-error @-3 {{'pygraph.segment' op}}
  "func.return"() : () -> ()
}) : () -> ()
