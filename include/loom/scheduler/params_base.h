// SPDX-License-Identifier: Apache-2.0
// ParamsOf: a HeuristicParams whose fields are declared once, in a table, from which toString,
// hash, sameAs, clone and setField are derived.
//
//   struct PointwiseParams final : ParamsOf<PointwiseParams> {
//     int64_t vectorize = 1;
//     static constexpr std::string_view kName = "Pointwise";
//     static constexpr auto fields() {
//       return std::tuple{field("vectorize", &PointwiseParams::vectorize), ...};
//     }
//   };
//
// A Schedule field is part of the schedule's identity (hash, sameAs), printed as name=value and
// settable by name (RuntimeOptions::paramOverrides, `loom_bench --params`; booleans take 0 or 1).
// A Summary field is identity too but printed by the class's summary() word ("1-D", "outer")
// and not settable. An Info field (sizes the heuristic saw) is printed on a second line only.
#pragma once

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "loom/scheduler/heuristic.h"
#include "loom/support/hash.h"

namespace loom::scheduler {

enum class FieldRole : uint8_t { Schedule, Summary, Info };

/// One field: its name, the member it is (int64_t or bool) and its role.
template <typename P, typename T>
struct ParamField {
  std::string_view name;
  T P::*member;
  FieldRole role = FieldRole::Schedule;
};

template <typename P, typename T>
constexpr ParamField<P, T> field(std::string_view name, T P::*member,
                                 FieldRole role = FieldRole::Schedule) {
  return {name, member, role};
}

template <typename Derived>
class ParamsOf : public HeuristicParams {
 public:
  explicit ParamsOf(SchedulerType type) : HeuristicParams(type) {}

  /// "Name: [summary ]a=1 b=0\n", then "  info=2 ...\n" when there are Info fields.
  std::string toString() const override {
    std::ostringstream os, info;
    os << Derived::kName << ":";
    if (std::string word = self().summary(); !word.empty()) os << " " << word;
    forEach([&](const auto& f) {
      if (f.role == FieldRole::Schedule) os << " " << f.name << "=" << int64_t(self().*f.member);
      if (f.role == FieldRole::Info) info << " " << f.name << "=" << int64_t(self().*f.member);
    });
    os << "\n";
    if (!info.str().empty()) os << " " << info.str() << "\n";
    return os.str();
  }

  size_t hash() const override {
    Hasher h;
    h.value(type());
    forEach([&](const auto& f) {
      if (f.role != FieldRole::Info) h.value(int64_t(self().*f.member));
    });
    return size_t(h.digest());
  }

  bool sameAs(const HeuristicParams& other) const override {
    const auto* o = dynamic_cast<const Derived*>(&other);
    if (o == nullptr) return false;
    bool same = true;
    forEach([&](const auto& f) {
      if (f.role != FieldRole::Info) same = same && self().*f.member == o->*f.member;
    });
    return same;
  }

  std::unique_ptr<HeuristicParams> clone() const override {
    return std::make_unique<Derived>(self());
  }

  bool setField(std::string_view name, int64_t value) override {
    bool found = false;
    forEach([&](const auto& f) {
      if (f.role != FieldRole::Schedule || f.name != name) return;
      using T = std::remove_reference_t<decltype(self().*f.member)>;
      static_cast<Derived&>(*this).*f.member = static_cast<T>(value);
      found = true;
    });
    return found;
  }

  std::vector<std::pair<std::string_view, int64_t>> scheduleFields() const override {
    std::vector<std::pair<std::string_view, int64_t>> out;
    forEach([&](const auto& f) {
      if (f.role == FieldRole::Schedule) out.emplace_back(f.name, int64_t(self().*f.member));
    });
    return out;
  }

  /// The word printed after the name (none by default).
  std::string summary() const { return ""; }

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
  template <typename F>
  static void forEach(F&& f) {
    std::apply([&](const auto&... fs) { (f(fs), ...); }, Derived::fields());
  }
};

}  // namespace loom::scheduler
