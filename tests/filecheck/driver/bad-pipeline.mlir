// A pipeline that cannot run is rejected before the input is read, with a message and exit code 1.
// RUN: not pygraph-opt %s -p 'canonicalize{max-iterations=many}' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not pygraph-opt %s -p 'canonicalize{no-such-option=1}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not pygraph-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=NAME
// RUN: not pygraph-opt %s -p 'canonicalize{max-iterations=1' 2>&1 | filecheck %s --check-prefix=BRACES
// RUN: not pygraph-opt %s -p canonicalize --print-ir-after=cse 2>&1 | filecheck %s --check-prefix=AFTER
// RUN: not pygraph-opt %s.missing 2>&1 | filecheck %s --check-prefix=FILE

// VALUE:  pygraph-opt: error: 'canonicalize{max-iterations=many}' is not a pygraph pass (see --list-passes) and MLIR cannot use it:
// VALUE:  failed to add `canonicalize` with options `max-iterations=many`

// OPTION: pygraph-opt: error: 'canonicalize{no-such-option=1}' is not a pygraph pass
// OPTION: no such option no-such-option

// NAME:   pygraph-opt: error: 'no-such-pass' is not a pygraph pass (see --list-passes) and MLIR cannot use it:
// NAME:   'no-such-pass' does not refer to a registered pass or pass pipeline

// BRACES: pygraph-opt: error: unbalanced braces in pipeline 'canonicalize{max-iterations=1'

// AFTER:  pygraph-opt: error: --print-ir-after=cse: no pass in the pipeline is named 'cse'

// FILE:   pygraph-opt: error: [Errno 2] No such file or directory
