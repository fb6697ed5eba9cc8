// RUN: pygraph-opt %s -p plan-memory --verify-diagnostics

// expected-error @+1 {{expected one public function, found 2}}
module {
  func.func @a() {
    return
  }
  func.func @b() {
    return
  }
}
