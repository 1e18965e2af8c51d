// SPDX-License-Identifier: Apache-2.0
// AttentionSegmentExecutor (runtime/attention_executor.h).
#include "loom/runtime/attention_executor.h"

#include <algorithm>

#include "loom/eval/expression_evaluator.h"
#include "loom/ir/exprs.h"
#include "loom/ir/fusion.h"
#include "loom/ir/tensor_domain.h"
#include "loom/support/dump_sink.h"
#include "loom/support/error.h"
#include "loom/support/options.h"

namespace loom::runtime {
namespace {

// The order of `tv`'s allocation among its logical dims (outermost first), when it permutes them;
// empty for none or the logical order itself.
std::vector<int64_t> allocationPermutation(const ir::TensorView* tv) {
  if (!tv->domain()->hasAllocation()) return {};
  const auto dims = ir::TensorDomain::noReductions(tv->logical());
  const auto alloc = ir::TensorDomain::noReductions(tv->domain()->allocation());
  std::vector<int64_t> perm;
  for (ir::IterDomain* id : alloc) {
    auto it = std::find(dims.begin(), dims.end(), id);
    LOOM_ASSERT(it != dims.end() && alloc.size() == dims.size(), "the attention result ",
                tv->toString(), " has an allocation domain that does not permute its dims");
    perm.push_back(int64_t(it - dims.begin()));
  }
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
  return identity ? std::vector<int64_t>{} : perm;
}

}  // namespace

AttentionSegmentExecutor::AttentionSegmentExecutor(const segmenter::Segment& segment,
                                                   const SegmentContext& context)
    : segment_(&segment),
      device_(context.device),
      stream_(context.executor.stream),
      dump_choice_(context.dump != nullptr && context.dump->has(DumpOption::SchedulerChoice)) {
  const ir::Fusion& fusion = *segment.fusion.fusion;
  for (ir::Expr* e : fusion.exprs()) {
    if (ir::isAttentionExpr(e)) expr_ = e;
  }
  LOOM_ASSERT(expr_ != nullptr, "an attention segment computes one sdpfa node");
  // The segment outputs the node's results that something reads (a gradient nobody uses is not
  // one of them).
  const auto& outs = expr_->outputs();
  for (ir::Val* o : fusion.outputs()) {
    auto it = std::find(outs.begin(), outs.end(), o);
    LOOM_ASSERT(it != outs.end(), "an attention segment outputs only its node's results");
    result_of_.push_back(size_t(it - outs.begin()));
    result_order_.push_back(allocationPermutation(o->as<ir::TensorView>()));
  }
  const auto& seg_inputs = fusion.inputs();
  for (size_t i = 0; i < ir::attentionTensorInputs(expr_); ++i) {
    auto it = std::find(seg_inputs.begin(), seg_inputs.end(), expr_->input(i));
    LOOM_ASSERT(it != seg_inputs.end(), "an attention operand is an input of its segment");
    arg_of_.push_back(size_t(it - seg_inputs.begin()));
  }
  RuntimeOptions options;
  options.device = device_;
  options.executor = context.executor;
  runner_ = std::make_unique<AttentionRunner>(std::move(options));
}

AttentionSegmentExecutor::~AttentionSegmentExecutor() = default;

void AttentionSegmentExecutor::runInto(std::span<const eval::Argument> args,
                                       std::vector<Tensor>& outputs, SegmentRecord& record,
                                       std::span<const Tensor> into) {
  LOOM_ASSERT(into.empty(), "an attention segment stores no output in place");
  std::vector<Tensor> t;
  for (size_t i = 0; i < arg_of_.size(); ++i) {
    const auto* tv = expr_->input(i)->as<ir::TensorView>();
    LOOM_ASSERT(arg_of_[i] < args.size(), "attention segment argument count");
    const Tensor* a = std::get_if<Tensor>(&args[arg_of_[i]]);
    LOOM_CHECK(a != nullptr && a->defined(), "'", expr_->opName(), "': its operand ",
               tv->toString(), " must be a tensor");
    const auto rank = int64_t(ir::TensorDomain::noReductions(tv->logical()).size());
    LOOM_CHECK(a->dtype() == tv->dtype() && a->dim() == rank, "'", expr_->opName(),
               "': its operand ", tv->toString(), " is declared ", tv->dtype(), " of rank ", rank,
               ", got ", describe(*a));
    t.push_back(*a);
  }
  // The Scalars: constants, segment inputs, or sizes of the operands (the default scale).
  eval::ExpressionEvaluator ee;
  ee.bindInputs(*segment_->fusion.fusion, args);
  const size_t n = arg_of_.size();
  exec::FusedAttentionArgs fa;
  fa.dropout_p = ee.evaluateDouble(expr_->input(n));
  fa.causal = ee.evaluateInt(expr_->input(n + 1)) != 0;
  fa.scale = ee.evaluateDouble(expr_->input(n + 2));
  fa.seed = ee.evaluateInt(expr_->input(n + 3));
  fa.offset = ee.evaluateInt(expr_->input(n + 4));
  std::vector<Tensor> results;
  bool fused = false;
  std::string why;
  if (expr_->isA<ir::SdpaFwdOp>()) {
    AttentionRunner::Forward r = runner_->forward(t[0], t[1], t[2], fa);
    results = {std::move(r.output), std::move(r.log_sumexp)};
    fused = r.fused;
    why = std::move(r.whyNotFused);
  } else {
    AttentionRunner::Backward r = runner_->backward(t[0], t[1], t[2], t[3], t[4], t[5], fa);
    results = {std::move(r.grad_query), std::move(r.grad_key), std::move(r.grad_value)};
    fused = r.fused;
    why = std::move(r.whyNotFused);
  }
  outputs.clear();
  for (size_t k = 0; k < result_of_.size(); ++k) {
    // The kernels and the composite write row-major; a result whose tensor is allocated in
    // another dim order (the query's, as torch's kernels) is laid out so.
    const Tensor& r = results[result_of_[k]];
    const std::vector<int64_t>& perm = result_order_[k];
    if (perm.empty()) {
      outputs.push_back(r);
      continue;
    }
    std::vector<int64_t> sizes, inverse(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) {
      sizes.push_back(r.size(perm[d]));
      inverse[size_t(perm[d])] = int64_t(d);
    }
    Tensor laid = device_->empty(sizes, r.dtype(), stream_).permute(inverse);
    device_->copyElements(laid, r, stream_);
    outputs.push_back(std::move(laid));
  }
  ++(fused ? fused_runs_ : composite_runs_);
  record.params =
      expr_->opName() + (fused ? ": the fused kernel" : ": the composite (" + why + ")");
  if (dump_choice_) {
    dumpSink() << "attention segment " << segment_->id << ": " << record.params << "\n";
  }
}

std::string AttentionSegmentExecutor::step(const segmenter::Segment& segment) const {
  return segment.parameters() + " (the fused kernel where it applies, else its composite) on " +
         device_->name() + ": " + valueNames(segment.fusion.inputs) + " -> " +
         valueNames(segment.fusion.outputs);
}

}  // namespace loom::runtime
