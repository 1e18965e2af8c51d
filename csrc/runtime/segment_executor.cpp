// SPDX-License-Identifier: Apache-2.0
// KernelSegmentExecutor and makeSegmentExecutor (runtime/segment_executor.h).
#include "loom/runtime/segment_executor.h"

#include <algorithm>
#include <type_traits>
#include <variant>

#include "loom/eval/expression_evaluator.h"
#include "loom/exec/output_views.h"
#include "loom/ir/printer.h"
#include "loom/runtime/attention_executor.h"
#include "loom/runtime/communication_executor.h"
#include "loom/runtime/matmul_executor.h"
#include "loom/scheduler/registry.h"
#include "loom/support/dump_sink.h"
#include "loom/support/error.h"
#include "loom/support/phase_timer.h"

namespace loom::runtime {

std::string valueNames(const std::vector<ir::Val*>& values) {
  std::string out;
  for (const ir::Val* v : values) out += (out.empty() ? "" : ", ") + v->toString();
  return out.empty() ? std::string("nothing") : out;
}

namespace {

// Whether segment output o may be returned as a view of an input (exec/output_views.h): never
// when the segment reads an input of the fusion that an output is written into in place (the
// view would show the new values); only when laid out densely, row-major, when an expr of
// another segment reads it (its input there is declared so); in any layout when only the fusion
// returns it.
enum class ViewMode : uint8_t { Any, Dense, Never };

ViewMode viewMode(const segmenter::Segment& segment, size_t o) {
  const ir::Val* out = segment.fusion.outputs.at(o);
  const std::vector<ir::Val*>& ins = segment.fusion.inputs;
  for (const auto& [written_out, written] : out->fusion()->aliases()) {
    if (std::find(ins.begin(), ins.end(), written) != ins.end()) return ViewMode::Never;
  }
  for (const ir::Expr* use : out->uses()) {
    if (std::find(segment.exprs.begin(), segment.exprs.end(), use) == segment.exprs.end()) {
      return ViewMode::Dense;
    }
  }
  return ViewMode::Any;
}

bool rowMajor(const exec::OutputView& v) {
  int64_t expected = 1;
  for (size_t d = v.sizes.size(); d-- > 0;) {
    if (v.sizes[d] != 1 && v.strides[d] != expected) return false;
    expected *= v.sizes[d];
  }
  return true;
}

}  // namespace

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
  // Views are found in the unscheduled fusion: a `set` there is the user's copy, never a view.
  std::unique_ptr<ir::Fusion> unscheduled = segment.fusion.fusion->clone();
  for (exec::ViewChain& chain : exec::viewChains(*unscheduled)) {
    const ViewMode mode = viewMode(segment, size_t(chain.output));
    if (mode == ViewMode::Never) continue;
    view_dense_only_.push_back(mode == ViewMode::Dense);
    view_chains_.push_back(std::move(chain));
  }
  if (!view_chains_.empty()) view_fusion_ = std::move(unscheduled);
  compileWithoutViews(segment, context, options);
}

void KernelSegmentExecutor::compileWithoutViews(const segmenter::Segment& segment,
                                                const SegmentContext& context,
                                                const exec::ExecutorOptions& options) {
  const size_t n_outputs = segment.fusion.outputs.size();
  if (view_chains_.empty() || view_chains_.size() >= n_outputs) return;
  // The segment without its view outputs (and the view ops only they read).
  std::unique_ptr<ir::Fusion> lean = segment.fusion.fusion->clone();
  const std::vector<ir::Val*> outs = lean->outputs();
  std::vector<bool> is_view(outs.size(), false);
  for (const exec::ViewChain& c : view_chains_) is_view.at(size_t(c.output)) = true;
  for (size_t o = 0; o < outs.size(); ++o) {
    if (is_view[o]) {
      lean->removeOutput(outs[o]);
    } else {
      lean_outputs_.push_back(int64_t(o));
    }
  }
  lean->removeDeadCode();
  // The parameters were chosen for the whole segment; the lean fusion keeps the scheduler's
  // reference and tensors but for the views, so they apply unless the scheduler no longer takes
  // it (a view was its reference). Then the whole kernel serves every run, as before.
  const segmenter::KernelWork& work = *segment.kernel();
  const scheduler::Scheduler& chosen = scheduler::schedulerFor(work.scheduler);
  const DumpOptions& dump = context.dump != nullptr ? *context.dump
                                                    : DumpOptions::fromEnvironment();
  // Without the lean kernel the whole one serves every run (it computes the views too): right,
  // only slower, so the reason is a dump line, not an error.
  auto fallBack = [&](const std::string& why) {
    lean_outputs_.clear();
    if (dump.has(DumpOption::Segments)) {
      dumpSink() << "segment " << segment.id << ": its view outputs are computed by the whole "
                 << "kernel (no kernel without them: " << why << ")\n";
    }
  };
  std::string why;
  if (!chosen.canScheduleCompileTime(*lean, &why)) {
    fallBack("the scheduler does not take the segment without them: " + why);
    return;
  }
  try {
    scheduler::applyScheduler(chosen, *lean, *work.params);
    auto executor = std::make_unique<exec::KernelExecutor>();
    executor->compile(*lean, context.device, options);
    without_views_ = std::move(executor);
  } catch (const Error& e) {
    // A parameter chosen for the whole segment that the lean one cannot take (a vector width,
    // a reference that was a view); a bug surfaces here too, but the whole kernel still runs.
    fallBack(e.what());
  }
}

void KernelSegmentExecutor::runInto(std::span<const eval::Argument> args,
                                    std::vector<Tensor>& outputs, SegmentRecord& record,
                                    std::span<const Tensor> into) {
  std::vector<exec::OutputView> views;
  if (!view_chains_.empty()) {
    eval::ExpressionEvaluator ee;
    ee.bindInputs(*view_fusion_, args);
    for (size_t k = 0; k < view_chains_.size(); ++k) {
      const exec::ViewChain& chain = view_chains_[k];
      const bool buffer =
          size_t(chain.output) < into.size() && into[size_t(chain.output)].defined();
      if (buffer) continue;  // an in-place output: written into the buffer given
      std::optional<exec::OutputView> v =
          exec::viewOf(chain, std::get<Tensor>(args[size_t(chain.input)]), ee);
      if (v.has_value() && (!view_dense_only_[k] || rowMajor(*v))) views.push_back(std::move(*v));
    }
  }
  auto viewTensor = [&](const exec::OutputView& v) {
    return exec::viewTensor(v, std::get<Tensor>(args[size_t(v.input)]));
  };
  if (!views.empty() && views.size() == view_fusion_->outputs().size()) {
    // Every output is a view of an input: no kernel, no copy.
    outputs.assign(views.size(), Tensor());
    for (const exec::OutputView& v : views) outputs[size_t(v.output)] = viewTensor(v);
    record.launch = exec::LaunchParams{};
    record.compileSeconds = 0;
    return;
  }
  double plan_seconds = 0;
  if (without_views_ != nullptr && views.size() == view_chains_.size()) {
    // Every output that may be a view is one this run: the kernel without them computes and
    // writes the others only.
    std::vector<Tensor> lean_into, lean_outputs;
    for (int64_t o : lean_outputs_) {
      lean_into.push_back(size_t(o) < into.size() ? into[size_t(o)] : Tensor());
    }
    record.launch = without_views_->runInto(args, lean_outputs, &plan_seconds, lean_into);
    outputs.assign(view_fusion_->outputs().size(), Tensor());
    for (size_t k = 0; k < lean_outputs_.size(); ++k) {
      outputs[size_t(lean_outputs_[k])] = std::move(lean_outputs.at(k));
    }
  } else {
    record.launch = executor_.runInto(args, outputs, &plan_seconds, into);
  }
  record.compileSeconds = plan_seconds;
  for (const exec::OutputView& v : views) outputs[size_t(v.output)] = viewTensor(v);
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
