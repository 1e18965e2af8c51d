// SPDX-License-Identifier: Apache-2.0
// KernelSegmentExecutor and makeSegmentExecutor (runtime/segment_executor.h).
#include "loom/runtime/segment_executor.h"

#include <type_traits>
#include <variant>

#include "loom/ir/printer.h"
#include "loom/runtime/attention_executor.h"
#include "loom/runtime/communication_executor.h"
#include "loom/runtime/matmul_executor.h"
#include "loom/scheduler/registry.h"
#include "loom/support/dump_sink.h"
#include "loom/support/phase_timer.h"

namespace loom::runtime {

std::string valueNames(const std::vector<ir::Val*>& values) {
  std::string out;
  for (const ir::Val* v : values) out += (out.empty() ? "" : ", ") + v->toString();
  return out.empty() ? std::string("nothing") : out;
}

KernelSegmentExecutor::KernelSegmentExecutor(const segmenter::Segment& segment,
                                             const SegmentContext& context) {
  const segmenter::KernelWork& work = *segment.kernel();
  const DumpOptions& dump = context.dump != nullptr ? *context.dump
                                                    : DumpOptions::fromEnvironment();
  PhaseTimer timer(dump.has(DumpOption::CompileTime), "segment " + std::to_string(segment.id));
  if (dump.has(DumpOption::SchedulerParams)) {
    std::string params = work.params->toString();
    if (params.empty() || params.back() != '\n') params += '\n';
    dumpSink() << "segment " << segment.id << " ("
               << scheduler::schedulerTypeName(work.scheduler) << "): " << params;
  }
  std::unique_ptr<ir::Fusion> scheduled = segment.fusion.fusion->clone();
  scheduler::applyScheduler(scheduler::schedulerFor(work.scheduler), *scheduled, *work.params);
  timer.mark("clone + schedule");
  if (dump.has(DumpOption::FusionIrScheduled)) {
    dumpSink() << "segment " << segment.id << " scheduled:\n" << ir::printFusion(*scheduled);
  }
  exec::ExecutorOptions options = context.executor;
  options.lowering.peelVectorRows = work.params->peelVectorRows();
  executor_.compile(*scheduled, context.device, options);
  timer.mark("executor compile (the kernel executor lines above included)");
}

void KernelSegmentExecutor::runInto(std::span<const eval::Argument> args,
                                    std::vector<Tensor>& outputs, SegmentRecord& record,
                                    std::span<const Tensor> into) {
  double plan_seconds = 0;
  record.launch = executor_.runInto(args, outputs, &plan_seconds, into);
  record.compileSeconds = plan_seconds;
}

std::string KernelSegmentExecutor::step(const segmenter::Segment& segment) const {
  return "kernel (" + segment.what() + "): " + valueNames(segment.fusion.inputs) + " -> " +
         valueNames(segment.fusion.outputs);
}

std::unique_ptr<SegmentExecutor> makeSegmentExecutor(const segmenter::Segment& segment,
                                                     const SegmentContext& context) {
  return std::visit(
      [&](const auto& work) -> std::unique_ptr<SegmentExecutor> {
        using Work = std::decay_t<decltype(work)>;
        if constexpr (std::is_same_v<Work, segmenter::KernelWork>) {
          return std::make_unique<KernelSegmentExecutor>(segment, context);
        } else if constexpr (std::is_same_v<Work, segmenter::MatmulWork>) {
          return std::make_unique<MatmulSegmentExecutor>(segment, context);
        } else if constexpr (std::is_same_v<Work, segmenter::AttentionWork>) {
          return std::make_unique<AttentionSegmentExecutor>(segment, context);
        } else {
          static_assert(std::is_same_v<Work, segmenter::CommunicationWork>,
                        "a kind of segment work without an executor");
          return std::make_unique<CommunicationExecutor>(segment, context.device,
                                                         context.communicator, context.deviceId,
                                                         context.executor.stream);
        }
      },
      segment.work);
}

}  // namespace loom::runtime
