// SPDX-License-Identifier: Apache-2.0
// The pre-segmentation pass list (presegment.h).
#include "loom/segmenter/presegment.h"

#include <iostream>

#include "loom/ir/exprs.h"
#include "loom/ir/fusion.h"
#include "loom/ir/printer.h"
#include "loom/ir/verifier.h"
#include "loom/lower/lower.h"
#include "loom/multidevice/communication.h"
#include "loom/multidevice/sharding.h"
#include "loom/ops/attention.h"
#include "loom/segmenter/concretize.h"
#include "loom/segmenter/reduction_inits.h"
#include "loom/segmenter/remove_empty.h"
#include "loom/segmenter/user_loops.h"
#include "loom/segmenter/welford_translation.h"
#include "loom/support/dump_sink.h"
#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom::segmenter {

namespace {

bool dropLoops(ir::Fusion& fusion, PresegmentContext& /*ctx*/) { return dropUserLoops(fusion); }

bool concretizeReshapes(ir::Fusion& fusion, PresegmentContext& ctx) {
  if (ctx.withoutArguments || !hasDynamicReshape(fusion)) return false;
  concretizeFusion(fusion, ctx.args);
  return true;
}

// The sharding passes know the composite's ops (matmul, reductions, pointwise), not the attention
// nodes: a fusion with a device mesh has them expanded into their composites first, so heads
// shard as before (a single-device fusion keeps the nodes for the attention segment).
bool expandShardedAttention(ir::Fusion& fusion, PresegmentContext& /*ctx*/) {
  bool sharded = false;
  bool attention = false;
  for (ir::TensorView* tv : fusion.allTvs()) sharded = sharded || tv->hasDeviceMesh();
  for (ir::Expr* e : fusion.exprs()) attention = attention || ir::isAttentionExpr(e);
  if (!sharded || !attention) return false;
  ops::expandAttention(fusion);
  return true;
}

bool propagateShardings(ir::Fusion& fusion, PresegmentContext& /*ctx*/) {
  return multidevice::propagateShardings(fusion);
}

bool decomposeReshardings(ir::Fusion& fusion, PresegmentContext& /*ctx*/) {
  const bool dump = DumpOptions::fromEnvironment().has(DumpOption::Resharding);
  if (dump && multidevice::isMultidevice(fusion)) {
    for (const ir::Expr* e : fusion.exprs()) {
      const std::string why = multidevice::reshardingReason(e);
      if (!why.empty()) dumpSink() << "resharding: " << why << "\n";
    }
  }
  const bool changed = multidevice::decomposeReshardings(fusion);
  if (dump && multidevice::isMultidevice(fusion)) {
    for (const ir::Expr* e : fusion.exprs()) {
      if (auto c = multidevice::communicationOf(e)) {
        std::string text = e->toString();
        while (!text.empty() && text.back() == '\n') text.pop_back();
        dumpSink() << "resharding: '" << text << "' is a communication: " << c->toString() << "\n";
      }
    }
  }
  return changed;
}

bool finalizeShardings(ir::Fusion& fusion, PresegmentContext& /*ctx*/) {
  return multidevice::finalizeShardings(fusion);
}

bool localizeShards(ir::Fusion& fusion, PresegmentContext& ctx) {
  if (!ctx.deviceId.has_value() || !multidevice::isMultidevice(fusion)) return false;
  // The shardings go now: what each communication moves is decided while they are there.
  for (ir::Expr* e : fusion.exprs()) {
    if (auto c = multidevice::communicationOf(e)) ctx.communications.emplace(e, std::move(*c));
  }
  return multidevice::localizeShardings(fusion, *ctx.deviceId);
}

bool reductionInits(ir::Fusion& fusion, PresegmentContext& /*ctx*/) {
  if (separateReductionInits(fusion) == 0) return false;
  // The combines it made are sharded like their neighbours (decompose_reshardings needs them).
  (void)multidevice::shardNewTensors(fusion);
  return true;
}

bool removeEmpty(ir::Fusion& fusion, PresegmentContext& ctx) {
  if (ctx.withoutArguments || !hasEmptyWork(fusion, ctx.args)) return false;
  removeEmptyWork(fusion, ctx.args);
  ctx.removedEmptyWork = true;
  return true;
}

bool translateWelfords(ir::Fusion& fusion, PresegmentContext& ctx) {
  if (ctx.withoutArguments || !ctx.translateWelford || ctx.removedEmptyWork ||
      !hasTranslatableWelford(fusion) ||
      multidevice::hasCommunication(fusion)) {
    return false;
  }
  std::string why;
  if (translateApplicableWelford(fusion, ctx.args, ctx.device, &why)) {
    ctx.welfordNote = "translated to two passes (sum, then sum of squared deviations)";
    return true;
  }
  ctx.welfordNote = "kept (not translated: " + why + ")";
  return false;
}

}  // namespace

const PresegmentPasses& presegmentPasses() {
  static const PresegmentPasses passes("pre-segmentation",
                                       {
                                           {"drop_user_loops", dropLoops},
                                           {"concretize_reshapes", concretizeReshapes},
                                           {"expand_sharded_attention", expandShardedAttention},
                                           {"propagate_shardings", propagateShardings},
                                           {"reduction_inits", reductionInits},
                                           {"decompose_reshardings", decomposeReshardings},
                                           {"remove_empty_work", removeEmpty},
                                           {"translate_welford", translateWelfords,
                                            /*optional=*/true},
                                           {"finalize_shardings", finalizeShardings},
                                           {"localize_shards", localizeShards},
                                       });
  return passes;
}

namespace {

// After each pass that changed the fusion: the IR contract holds (a pass that breaks it is an
// internal error naming the pass), and LOOM_DUMP=fusion_ir(pass) prints it.
PassHooks<ir::Fusion> hooksFor(const DumpOptions& dump) {
  PassHooks<ir::Fusion> hooks;
  hooks.disabled = disabledPassesFromEnvironment();
  hooks.dumpAfter = [&dump](const ir::Fusion& fusion, std::string_view pass) {
    try {
      ir::verify(fusion);
    } catch (const InternalError& e) {
      LOOM_ASSERT(false, "pre-segmentation pass ", pass,
                  " left a fusion that breaks the IR contract: ", e.reason());
    }
    if (dump.hasWithArg(DumpOption::FusionIr, pass)) {
      dumpSink() << "=== fusion after " << pass << " ===\n" << ir::printFusion(fusion);
    }
  };
  return hooks;
}

}  // namespace

void checkDisabledPassNames(const std::unordered_set<std::string>& names) {
  for (const std::string& name : names) {
    LOOM_CHECK(presegmentPasses().find(name) != nullptr || lower::pipeline().find(name) != nullptr,
               "LOOM_DISABLE names '", name, "', which is no pass (optional lowering passes: ",
               join(lower::pipeline().optionalNames()), "; optional pre-segmentation passes: ",
               join(presegmentPasses().optionalNames()), ")");
  }
}

bool runPresegmentPasses(ir::Fusion& fusion, PresegmentContext& ctx, const DumpOptions& dump) {
  checkDisabledPassNames(disabledPassesFromEnvironment());
  if (dump.hasWithArg(DumpOption::FusionIr, "input")) {
    dumpSink() << "=== fusion before the pre-segmentation passes ===\n" << ir::printFusion(fusion);
  }
  return !presegmentPasses().run(fusion, ctx, hooksFor(dump)).changed.empty();
}

std::unique_ptr<ir::Fusion> shardedCopy(const ir::Fusion& fusion, PassReport* report) {
  std::unique_ptr<ir::Fusion> copy = fusion.clone();
  PresegmentContext ctx;
  ctx.withoutArguments = true;
  const DumpOptions none;
  PassReport ran = presegmentPasses().runUntil(*copy, ctx, "finalize_shardings", hooksFor(none));
  if (report != nullptr) *report = std::move(ran);
  return copy;
}

}  // namespace loom::segmenter
