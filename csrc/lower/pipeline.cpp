// SPDX-License-Identifier: Apache-2.0
// The lowering pipeline: one named list of passes, with LOOM_DUMP=kernel_ir printing after each
// pass that changed the kernel (kernel_ir(pass) for one pass).
#include <iostream>

#include "loom/lower/lower.h"
#include "loom/lower/verify_kernel.h"
#include "loom/support/dump_sink.h"
#include "loom/transform/schedule.h"

namespace loom::lower {

const std::vector<Pass>& pipeline() {
  static const std::vector<Pass> passes = {
      {"expr_sort", exprSort},
      {"kernel_params", kernelParams},
      {"loop_nests", loopNests},
      {"memory_reads", memoryReads},
      {"allocations", allocations},
      {"reductions", reductions},
      {"thread_predicates", threadPredicates},
      {"predicates", predicates},
      {"eliminate_predicates", eliminatePredicates},
      {"unswitch", unswitch},
      {"indexing", indexing},
      {"vectorize", vectorize},
      {"syncs", syncs},
      {"simplify", simplify},
      {"hoist_indices", hoistIndices},
  };
  return passes;
}

namespace {

std::unique_ptr<kir::Kernel> run(const ir::Fusion& fusion, const DumpOptions& dump,
                                 std::string_view last) {
  // Schedules come from users and schedulers: reject illegal ones with a user error first.
  transform::validateSchedule(fusion);
  auto kernel = std::make_unique<kir::Kernel>();
  LowerContext ctx(fusion);
  bool found = last.empty();
  const bool verify = DebugOptions::fromEnvironment().has(DebugOption::VerifyKernelIr);
  for (const Pass& pass : pipeline()) {
    bool changed = pass.fn(*kernel, ctx);
    if (changed && dump.hasWithArg(DumpOption::KernelIr, pass.name)) {
      dumpSink() << "=== kernel IR after " << pass.name << " ===\n" << kir::toString(*kernel);
    }
    if (verify) verifyKernel(*kernel, pass.name);  // LOOM_DEBUG=verify_kernel_ir
    if (pass.name == last) {
      found = true;
      break;
    }
  }
  LOOM_CHECK(found, "no lowering pass named '", last, "'");
  return kernel;
}

}  // namespace

std::unique_ptr<kir::Kernel> lowerFusion(const ir::Fusion& fusion, const DumpOptions& dump) {
  return run(fusion, dump, "");
}

std::unique_ptr<kir::Kernel> lowerFusionUntil(const ir::Fusion& fusion, std::string_view last) {
  return run(fusion, DumpOptions(), last);
}

}  // namespace loom::lower
