// SPDX-License-Identifier: Apache-2.0
// The ranks' agreement on the first run of a signature of a sharded fusion (rank_agreement.h).
#include "runtime/rank_agreement.h"

#include <algorithm>
#include <map>

#include "loom/ir/extent_bindings.h"
#include "loom/ir/printer.h"
#include "loom/ir/tensor_view.h"
#include "loom/multidevice/communication.h"
#include "loom/multidevice/sharding.h"
#include "loom/support/error.h"
#include "loom/support/hash.h"
#include "loom/support/strings.h"

namespace loom::runtime::detail {
namespace {

using ::loom::detail::concat;

constexpr const char* kNotHeld = "-";

// The ranks grouped by the value they hold, largest group first (ties: the group of the lowest
// rank): the first group is the reference, the others differ from it. Ranks whose value is
// `skip` are left out.
std::vector<std::vector<int64_t>> groups(const std::vector<std::string>& values,
                                         const std::string& skip = "\x01") {
  std::map<std::string, std::vector<int64_t>> by;
  for (size_t r = 0; r < values.size(); ++r) {
    if (values[r] != skip) by[values[r]].push_back(int64_t(r));
  }
  std::vector<std::vector<int64_t>> out;
  for (auto& [value, ranks] : by) out.push_back(std::move(ranks));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.size() != b.size() ? a.size() > b.size() : a.front() < b.front();
  });
  return out;
}

std::string ranksText(const std::vector<int64_t>& ranks) {
  return ranks.size() == 1 ? concat("rank ", ranks.front()) : concat("ranks ", join(ranks));
}

const char* pass(const std::vector<int64_t>& ranks) {
  return ranks.size() == 1 ? " passes " : " pass ";
}

std::string clip(const std::string& line) {
  return line.size() <= 160 ? line : line.substr(0, 157) + "...";
}

// Where two texts first differ: "line 7: rank 0 has '...', rank 1 has '...'".
std::string firstDifference(const std::string& a, int64_t rankA, const std::string& b,
                            int64_t rankB) {
  const std::vector<std::string> la = split(a, '\n');
  const std::vector<std::string> lb = split(b, '\n');
  for (size_t i = 0; i < std::max(la.size(), lb.size()); ++i) {
    const std::string x = i < la.size() ? la[i] : "(the end)";
    const std::string y = i < lb.size() ? lb[i] : "(the end)";
    if (x != y) {
      return concat("line ", i + 1, ": rank ", rankA, " has '", clip(x), "', rank ", rankB,
                    " has '", clip(y), "'");
    }
  }
  return "they differ";
}

// One field per line: fusion hash, plan hash, then each input's description.
std::string encode(uint64_t fusion, uint64_t plan, const std::vector<std::string>& inputs) {
  return concat(fusion, "\n", plan, "\n", join(inputs, "\n"));
}

// The sizes in a description "f32 [4, 8]" (empty for a scalar or an input not held).
std::vector<int64_t> sizesOf(const std::string& desc) {
  const size_t open = desc.find('[');
  const size_t close = desc.rfind(']');
  std::vector<int64_t> sizes;
  if (open == std::string::npos || close == std::string::npos || close <= open + 1) return sizes;
  for (const std::string& s : split(desc.substr(open + 1, close - open - 1), ',')) {
    sizes.push_back(std::strtoll(s.c_str(), nullptr, 10));
  }
  return sizes;
}

// True when `whole` is `shard` with each dim times its shard count, some count above 1.
bool wholeOf(const std::vector<int64_t>& whole, const std::vector<int64_t>& shard,
             const std::vector<int64_t>& counts) {
  if (whole.size() != shard.size() || whole.size() != counts.size()) return false;
  bool sharded = false;
  for (size_t d = 0; d < whole.size(); ++d) {
    if (whole[d] != shard[d] * counts[d]) return false;
    sharded = sharded || counts[d] > 1;
  }
  return sharded;
}

}  // namespace

RankAgreement::RankAgreement(const ir::Fusion& fusion, const ir::Fusion& sharded,
                             int64_t worldSize) {
  fusion_text_ = ir::printFusion(fusion);
  fusion_hash_ = Hasher().str(fusion_text_).digest();
  for (const ir::Expr* e : sharded.exprs()) {
    if (auto c = multidevice::communicationOf(e)) plan_text_ += c->toString() + "\n";
  }
  plan_hash_ = Hasher().str(plan_text_).digest();
  // An input every rank holds changes size on every rank at once; one that some ranks hold (a
  // pipeline stage's) may change on those alone, so it does not make a new signature.
  bool pipelined = false;
  for (const ir::TensorView* tv : sharded.allTvs()) {
    for (int64_t r = 0; r < worldSize; ++r) pipelined = pipelined || !multidevice::holds(tv, r);
  }
  for (size_t i = 0; i < fusion.inputs().size(); ++i) {
    input_names_.push_back(concat("input ", i, " (", fusion.inputs()[i]->toString(), ")"));
    const auto* tv = sharded.inputs()[i]->dynCast<ir::TensorView>();
    shard_counts_.push_back(tv != nullptr ? ir::shardCounts(tv) : std::vector<int64_t>{});
    bool everyRank = !pipelined;
    if (tv != nullptr) {
      everyRank = true;
      for (int64_t r = 0; r < worldSize; ++r) everyRank = everyRank && multidevice::holds(tv, r);
    }
    every_rank_holds_.push_back(everyRank);
  }
}

std::vector<std::string> RankAgreement::describeInputs(std::span<const eval::Argument> args,
                                                       std::span<const int64_t> whole,
                                                       bool scalarValues) const {
  std::vector<std::string> out(input_names_.size(), kNotHeld);
  for (size_t j = 0; j < args.size(); ++j) {
    const int64_t i = whole.empty() ? int64_t(j) : whole[j];
    if (i < 0 || size_t(i) >= out.size()) continue;  // a stand-in: not the caller's
    std::string& d = out[size_t(i)];
    if (const Tensor* t = std::get_if<Tensor>(&args[j])) {
      d = t->defined() ? concat(dataTypeName(t->dtype()), " [", join(t->sizes()), "]")
                       : "an undefined tensor";
    } else if (scalarValues) {
      d = eval::describeArgument(args[j]);
    } else {
      d = std::holds_alternative<double>(args[j])    ? "a double"
          : std::holds_alternative<int64_t>(args[j]) ? "an int64"
                                                     : "a bool";
    }
  }
  return out;
}

void RankAgreement::check(multidevice::Communicator& comm, std::span<const eval::Argument> args,
                          std::span<const int64_t> whole, bool scalarValues) {
  // Without MPI every rank runs its local program alone (nothing it could compare over).
  if (comm.size() <= 1 || !multidevice::Communicator::hasMpi()) return;
  const std::vector<std::string> inputs = describeInputs(args, whole, scalarValues);
  Hasher signature;
  signature.value(fusion_hash_).value(plan_hash_);
  Hasher full = signature;
  for (size_t i = 0; i < inputs.size(); ++i) {
    full.str(inputs[i]);
    if (every_rank_holds_[i]) signature.str(inputs[i]);
  }
  if (agreed_.count(signature.digest()) != 0) return;
  const std::vector<int64_t> digests = comm.allgatherForCheck(int64_t(full.digest()));
  const bool same =
      std::all_of(digests.begin(), digests.end(), [&](int64_t d) { return d == digests.front(); });
  if (!same) {
    const std::string why = compare(comm, inputs);
    LOOM_CHECK(why.empty(),
               "the ranks disagree on the first run of this sharded fusion (every "
               "rank runs the same fusion, sharded alike, on its shards of the same inputs): ",
               why);
  }
  agreed_.insert(signature.digest());
}

std::string RankAgreement::compare(multidevice::Communicator& comm,
                                   const std::vector<std::string>& inputs) const {
  // Every rank sees the same descriptions, so every rank takes the same branches below (and
  // the same collectives) and writes the same message.
  const std::vector<std::string> all =
      comm.allgatherBytesForCheck(encode(fusion_hash_, plan_hash_, inputs));
  std::vector<std::vector<std::string>> fields;
  for (const std::string& a : all) fields.push_back(split(a, '\n'));
  auto column = [&](size_t k) {
    std::vector<std::string> out;
    for (const auto& f : fields) out.push_back(k < f.size() ? f[k] : kNotHeld);
    return out;
  };
  for (size_t part : {size_t(0), size_t(1)}) {
    const std::vector<std::vector<int64_t>> g = groups(column(part));
    if (g.size() <= 1) continue;
    const std::vector<std::string> texts =
        comm.allgatherBytesForCheck(part == 0 ? fusion_text_ : plan_text_);
    const char* what = part == 0 ? "fusion" : "communication plan";
    const int64_t ref = g.front().front();
    std::vector<std::string> lines;
    for (size_t k = 1; k < g.size(); ++k) {
      const int64_t other = g[k].front();
      lines.push_back(
          concat(ranksText(g[k]), "'s ", what, " differs from ", ranksText(g[0]), "'s, first at ",
                 firstDifference(texts[size_t(ref)], ref, texts[size_t(other)], other)));
    }
    return join(lines, "; ");
  }
  std::vector<std::string> lines;
  for (size_t i = 0; i < input_names_.size(); ++i) {
    const std::vector<std::vector<int64_t>> g = groups(column(2 + i), kNotHeld);
    for (size_t k = 1; k < g.size(); ++k) {
      const std::string mine = fields[size_t(g[k].front())][2 + i];
      const std::string ref = fields[size_t(g[0].front())][2 + i];
      std::string hint;
      if (wholeOf(sizesOf(mine), sizesOf(ref), shard_counts_[i])) {
        hint = concat(" (", ranksText(g[k]), " may pass the whole tensor where its shard is due)");
      } else if (wholeOf(sizesOf(ref), sizesOf(mine), shard_counts_[i])) {
        hint = concat(" (", ranksText(g[0]), " may pass the whole tensor where its shard is due)");
      }
      lines.push_back(concat(input_names_[i], ": ", ranksText(g[k]), pass(g[k]), mine, " where ",
                             ranksText(g[0]), pass(g[0]), ref, hint));
    }
  }
  return join(lines, "; ");
}

}  // namespace loom::runtime::detail
