// SPDX-License-Identifier: Apache-2.0
// KernelExecutor: compiles a manually scheduled fusion to one kernel and runs it.
//
//   exec::KernelExecutor ke;
//   ke.compile(fusion);                                  // lower, codegen, compile (host or cuda)
//   std::vector<Tensor> outs = ke.run({Tensor(x), Tensor(bias)});
//
// Backends: Host runs the kernel text on the CPU (host backend, fibers); Cuda compiles it with
// NVRTC and launches it on GPU 0. Auto picks LOOM_BACKEND=host|cuda when set, else cuda when a GPU
// is present, else host. run() takes host tensors on both backends; on cuda they are copied to the
// device and the outputs copied back (device-resident arguments come later).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "loom/codegen/kernel_codegen.h"
#include "loom/eval/argument.h"
#include "loom/ir/fusion.h"
#include "loom/lower/kernel_ir.h"

namespace loom::exec {

enum class Backend : uint8_t { Auto, Host, Cuda };
std::string_view backendName(Backend b);  ///< "auto", "host", "cuda"
/// Resolves Auto (LOOM_BACKEND, then GPU presence); UserError for a bad LOOM_BACKEND value.
Backend resolveBackend(Backend b);

struct ExecutorOptions {
  /// Fill outputs with NaN (floats) before the launch, so unwritten elements show up in checks.
  bool poisonOutputs = false;
};

/// Launch parameters computed from the bound extents.
struct LaunchParams {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  size_t sharedBytes = 0;
  std::string toString() const;
};

class KernelExecutor {
 public:
  KernelExecutor();
  ~KernelExecutor();
  KernelExecutor(const KernelExecutor&) = delete;
  KernelExecutor& operator=(const KernelExecutor&) = delete;

  /// Lowers and compiles `scheduled` (cloned: later changes to it do not matter).
  void compile(const ir::Fusion& scheduled, Backend backend = Backend::Auto,
               ExecutorOptions options = {});
  /// Validates and binds `inputs`, allocates outputs from their allocation domains, launches,
  /// and returns the outputs as host tensors.
  std::vector<Tensor> run(std::span<const eval::Argument> inputs);

  bool isCompiled() const { return kernel_ != nullptr; }
  Backend backend() const { return backend_; }
  const codegen::GeneratedKernel& generated() const { return generated_; }
  const kir::Kernel& kernel() const { return *kernel_; }
  /// Launch parameters of the last run.
  const LaunchParams& lastLaunch() const { return last_launch_; }

 private:
  struct Compiled;
  /// The module for `index_type` (generated and built on first use); sets generated_.
  Compiled& moduleFor(DataType index_type);
  std::unique_ptr<ir::Fusion> fusion_;
  std::unique_ptr<kir::Kernel> kernel_;
  codegen::GeneratedKernel generated_;
  Backend backend_ = Backend::Host;
  ExecutorOptions options_;
  std::unique_ptr<Compiled> compiled_;
  LaunchParams last_launch_;
};

}  // namespace loom::exec
