// SPDX-License-Identifier: Apache-2.0
// PassList: one named, ordered list of passes over a unit of IR (a kir::Kernel, an ir::Fusion)
// with one run loop: each pass's enabled flag, a dump and a verification after it, and
// runUntil(name). The lowering pipeline (lower/pipeline.cpp) and the pre-segmentation passes
// (segmenter/presegment.cpp) are PassLists; no pass calls another pass.
//
//   const PassList<kir::Kernel, LowerContext>& list = lower::pipeline();
//   list.run(kernel, ctx, hooks);               // every enabled pass
//   list.runUntil(kernel, ctx, "indexing", hooks);  // up to and including `indexing`
//
// A pass marked optional may be switched off by name (LOOM_DISABLE=name,...: PassHooks::
// disabled); the others are what correctness needs, and naming one is a UserError.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom {

/// One pass: its name (unique in its list), what it does to the unit, and whether it may be
/// switched off. `run` returns whether it changed anything.
template <typename Unit, typename Context>
struct PassOf {
  std::string_view name;
  bool (*run)(Unit& unit, Context& ctx);
  bool optional = false;
};

/// What a run does around each pass (all optional).
template <typename Unit>
struct PassHooks {
  /// After a pass that changed the unit: print it, when this says so for the pass's name.
  std::function<void(const Unit&, std::string_view pass)> dumpAfter;
  /// After every pass that ran: check the unit (throws on a broken one).
  std::function<void(const Unit&, std::string_view pass)> verifyAfter;
  /// Names of optional passes not to run.
  std::unordered_set<std::string> disabled;
};

/// What a run did: the passes that ran, in order, and which changed the unit.
struct PassReport {
  std::vector<std::string_view> ran;
  std::vector<std::string_view> changed;

  int64_t runsOf(std::string_view name) const {
    int64_t n = 0;
    for (std::string_view p : ran) n += p == name ? 1 : 0;
    return n;
  }
};

template <typename Unit, typename Context>
class PassList {
 public:
  using Pass = PassOf<Unit, Context>;

  /// `what` names the list in messages ("lowering", "pre-segmentation").
  PassList(std::string what, std::vector<Pass> passes)
      : what_(std::move(what)), passes_(std::move(passes)) {}

  const std::vector<Pass>& passes() const { return passes_; }
  const std::string& what() const { return what_; }
  auto begin() const { return passes_.begin(); }
  auto end() const { return passes_.end(); }

  /// The pass named `name`, or nullptr.
  const Pass* find(std::string_view name) const {
    for (const Pass& p : passes_) {
      if (p.name == name) return &p;
    }
    return nullptr;
  }

  /// The names of the passes that may be switched off.
  std::vector<std::string> optionalNames() const {
    std::vector<std::string> names;
    for (const Pass& p : passes_) {
      if (p.optional) names.emplace_back(p.name);
    }
    return names;
  }

  /// Runs every enabled pass in order.
  PassReport run(Unit& unit, Context& ctx, const PassHooks<Unit>& hooks = {}) const {
    return runUntil(unit, ctx, "", hooks);
  }

  /// Runs the enabled passes in order up to and including `last` ("" for all); UserError when
  /// no pass has that name.
  PassReport runUntil(Unit& unit, Context& ctx, std::string_view last,
                      const PassHooks<Unit>& hooks = {}) const {
    LOOM_CHECK(last.empty() || find(last) != nullptr, "no ", what_, " pass named '", last,
               "' (the passes: ", join(names()), ")");
    checkDisabled(hooks.disabled);
    PassReport report;
    for (const Pass& pass : passes_) {
      if (!hooks.disabled.empty() && hooks.disabled.count(std::string(pass.name)) != 0) {
        if (pass.name == last) break;
        continue;
      }
      const bool changed = pass.run(unit, ctx);
      report.ran.push_back(pass.name);
      if (changed) {
        report.changed.push_back(pass.name);
        if (hooks.dumpAfter) hooks.dumpAfter(unit, pass.name);
      }
      if (hooks.verifyAfter) hooks.verifyAfter(unit, pass.name);
      if (pass.name == last) break;
    }
    return report;
  }

  /// UserError unless every name is an optional pass of this list.
  void checkDisabled(const std::unordered_set<std::string>& disabled) const {
    for (const std::string& name : disabled) {
      const Pass* p = find(name);
      if (p != nullptr && p->optional) continue;
      LOOM_CHECK(p == nullptr, "the ", what_, " pass '", name,
                 "' cannot be disabled: the kernel would be wrong without it (optional ",
                 what_, " passes: ", join(optionalNames()), ")");
    }
  }

  std::vector<std::string_view> names() const {
    std::vector<std::string_view> out;
    for (const Pass& p : passes_) out.push_back(p.name);
    return out;
  }

 private:
  std::string what_;
  std::vector<Pass> passes_;
};

}  // namespace loom
