// SPDX-License-Identifier: Apache-2.0
// The lowering pipeline: one PassList (support/pass_list.h), with LOOM_DUMP=kernel_ir printing
// after each pass that changed the kernel (kernel_ir(pass) for one pass), LOOM_DEBUG=
// verify_kernel_ir verifying it after every pass, and LOOM_DISABLE skipping optional passes.
#include "loom/ir/exprs.h"
#include "loom/ir/fusion.h"
#include "loom/lower/lower.h"
#include "loom/lower/verify_kernel.h"
#include "loom/support/dump_sink.h"
#include "loom/transform/schedule.h"

namespace loom::lower {

const Pipeline& pipeline() {
  // Optional: the kernel is right without them, only slower (more predicates, unhoisted index
  // math, unfolded constants).
  static const Pipeline passes("lowering",
                               {
                                   {"expr_sort", exprSort},
                                   {"kernel_params", kernelParams},
                                   {"loop_nests", loopNests},
                                   {"memory_reads", memoryReads},
                                   {"allocations", allocations},
                                   {"reductions", reductions},
                                   {"scans", scans},
                                   {"sorts", sorts},
                                   {"thread_predicates", threadPredicates},
                                   {"predicates", predicates},
                                   {"eliminate_predicates", eliminatePredicates, /*optional=*/true},
                                   {"unswitch", unswitch, /*optional=*/true},
                                   {"peel_rows", peelRows},
                                   {"indexing", indexing},
                                   {"vectorize", vectorize},
                                   {"syncs", syncs},
                                   {"simplify", simplify, /*optional=*/true},
                                   {"hoist_indices", hoistIndices, /*optional=*/true},
                               });
  return passes;
}

namespace {

std::unique_ptr<kir::Kernel> run(const ir::Fusion& fusion, const DumpOptions& dump,
                                 std::string_view last, LowerOptions options) {
  // Matmul and linear are library calls between kernels (a segment of their own), never code.
  for (const ir::Expr* e : fusion.exprs()) {
    LOOM_CHECK(!e->isA<ir::MatmulOp>() && !e->isA<ir::LinearOp>(), "'", e->toString(),
               "' has no kernel form: matmul and linear run as segments of their own (a GEMM "
               "library call); run the fusion through FusionExecutorCache");
    LOOM_CHECK(!ir::isAttentionExpr(e), "'", e->opName(),
               "' has no generated kernel form: attention runs as a segment of its own; run the "
               "fusion through FusionExecutorCache");
  }
  // Schedules come from users and schedulers: reject illegal ones with a user error first.
  transform::validateSchedule(fusion);
  auto kernel = std::make_unique<kir::Kernel>();
  LowerContext ctx(fusion, options);
  PassHooks<kir::Kernel> hooks;
  hooks.disabled = disabledPassesFromEnvironment();
  if (dump.has(DumpOption::KernelIr)) {
    hooks.dumpAfter = [&dump](const kir::Kernel& k, std::string_view pass) {
      if (dump.hasWithArg(DumpOption::KernelIr, pass)) {
        dumpSink() << "=== kernel IR after " << pass << " ===\n" << kir::toString(k);
      }
    };
  }
  if (DebugOptions::fromEnvironment().has(DebugOption::VerifyKernelIr)) {
    hooks.verifyAfter = [](const kir::Kernel& k, std::string_view pass) { verifyKernel(k, pass); };
  }
  (void)pipeline().runUntil(*kernel, ctx, last, hooks);
  return kernel;
}

}  // namespace

std::unique_ptr<kir::Kernel> lowerFusion(const ir::Fusion& fusion, const DumpOptions& dump,
                                         LowerOptions options) {
  return run(fusion, dump, "", options);
}

std::unique_ptr<kir::Kernel> lowerFusionUntil(const ir::Fusion& fusion, std::string_view last,
                                              LowerOptions options) {
  return run(fusion, DumpOptions(), last, options);
}

}  // namespace loom::lower
