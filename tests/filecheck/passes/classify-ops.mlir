// RUN: pygraph-opt %s -p classify-ops --split-input-file | filecheck %s
// RUN: pygraph-opt %s -p 'classify-ops{matvec=false}' --split-input-file | filecheck %s --check-prefix=VENDOR
// RUN: pygraph-opt %s -p 'classify-ops{matmul-precision=tf32}' --split-input-file | filecheck %s --check-prefix=TF32
// RUN: pygraph-opt %s -p 'classify-ops{matmul=all}' --split-input-file | filecheck %s --check-prefix=ALL

// One op of each class.
// CHECK-LABEL: func.func @main
// CHECK:         torch.vtensor.literal{{.*}}pygraph.class = "constant"
// CHECK:         torch.constant.int 0 {pygraph.class = "scalar"}
// CHECK:         torch.aten.relu %arg0 {pygraph.class = "pointwise"}
// CHECK:         torch.aten.transpose.int {{.*}}pygraph.class = "view"
// CHECK:         torch.aten.mm {{.*}}pygraph.class = "library"
// CHECK:         torch.aten.sum {{.*}}pygraph.class = "reduction"
// CHECK:         torch.prim.ListConstruct {{.*}}pygraph.class = "scalar"
// CHECK:         torch.aten.cat {{.*}}pygraph.class = "concat"
// CHECK:         torch.aten.size.int {{.*}}pygraph.class = "scalar"
// CHECK:         torch.operator "torch.aten._native_batch_norm_legit_no_training"{{.*}}pygraph.class = "library"
// CHECK:         torch.aten.nonzero {{.*}}pygraph.class = "host"
// CHECK:         torch.operator "torch.aten._assert_tensor_metadata"{{.*}}pygraph.class = "nop"
func.func @main(%arg0: !torch.vtensor<[4,4],f32>, %w: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4,4],f32> {
  %c = torch.vtensor.literal(dense<3.0> : tensor<f32>) : !torch.vtensor<[],f32>
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %0 = torch.aten.relu %arg0 : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %1 = torch.aten.transpose.int %0, %int0, %int1 : !torch.vtensor<[4,4],f32>, !torch.int, !torch.int -> !torch.vtensor<[4,4],f32>
  %2 = torch.aten.mm %0, %1 : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
  %none = torch.constant.none
  %3 = torch.aten.sum %2, %none : !torch.vtensor<[4,4],f32>, !torch.none -> !torch.vtensor<[],f32>
  %pieces = torch.prim.ListConstruct %0, %2 : (!torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.list<vtensor>
  %cat = torch.aten.cat %pieces, %int0 : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[8,4],f32>
  %4 = torch.aten.size.int %2, %int0 : !torch.vtensor<[4,4],f32>, !torch.int -> !torch.int
  %float = torch.constant.float 1.0e-05
  %5:3 = torch.operator "torch.aten._native_batch_norm_legit_no_training"(%2, %w, %w, %w, %w, %float, %float) : (!torch.vtensor<[4,4],f32>, !torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>, !torch.float, !torch.float) -> (!torch.vtensor<[4,4],f32>, !torch.vtensor<[0],f32>, !torch.vtensor<[0],f32>)
  %6 = torch.aten.nonzero %2 {pygraph.layouts = [#pygraph.layout<[16, 2], [2, 1], 0 : i64, si64>]} : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[16,2],si64>
  torch.operator "torch.aten._assert_tensor_metadata"(%2, %none) : (!torch.vtensor<[4,4],f32>, !torch.none) -> ()
  return %2 : !torch.vtensor<[4,4],f32>
}

// -----

// view(dtype) between dtypes of one size reinterprets bits in a kernel (a library call would alias its input).
// CHECK-LABEL: func.func @bitcast
// CHECK:         torch.aten.view.dtype {{.*}}pygraph.class = "pointwise"
func.func @bitcast(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],si32> {
  %int3 = torch.constant.int 3
  %0 = torch.aten.view.dtype %arg0, %int3 : !torch.vtensor<[4],f32>, !torch.int -> !torch.vtensor<[4],si32>
  return %0 : !torch.vtensor<[4],si32>
}

// -----

// Nothing to classify.
// CHECK-LABEL: func.func @empty
// CHECK-NEXT:    return %arg0
func.func @empty(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  return %arg0 : !torch.vtensor<[4],f32>
}

// -----

// Attention: a call the frontend routed to the generated kernel (`pygraph.attention_kernel`, its tl.dot
// precision) is class "attention"; one it left to ATen (here with dropout) stays a library op.
// CHECK-LABEL: func.func @attention
// CHECK:         torch.aten.scaled_dot_product_attention {{.*}}pygraph.attention_kernel = "ieee", pygraph.class = "attention"
// CHECK:         torch.aten.scaled_dot_product_attention {{.*}}{pygraph.class = "library"}
func.func @attention(%q: !torch.vtensor<[2,4,32,16],f32>, %m: !torch.vtensor<[2,1,1,32],i1>) -> !torch.vtensor<[2,4,32,16],f32> {
  %float0 = torch.constant.float 0.000000e+00
  %float5 = torch.constant.float 5.000000e-01
  %false = torch.constant.bool false
  %none = torch.constant.none
  %0 = torch.aten.scaled_dot_product_attention %q, %q, %q, %m, %float0, %false, %none, %false {pygraph.attention_kernel = "ieee"} : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,1,1,32],i1>, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,32,16],f32>
  %1 = torch.aten.scaled_dot_product_attention %0, %q, %q, %m, %float5, %false, %none, %false : !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,4,32,16],f32>, !torch.vtensor<[2,1,1,32],i1>, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,32,16],f32>
  return %1 : !torch.vtensor<[2,4,32,16],f32>
}

// -----

// Products of one row (float32, rows of at most 1024 values) are class matvec: a linear with its bias, an mm
// of a [K, N] weight; one of two rows is a library call. `matvec=false` leaves them all to the vendor.
// CHECK-LABEL: func.func @products
// CHECK:         torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "matvec"}
// CHECK:         torch.aten.mm %arg0, %arg3 {pygraph.class = "matvec"}
// CHECK:         torch.aten.linear %arg4, %arg1, %arg2 {pygraph.class = "library"}
// VENDOR-LABEL: func.func @products
// VENDOR:         torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "library"}
// VENDOR:         torch.aten.mm %arg0, %arg3 {pygraph.class = "library"}
func.func @products(%arg0: !torch.vtensor<[1,16],f32>, %arg1: !torch.vtensor<[8,16],f32>, %arg2: !torch.vtensor<[8],f32>, %arg3: !torch.vtensor<[16,5],f32>, %arg4: !torch.vtensor<[2,16],f32>) -> (!torch.vtensor<[1,8],f32>, !torch.vtensor<[1,5],f32>, !torch.vtensor<[2,8],f32>) {
  %0 = torch.aten.linear %arg0, %arg1, %arg2 : !torch.vtensor<[1,16],f32>, !torch.vtensor<[8,16],f32>, !torch.vtensor<[8],f32> -> !torch.vtensor<[1,8],f32>
  %1 = torch.aten.mm %arg0, %arg3 : !torch.vtensor<[1,16],f32>, !torch.vtensor<[16,5],f32> -> !torch.vtensor<[1,5],f32>
  %2 = torch.aten.linear %arg4, %arg1, %arg2 : !torch.vtensor<[2,16],f32>, !torch.vtensor<[8,16],f32>, !torch.vtensor<[8],f32> -> !torch.vtensor<[2,8],f32>
  return %0, %1, %2 : !torch.vtensor<[1,8],f32>, !torch.vtensor<[1,5],f32>, !torch.vtensor<[2,8],f32>
}

// -----

// Half-precision products of at most 64 rows are class matvec too (the matmul kernel's tensor-core dots
// compute them: a decoding step of a few sequences), at any K; 65 rows and float32 rows are not, nor is
// one row longer than the matrix-vector kernel loads (9000 values in either precision: the dots' loop over
// such a K, Llama-3-8B's down projection, measured 68 us against cuBLAS's split-K 44).
// CHECK-LABEL: func.func @few_rows
// CHECK:         torch.aten.linear %arg0, %arg1, %none {pygraph.class = "matvec"}
// CHECK:         torch.aten.linear %arg2, %arg1, %none {pygraph.class = "library"}
// CHECK:         torch.aten.linear %arg3, %arg4, %none {pygraph.class = "library"}
// CHECK:         torch.aten.linear %arg5, %arg1, %none {pygraph.class = "library"}
// CHECK:         torch.aten.linear %arg6, %arg7, %none {pygraph.class = "library"}
// VENDOR-LABEL: func.func @few_rows
// VENDOR:         torch.aten.linear %arg0, %arg1, %none {pygraph.class = "library"}
func.func @few_rows(%arg0: !torch.vtensor<[64,1,9000],bf16>, %arg1: !torch.vtensor<[8,9000],bf16>, %arg2: !torch.vtensor<[65,9000],bf16>, %arg3: !torch.vtensor<[2,16],f32>, %arg4: !torch.vtensor<[8,16],f32>, %arg5: !torch.vtensor<[1,9000],bf16>, %arg6: !torch.vtensor<[1,9000],f32>, %arg7: !torch.vtensor<[8,9000],f32>) -> (!torch.vtensor<[64,1,8],bf16>, !torch.vtensor<[65,8],bf16>, !torch.vtensor<[2,8],f32>, !torch.vtensor<[1,8],bf16>, !torch.vtensor<[1,8],f32>) {
  %none = torch.constant.none
  %0 = torch.aten.linear %arg0, %arg1, %none : !torch.vtensor<[64,1,9000],bf16>, !torch.vtensor<[8,9000],bf16>, !torch.none -> !torch.vtensor<[64,1,8],bf16>
  %1 = torch.aten.linear %arg2, %arg1, %none : !torch.vtensor<[65,9000],bf16>, !torch.vtensor<[8,9000],bf16>, !torch.none -> !torch.vtensor<[65,8],bf16>
  %2 = torch.aten.linear %arg3, %arg4, %none : !torch.vtensor<[2,16],f32>, !torch.vtensor<[8,16],f32>, !torch.none -> !torch.vtensor<[2,8],f32>
  %3 = torch.aten.linear %arg5, %arg1, %none : !torch.vtensor<[1,9000],bf16>, !torch.vtensor<[8,9000],bf16>, !torch.none -> !torch.vtensor<[1,8],bf16>
  %4 = torch.aten.linear %arg6, %arg7, %none : !torch.vtensor<[1,9000],f32>, !torch.vtensor<[8,9000],f32>, !torch.none -> !torch.vtensor<[1,8],f32>
  return %0, %1, %2, %3, %4 : !torch.vtensor<[64,1,8],bf16>, !torch.vtensor<[65,8],bf16>, !torch.vtensor<[2,8],f32>, !torch.vtensor<[1,8],bf16>, !torch.vtensor<[1,8],f32>
}

// -----

// Products of more rows are class matmul, marked with their dots' precision, where the generated matmul
// should compute them: by default (IEEE float32 dots) none; with TF32 dots those of at most 2^30
// multiply-adds, K <= 1024 and 2^19 weight values, or of at most 32 rows with K <= 1024 at any width (4 rows
// of 2048: K too long; 64 rows by a 1024 x 1024 weight: too large; GPT-2's 32 rows of logits, 1.2 * 2^30
// multiply-adds: few rows); with `matmul=all` every one it can compute (not float64).
// CHECK-LABEL: func.func @matmuls
// CHECK:         torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "library"}
// CHECK:         torch.aten.mm %arg3, %arg4 {pygraph.class = "library"}
// TF32-LABEL: func.func @matmuls
// TF32:         torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "matmul", pygraph.matmul_kernel = "tf32"}
// TF32:         torch.aten.mm %arg3, %arg4 {pygraph.class = "library"}
// TF32:         torch.aten.mm %arg5, %arg5 {pygraph.class = "library"}
// TF32:         torch.aten.mm %arg6, %arg7 {pygraph.class = "library"}
// TF32:         torch.aten.mm %arg8, %arg9 {pygraph.class = "matmul", pygraph.matmul_kernel = "tf32"}
// ALL-LABEL: func.func @matmuls
// ALL:         torch.aten.linear %arg0, %arg1, %arg2 {pygraph.class = "matmul", pygraph.matmul_kernel = "ieee"}
// ALL:         torch.aten.mm %arg3, %arg4 {pygraph.class = "matmul", pygraph.matmul_kernel = "ieee"}
// ALL:         torch.aten.mm %arg5, %arg5 {pygraph.class = "library"}
// ALL:         torch.aten.mm %arg6, %arg7 {pygraph.class = "matmul", pygraph.matmul_kernel = "ieee"}
func.func @matmuls(%arg0: !torch.vtensor<[2,9,16],f32>, %arg1: !torch.vtensor<[8,16],f32>, %arg2: !torch.vtensor<[8],f32>, %arg3: !torch.vtensor<[4,2048],f32>, %arg4: !torch.vtensor<[2048,8],f32>, %arg5: !torch.vtensor<[4,4],f64>, %arg6: !torch.vtensor<[64,1024],f32>, %arg7: !torch.vtensor<[1024,1024],f32>, %arg8: !torch.vtensor<[32,768],f32>, %arg9: !torch.vtensor<[768,50257],f32>) -> (!torch.vtensor<[2,9,8],f32>, !torch.vtensor<[4,8],f32>, !torch.vtensor<[4,4],f64>, !torch.vtensor<[64,1024],f32>, !torch.vtensor<[32,50257],f32>) {
  %0 = torch.aten.linear %arg0, %arg1, %arg2 : !torch.vtensor<[2,9,16],f32>, !torch.vtensor<[8,16],f32>, !torch.vtensor<[8],f32> -> !torch.vtensor<[2,9,8],f32>
  %1 = torch.aten.mm %arg3, %arg4 : !torch.vtensor<[4,2048],f32>, !torch.vtensor<[2048,8],f32> -> !torch.vtensor<[4,8],f32>
  %2 = torch.aten.mm %arg5, %arg5 : !torch.vtensor<[4,4],f64>, !torch.vtensor<[4,4],f64> -> !torch.vtensor<[4,4],f64>
  %3 = torch.aten.mm %arg6, %arg7 : !torch.vtensor<[64,1024],f32>, !torch.vtensor<[1024,1024],f32> -> !torch.vtensor<[64,1024],f32>
  %4 = torch.aten.mm %arg8, %arg9 : !torch.vtensor<[32,768],f32>, !torch.vtensor<[768,50257],f32> -> !torch.vtensor<[32,50257],f32>
  return %0, %1, %2, %3, %4 : !torch.vtensor<[2,9,8],f32>, !torch.vtensor<[4,8],f32>, !torch.vtensor<[4,4],f64>, !torch.vtensor<[64,1024],f32>, !torch.vtensor<[32,50257],f32>
}

// -----

// Gathers a kernel can compute are `gather` (an embedding, index_select, gather, and `index` by one tensor);
// the others are library ops whose reason says why not: two index tensors, a boolean mask (whose result's
// size the data decides), a 0-d source.
// CHECK-LABEL: func.func @main
// CHECK:         torch.aten.embedding %arg0, %arg1, {{.*}} {pygraph.class = "gather"}
// CHECK:         torch.aten.index_select %arg2, {{.*}} {pygraph.class = "gather"}
// CHECK:         torch.aten.gather %arg2, {{.*}} {pygraph.class = "gather"}
// CHECK:         torch.aten.index.Tensor %arg2, %{{.*}} {pygraph.class = "gather"}
// CHECK:         torch.aten.index.Tensor %arg2, %{{.*}} {pygraph.class = "library", pygraph.reason = "no gather kernel: it indexes by 2 tensors, not one"}
// CHECK:         torch.aten.index.Tensor %arg2, %{{.*}} {pygraph.class = "library", pygraph.reason = "no gather kernel: its result has no static shape"}
// CHECK:         torch.aten.index_select %arg4, {{.*}} {pygraph.class = "library", pygraph.reason = "no gather kernel: its source is 0-d"}
func.func @main(%w: !torch.vtensor<[10,8],f32>, %ids: !torch.vtensor<[2,3],si64>, %x: !torch.vtensor<[5,6],f32>, %mask: !torch.vtensor<[5],i1>, %s: !torch.vtensor<[],f32>) -> !torch.vtensor<[2,3,8],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int-1 = torch.constant.int -1
  %false = torch.constant.bool false
  %none = torch.constant.none
  %e = torch.aten.embedding %w, %ids, %int-1, %false, %false : !torch.vtensor<[10,8],f32>, !torch.vtensor<[2,3],si64>, !torch.int, !torch.bool, !torch.bool -> !torch.vtensor<[2,3,8],f32>
  %row = torch.aten.select.int %ids, %int0, %int0 : !torch.vtensor<[2,3],si64>, !torch.int, !torch.int -> !torch.vtensor<[3],si64>
  %sel = torch.aten.index_select %x, %int1, %row : !torch.vtensor<[5,6],f32>, !torch.int, !torch.vtensor<[3],si64> -> !torch.vtensor<[5,3],f32>
  %g = torch.aten.gather %x, %int0, %ids, %false : !torch.vtensor<[5,6],f32>, !torch.int, !torch.vtensor<[2,3],si64>, !torch.bool -> !torch.vtensor<[2,3],f32>
  %one = torch.prim.ListConstruct %none, %ids : (!torch.none, !torch.vtensor<[2,3],si64>) -> !torch.list<optional<vtensor>>
  %i1 = torch.aten.index.Tensor %x, %one : !torch.vtensor<[5,6],f32>, !torch.list<optional<vtensor>> -> !torch.vtensor<[5,2,3],f32>
  %two = torch.prim.ListConstruct %ids, %ids : (!torch.vtensor<[2,3],si64>, !torch.vtensor<[2,3],si64>) -> !torch.list<optional<vtensor>>
  %i2 = torch.aten.index.Tensor %x, %two : !torch.vtensor<[5,6],f32>, !torch.list<optional<vtensor>> -> !torch.vtensor<[2,3],f32>
  %masks = torch.prim.ListConstruct %mask : (!torch.vtensor<[5],i1>) -> !torch.list<optional<vtensor>>
  %i3 = torch.aten.index.Tensor %x, %masks : !torch.vtensor<[5,6],f32>, !torch.list<optional<vtensor>> -> !torch.vtensor<[?,6],f32>
  %scalar = torch.aten.index_select %s, %int0, %row : !torch.vtensor<[],f32>, !torch.int, !torch.vtensor<[3],si64> -> !torch.vtensor<[],f32>
  return %e : !torch.vtensor<[2,3,8],f32>
}
