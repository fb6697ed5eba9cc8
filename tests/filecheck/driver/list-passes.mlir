// --list-passes names every registered pass, in the registry's (alphabetical) order.
// RUN: pygraph-opt --list-passes | filecheck %s

// CHECK:      pygraph passes (-p 'name{option=value ...}'):
// CHECK-NEXT:   classify-ops -
// CHECK:        codegen-triton -
// CHECK:        form-segments -
// CHECK:        fuse-pointwise -
// CHECK:        lower-to-plan -
// CHECK:        plan-memory -
// CHECK:      Other names are MLIR passes
