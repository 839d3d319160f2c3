// LibraryKernel: a task computed by a vendor library (oneDNN, OpenBLAS), so the
// libraries run in the same harness, on the same buffers, as our own schedules.
//
// Buffers follow the task's tensor convention (row-major, outermost dimension first):
//   matmul        A[m,k], B[k,n]                 -> C[m,n]
//   dense         X[m,k], W[k,n] (, bias[n])     -> Y[m,n]
//   batch_matmul  A[b,m,k], B[b,k,n]             -> C[b,m,n]
//   conv2d        X[n,c,h,w], W[k,c/groups,r,s] (, bias[k]) -> Y[n,k,oh,ow]   (NCHW / OIHW)
//   dwconv2d      X[n,c,h,w], W[c,1,r,s] (, bias[c])         -> Y[n,c,oh,ow]
// Input order: the op's inputs above, then bias if the epilogue has "bias", then one
// residual tensor of the output's shape for each "add" or "mul" epilogue, in epilogue order.
// Epilogues are applied in order: bias, relu, relu6 (clamp 0..6), gelu (tanh form),
// silu, sigmoid, tanh, add (residual), mul (residual).
// Weights are constants: a library may reorder them into its preferred layout when the
// kernel is made (outside timing); activations it must read in the layout given.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ops/task_spec.h"

namespace tlm {

class LibraryKernel {
 public:
  virtual ~LibraryKernel() = default;
  // Computes the output from the inputs given at creation. Thread-safe to call repeatedly.
  virtual void run() = 0;
  // Short description of what the library chose (e.g. oneDNN implementation name).
  virtual std::string describe() const = 0;
};

// Library names: "onednn", "openblas".
bool library_supports(const std::string& library, const TaskSpec& task);
// Throws tlm::Error if unsupported. Pointers must stay valid while the kernel lives.
std::unique_ptr<LibraryKernel> make_library_kernel(const std::string& library, const TaskSpec& task,
                                                   const std::vector<const float*>& inputs,
                                                   float* output, int threads);

}  // namespace tlm
