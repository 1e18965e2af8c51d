// SPDX-License-Identifier: Apache-2.0
// Greedy, cycle-free merging of per-expr groups into segments that one scheduler each takes.
#include "loom/segmenter/segmenter.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/layout.h"
#include "loom/ir/printer.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/lower/lower.h"
#include "loom/scheduler/registry.h"
#include "loom/segmenter/in_place.h"
#include "loom/segmenter/matmul_epilogue.h"
#include "loom/segmenter/presegment.h"
#include "loom/support/dump_sink.h"
#include "loom/support/options.h"

namespace loom::segmenter {
namespace {

bool producesTensor(const ir::Expr* e) {
  return std::any_of(e->outputs().begin(), e->outputs().end(),
                     [](const ir::Val* v) { return v->isA<ir::TensorView>(); });
}

// What a scheduler made of one candidate set of exprs.
struct Trial {
  SegmentFusion fusion;
  SegmentWork work;
};

class Segmenter {
 public:
  Segmenter(const ir::Fusion& fusion, std::span<const eval::Argument> args,
            const SegmenterOptions& options,
            std::unordered_map<const ir::Expr*, multidevice::Communication> communications)
      : fusion_(fusion),
        args_(args),
        options_(options),
        info_(fusion, args, options.device),
        communications_(std::move(communications)) {
    live_ = fusion.exprs();
    for (size_t i = 0; i < live_.size(); ++i) position_[live_[i]] = i;
    for (ir::Expr* e : live_) {
      if (auto m = matmulWorkOf(e)) {
        if (options.matmulEpilogues) absorbEpilogue(e, *m);
        matmuls_.emplace(e, SegmentWork(std::move(*m)));
      }
      if (auto a = attentionWorkOf(e)) matmuls_.emplace(e, SegmentWork(std::move(*a)));
    }
    // The communications in the given order (else the fusion's), each the next one's
    // predecessor (consumers()): every device issues them in one order, whatever groups merge.
    for (int64_t name : options.communicationOrder) {
      for (const auto& [e, c] : communications_) {
        for (const ir::Val* o : e->outputs()) {
          if (o->isA<ir::TensorView>() && o->name() == name) comm_chain_.push_back(e);
        }
      }
    }
    if (options.communicationOrder.empty()) {
      for (ir::Expr* e : live_) {
        if (communications_.count(e) != 0) comm_chain_.push_back(e);
      }
    }
  }

  SegmentedFusion run() {
    SegmentedFusion result(&fusion_);
    std::vector<ir::Expr*> tensor_exprs;
    for (ir::Expr* e : live_) {
      if (producesTensor(e)) tensor_exprs.push_back(e);
    }
    if (tensor_exprs.empty()) return result;
    // A communication or a library call (matmul, attention) is a segment of its own, so a fusion
    // with one is never one kernel.
    if (!options_.forceSegmentation && communications_.empty() && matmuls_.empty()) {
      std::string why;
      if (auto t = tryExprs(tensor_exprs, &why, options_.verifySchedules)) {
        addSegment(result, tensor_exprs, std::move(*t));
        return result;
      }
    }
    // One group per expr, then greedy merges.
    startGroups(tensor_exprs);
    while (mergeOnce()) {
    }
    // Merges are judged by the schedulers' proposals alone (cheap). With verifySchedules, each
    // final group is then scheduled and lowered once: a group whose schedule lowering refuses
    // goes back to its starting groups, and from then on every merge is verified the same way.
    std::vector<std::pair<int64_t, Trial>> accepted;
    while (true) {
      accepted.clear();
      std::vector<int64_t> refused;
      for (int64_t g : topologicalGroups()) {
        if (isCommunication(g)) {
          Trial t;
          t.fusion = buildSegmentFusion(fusion_, groups_[size_t(g)], live_);
          t.work = CommunicationWork{communications_.at(groups_[size_t(g)].front())};
          accepted.emplace_back(g, std::move(t));
          continue;
        }
        if (isMatmul(g)) {
          Trial t;
          t.fusion = buildSegmentFusion(fusion_, groups_[size_t(g)], live_);
          t.work = matmuls_.at(groups_[size_t(g)].front());
          accepted.emplace_back(g, std::move(t));
          continue;
        }
        std::string why;
        std::optional<Trial> t = tryExprs(groups_[size_t(g)], &why, options_.verifySchedules);
        if (t.has_value()) {
          accepted.emplace_back(g, std::move(*t));
          continue;
        }
        // Back to its starting groups; one that is a starting group itself has nothing to split.
        std::vector<ir::Expr*> exprs = std::move(groups_[size_t(g)]);
        groups_[size_t(g)].clear();
        rejected_.insert(sorted(exprs));
        for (ir::Expr* e : exprs) group_of_.erase(e);
        const size_t before = groups_.size();
        startGroups(exprs);
        const auto live = std::count_if(groups_.begin() + std::ptrdiff_t(before), groups_.end(),
                                        [](const auto& group) { return !group.empty(); });
        LOOM_CHECK(live > 1, "no scheduler accepts ", exprs.back()->toString(),
                   " even on its own: ", why);
        refused.push_back(g);
      }
      if (refused.empty()) break;
      verify_merges_ = true;
      while (mergeOnce()) {
      }
    }
    for (auto& [g, t] : accepted) addSegment(result, groups_[size_t(g)], std::move(t));
    return result;
  }

 private:
  // The pointwise consumers of matmul `e` its GEMM's epilogue applies (matmul_epilogue.h):
  // recorded in `work` and joined to e's group. Exprs of other library calls or communications
  // never join.
  void absorbEpilogue(ir::Expr* e, MatmulWork& work) {
    auto live = [&](const ir::Expr* u) { return position_.count(u) != 0; };
    auto joinable = [&](const ir::Expr* u) {
      return communications_.count(u) == 0 && !matmulWorkOf(u) && !attentionWorkOf(u);
    };
    MatmulEpilogue ep = matchMatmulEpilogue(e, live, joinable);
    if (ep.exprs.empty()) return;
    work.activation = ep.activation;
    for (ir::Expr* x : ep.exprs) absorbed_.insert(x);
    epilogues_[e] = std::move(ep.exprs);
  }

  // One new group per expr of `exprs`, except that a cat starts in one group with the pads it
  // selects among (it needs their ranges in its kernel), and that a matmul's epilogue exprs are
  // in its group.
  void startGroups(const std::vector<ir::Expr*>& exprs) {
    for (ir::Expr* e : exprs) {
      if (absorbed_.count(e) != 0) continue;  // in its matmul's group
      if (auto it = epilogues_.find(e); it != epilogues_.end()) {
        const auto g = int64_t(groups_.size());
        groups_.push_back({e});
        group_of_[e] = g;
        for (ir::Expr* x : it->second) {
          groups_.back().push_back(x);
          group_of_[x] = g;
        }
        continue;
      }
      if (auto* cat = e->dynCast<ir::CatOp>()) {
        std::vector<ir::Expr*> group;
        for (size_t k = 0; k < cat->numInputs(); ++k) {
          ir::Expr* def = cat->in(k)->definition();
          if (def != nullptr && def->isA<ir::PadOp>() && group_of_.count(def) != 0 &&
              cat->in(k)->uses().size() == 1 && !cat->in(k)->isFusionOutput()) {
            group.push_back(def);
          }
        }
        if (!group.empty()) {
          int64_t g = group_of_.at(group.front());
          for (ir::Expr* pad : group) {
            int64_t from = group_of_.at(pad);
            if (from != g) groups_[size_t(from)].clear();
            group_of_[pad] = g;
          }
          groups_[size_t(g)] = group;
          groups_[size_t(g)].push_back(e);
          group_of_[e] = g;
          continue;
        }
      }
      group_of_[e] = int64_t(groups_.size());
      groups_.push_back({e});
    }
  }

  // Sorted by position in the original, so equal sets compare equal.
  std::vector<ir::Expr*> sorted(std::vector<ir::Expr*> exprs) const {
    std::sort(exprs.begin(), exprs.end(), [&](ir::Expr* a, ir::Expr* b) {
      return position_.at(a) < position_.at(b);
    });
    return exprs;
  }

  // Arguments for a segment fusion: the real ones for original inputs (their strides and
  // alignment matter to vectorization), 16-byte aligned stand-ins for intermediates with the
  // layout the executor allocates them in (ir::denseLayout: expanded dims have stride 0).
  // Stand-ins are never read.
  std::vector<eval::Argument> segmentArgs(const SegmentFusion& seg) {
    std::vector<eval::Argument> out;
    for (ir::Val* v : seg.inputs) {
      const auto& ins = fusion_.inputs();
      auto it = std::find(ins.begin(), ins.end(), v);
      if (it != ins.end()) {
        out.push_back(args_[size_t(it - ins.begin())]);
        continue;
      }
      if (v->isA<ir::Scalar>()) {  // a size of an original input (buildSegmentFusion)
        out.emplace_back(info_.evaluator().evaluateInt(v));
        continue;
      }
      auto* tv = v->as<ir::TensorView>();
      std::vector<int64_t> sizes = info_.evaluator().logicalSizes(tv);
      std::vector<int64_t> strides = ir::denseLayout(tv, sizes).strides;
      out.emplace_back(Tensor::fromBlob(reinterpret_cast<void*>(uintptr_t{4096}), sizes, strides,
                                        tv->dtype(), Device::cpu()));
    }
    return out;
  }

  // The scheduler the registry proposes for `exprs` and its parameters; nullopt (with the
  // reasons in `why`) when none accepts them. With `verify` (or once verify_merges_ is set), the
  // proposal only counts when its schedule lowers: see verifySchedule.
  std::optional<Trial> tryExprs(const std::vector<ir::Expr*>& exprs, std::string* why,
                                bool verify = false) {
    Trial t;
    t.fusion = buildSegmentFusion(fusion_, sorted(exprs), live_);
    std::vector<eval::Argument> args = segmentArgs(t.fusion);
    scheduler::SchedulerRuntimeInfo info(*t.fusion.fusion, args, options_.device);
    scheduler::SchedulerProposal p = scheduler::proposeScheduler(*t.fusion.fusion, info);
    if (DumpOptions::fromEnvironment().has(DumpOption::SchedulerChoice)) {
      std::string outs;
      for (const ir::Val* o : t.fusion.fusion->outputs()) outs += " " + o->toString();
      dumpSink() << "scheduler_choice for " << exprs.size() << " expr(s), outputs" << outs << ":\n"
                 << scheduler::explainSchedulerChoice(*t.fusion.fusion, info);
    }
    if (p.scheduler == nullptr) {
      *why = p.rejectionSummary();
      return std::nullopt;
    }
    t.work = KernelWork(p.scheduler->type(), p.scheduler->computeHeuristics(*t.fusion.fusion, info));
    if ((verify || verify_merges_) && !verifySchedule(t, why)) return std::nullopt;
    return t;
  }

  // Schedules a copy of the trial's fusion and lowers it. A proposal whose schedule the
  // scheduler or lowering refuses (registers read across threads, loops that cannot be ordered,
  // a local buffer of symbolic size, ...) is no segment: the exprs are split further instead of
  // failing the whole fusion at compile time. The reason is kept for the error when a single
  // expr fails, and printed under LOOM_DUMP=segments.
  bool verifySchedule(const Trial& t, std::string* why) {
    const KernelWork& k = std::get<KernelWork>(t.work);
    std::unique_ptr<ir::Fusion> scheduled = t.fusion.fusion->clone();
    try {
      scheduler::applyScheduler(scheduler::schedulerFor(k.scheduler), *scheduled, *k.params);
      (void)lower::lowerFusion(*scheduled, DumpOptions{},
                               {.peelVectorRows = k.params->peelVectorRows()});
      return true;
    } catch (const Error& e) {
      *why = std::string(scheduler::schedulerTypeName(k.scheduler)) + " schedule does not lower: " +
             e.what();
      if (DumpOptions::fromEnvironment().has(DumpOption::Segments)) {
        dumpSink() << "segmenter: a schedule that does not lower, split further: " << *why << "\n"
                   << ir::printFusion(*t.fusion.fusion) << "as scheduled:\n"
                   << ir::printFusion(*scheduled);
      }
      return false;
    }
  }

  void addSegment(SegmentedFusion& result, const std::vector<ir::Expr*>& exprs, Trial t) {
    Segment s;
    s.id = result.size();
    s.exprs = sorted(exprs);
    s.fusion = std::move(t.fusion);
    s.work = std::move(t.work);
    result.segments().push_back(std::move(s));
  }

  // Groups that read a tensor group g produces, and the communication that runs after g when
  // g is one (SegmenterOptions::communicationOrder).
  std::set<int64_t> consumers(int64_t g) const {
    std::set<int64_t> out;
    for (ir::Expr* e : groups_[size_t(g)]) {
      for (ir::Val* o : e->outputs()) {
        for (ir::Expr* use : o->uses()) {
          auto it = group_of_.find(use);
          if (it != group_of_.end() && it->second != g) out.insert(it->second);
        }
      }
    }
    if (isCommunication(g)) {
      auto at = std::find(comm_chain_.begin(), comm_chain_.end(), groups_[size_t(g)].front());
      if (at != comm_chain_.end() && at + 1 != comm_chain_.end()) {
        auto it = group_of_.find(*(at + 1));
        if (it != group_of_.end()) out.insert(it->second);
      }
    }
    return out;
  }

  // True when `to` is reachable from `from` through some group other than a direct edge: then
  // merging the two would put the groups in between on a cycle.
  bool indirectPath(int64_t from, int64_t to) const {
    std::vector<int64_t> stack;
    std::unordered_set<int64_t> seen;
    for (int64_t c : consumers(from)) {
      if (c != to) stack.push_back(c);
    }
    while (!stack.empty()) {
      int64_t g = stack.back();
      stack.pop_back();
      if (g == to) return true;
      if (!seen.insert(g).second) continue;
      for (int64_t c : consumers(g)) stack.push_back(c);
    }
    return false;
  }

  std::vector<int64_t> topologicalGroups() const {
    std::map<int64_t, int64_t> indegree;
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (!groups_[g].empty()) indegree[int64_t(g)] += 0;
    }
    for (const auto& [g, _] : indegree) {
      for (int64_t c : consumers(g)) ++indegree[c];
    }
    // Ready groups by the position of their first expr, so the order is deterministic.
    auto first = [&](int64_t g) { return position_.at(groups_[size_t(g)].front()); };
    std::set<std::pair<size_t, int64_t>> ready;
    for (const auto& [g, d] : indegree) {
      if (d == 0) ready.insert({first(g), g});
    }
    std::vector<int64_t> order;
    while (!ready.empty()) {
      int64_t g = ready.begin()->second;
      ready.erase(ready.begin());
      order.push_back(g);
      for (int64_t c : consumers(g)) {
        if (--indegree[c] == 0) ready.insert({first(c), c});
      }
    }
    LOOM_ASSERT(order.size() == indegree.size(), "the segment graph has a cycle");
    return order;
  }

  bool mergeOnce() {
    for (int64_t g : topologicalGroups()) {
      for (int64_t c : consumers(g)) {
        if (ownSegment(g) || ownSegment(c)) continue;
        std::vector<ir::Expr*> joined = groups_[size_t(g)];
        joined.insert(joined.end(), groups_[size_t(c)].begin(), groups_[size_t(c)].end());
        joined = sorted(joined);
        if (rejected_.count(joined) != 0 || indirectPath(g, c)) continue;
        std::string why;
        if (!tryExprs(joined, &why)) {
          rejected_.insert(joined);
          continue;
        }
        for (ir::Expr* e : groups_[size_t(c)]) group_of_[e] = g;
        groups_[size_t(g)] = joined;
        groups_[size_t(c)].clear();
        return true;
      }
    }
    // Then groups that read a common tensor without one feeding the other (exp(x) and x + 1):
    // one kernel loads the shared input once.
    std::vector<int64_t> order = topologicalGroups();
    for (size_t i = 0; i < order.size(); ++i) {
      for (size_t j = i + 1; j < order.size(); ++j) {
        int64_t a = order[i], b = order[j];
        if (ownSegment(a) || ownSegment(b)) continue;
        if (!readCommonTensor(a, b) || reaches(a, b) || reaches(b, a)) continue;
        std::vector<ir::Expr*> joined = groups_[size_t(a)];
        joined.insert(joined.end(), groups_[size_t(b)].begin(), groups_[size_t(b)].end());
        joined = sorted(joined);
        if (rejected_.count(joined) != 0) continue;
        std::string why;
        if (!tryExprs(joined, &why)) {
          rejected_.insert(joined);
          continue;
        }
        for (ir::Expr* e : groups_[size_t(b)]) group_of_[e] = a;
        groups_[size_t(a)] = joined;
        groups_[size_t(b)].clear();
        return true;
      }
    }
    return false;
  }

  // True when group g is a communication (always a group of its one expr).
  bool isCommunication(int64_t g) const {
    const std::vector<ir::Expr*>& exprs = groups_[size_t(g)];
    return exprs.size() == 1 && communications_.count(exprs.front()) != 0;
  }

  // True when group g is a library call: a matmul, a linear or an attention (a group of its one
  // expr, and of a matmul's epilogue exprs after it).
  bool isMatmul(int64_t g) const {
    const std::vector<ir::Expr*>& exprs = groups_[size_t(g)];
    return !exprs.empty() && matmuls_.count(exprs.front()) != 0;
  }

  // Groups that never merge: a communication or a library call is a segment of its own.
  bool ownSegment(int64_t g) const { return isCommunication(g) || isMatmul(g); }

  // True when some tensor group a reads (and does not produce) is read by group b too.
  bool readCommonTensor(int64_t a, int64_t b) const {
    std::unordered_set<const ir::Val*> read_by_a;
    for (ir::Expr* e : groups_[size_t(a)]) {
      for (ir::Val* in : e->inputs()) {
        if (in->isA<ir::TensorView>()) read_by_a.insert(in);
      }
    }
    for (ir::Expr* e : groups_[size_t(b)]) {
      for (ir::Val* in : e->inputs()) {
        if (read_by_a.count(in) == 0) continue;
        ir::Expr* def = in->definition();
        auto owner = def == nullptr ? group_of_.end() : group_of_.find(def);
        if (owner == group_of_.end() || (owner->second != a && owner->second != b)) return true;
      }
    }
    return false;
  }

  // True when group `to` depends on group `from` (through any groups).
  bool reaches(int64_t from, int64_t to) const {
    std::vector<int64_t> stack{from};
    std::unordered_set<int64_t> seen;
    while (!stack.empty()) {
      int64_t g = stack.back();
      stack.pop_back();
      for (int64_t c : consumers(g)) {
        if (c == to) return true;
        if (seen.insert(c).second) stack.push_back(c);
      }
    }
    return false;
  }

  const ir::Fusion& fusion_;
  std::span<const eval::Argument> args_;
  SegmenterOptions options_;
  scheduler::SchedulerRuntimeInfo info_;
  std::vector<ir::Expr*> live_;
  std::unordered_map<const ir::Expr*, size_t> position_;
  std::vector<std::vector<ir::Expr*>> groups_;  // emptied when merged away
  std::unordered_map<const ir::Expr*, int64_t> group_of_;
  std::set<std::vector<ir::Expr*>> rejected_;
  bool verify_merges_ = false;  ///< set once a merged group's schedule failed to lower
  std::unordered_map<const ir::Expr*, multidevice::Communication> communications_;
  std::vector<const ir::Expr*> comm_chain_;  ///< communications in SegmenterOptions' order
  /// matmul, linear and attention exprs: their MatmulWork or AttentionWork
  std::unordered_map<const ir::Expr*, SegmentWork> matmuls_;
  /// per matmul with an epilogue: the exprs its GEMM applies, producers first
  std::unordered_map<const ir::Expr*, std::vector<ir::Expr*>> epilogues_;
  std::unordered_set<const ir::Expr*> absorbed_;  ///< every expr of epilogues_
};

}  // namespace

SegmentedFusion segmentFusion(const ir::Fusion& fusion, std::span<const eval::Argument> args,
                              const SegmenterOptions& options) {
  // The pre-segmentation passes rewrite a copy; when none changed it, the caller's fusion is
  // segmented (its exprs are the segments' own, which runtime reuse compares by identity).
  std::shared_ptr<ir::Fusion> copy = fusion.clone();
  PresegmentContext ctx;
  ctx.args = args;
  ctx.device = options.device;
  ctx.translateWelford = options.translateWelford;
  ctx.deviceId = options.deviceId;
  const bool rewritten = runPresegmentPasses(*copy, ctx);
  SegmentedFusion result =
      Segmenter(rewritten ? *copy : fusion, args, options, std::move(ctx.communications)).run();
  if (rewritten) result.adoptRewritten(copy, &fusion);
  if (!ctx.welfordNote.empty()) result.setWelfordNote(ctx.welfordNote);
  result.setInPlaceWrites(planInPlaceWrites(result));
  if (DumpOptions::fromEnvironment().has(DumpOption::Segments)) dumpSink() << result.toString();
  return result;
}

}  // namespace loom::segmenter
