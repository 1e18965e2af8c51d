// SPDX-License-Identifier: Apache-2.0
// The pre-segmentation pass list (presegment.h).
#include "loom/segmenter/presegment.h"

#include <iostream>

#include "loom/ir/printer.h"
#include "loom/ir/verifier.h"
#include "loom/multidevice/communication.h"
#include "loom/multidevice/sharding.h"
#include "loom/segmenter/concretize.h"
#include "loom/segmenter/reduction_inits.h"
#include "loom/segmenter/remove_empty.h"
#include "loom/segmenter/welford_translation.h"
#include "loom/support/dump_sink.h"
#include "loom/support/error.h"

namespace loom::segmenter {

namespace {

bool concretizeReshapes(ir::Fusion& fusion, PresegmentContext& ctx) {
  if (!hasDynamicReshape(fusion)) return false;
  concretizeFusion(fusion, ctx.args);
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
  return multidevice::localizeShardings(fusion);
}

bool reductionInits(ir::Fusion& fusion, PresegmentContext& /*ctx*/) {
  return separateReductionInits(fusion) > 0;
}

bool removeEmpty(ir::Fusion& fusion, PresegmentContext& ctx) {
  if (!hasEmptyWork(fusion, ctx.args)) return false;
  removeEmptyWork(fusion, ctx.args);
  ctx.removedEmptyWork = true;
  return true;
}

bool translateWelfords(ir::Fusion& fusion, PresegmentContext& ctx) {
  if (!ctx.translateWelford || ctx.removedEmptyWork || !hasTranslatableWelford(fusion) ||
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

const std::vector<PresegmentPass>& presegmentPasses() {
  static const std::vector<PresegmentPass> passes = {
      {"concretize_reshapes", concretizeReshapes},
      {"propagate_shardings", propagateShardings},
      {"reduction_inits", reductionInits},
      {"decompose_reshardings", decomposeReshardings},
      {"remove_empty_work", removeEmpty},
      {"translate_welford", translateWelfords},
      {"finalize_shardings", finalizeShardings},
      {"localize_shards", localizeShards},
  };
  return passes;
}

bool runPresegmentPasses(ir::Fusion& fusion, PresegmentContext& ctx, const DumpOptions& dump) {
  if (dump.hasWithArg(DumpOption::FusionIr, "input")) {
    dumpSink() << "=== fusion before the pre-segmentation passes ===\n" << ir::printFusion(fusion);
  }
  bool changed = false;
  for (const PresegmentPass& pass : presegmentPasses()) {
    const bool did = pass.run(fusion, ctx);
    changed |= did;
    if (!did) continue;
    try {
      ir::verify(fusion);
    } catch (const InternalError& e) {
      LOOM_ASSERT(false, "pre-segmentation pass ", pass.name,
                  " left a fusion that breaks the IR contract: ", e.reason());
    }
    if (dump.hasWithArg(DumpOption::FusionIr, pass.name)) {
      dumpSink() << "=== fusion after " << pass.name << " ===\n" << ir::printFusion(fusion);
    }
  }
  return changed;
}

}  // namespace loom::segmenter
