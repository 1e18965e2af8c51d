// SPDX-License-Identifier: Apache-2.0
// Lowering a manually scheduled ir::Fusion to Kernel IR: the LowerContext every pass takes, the
// catalogue of passes, and the pipeline entry point.
//
//   auto kernel = lower::lowerFusion(fusion);            // runs the pipeline of pipeline.cpp
//   std::cout << kir::toString(*kernel);
//
// Passes never read global state: each is `bool pass(kir::Kernel&, LowerContext&)` and returns
// whether it changed the kernel. Analyses computed by one pass for later ones (the expr order,
// the loop groups, the buffers of tensors) are fields of the LowerContext. See docs/lowering.md.
#pragma once

#include <memory>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/ir/fusion.h"
#include "loom/lower/kernel_ir.h"
#include "loom/support/options.h"
#include "loom/support/pass_list.h"
#include "loom/transform/loop_graph.h"

namespace loom::lower {

/// What the caller asks of lowering beyond the scheduled fusion (the scheduler's parameters
/// decide it: HeuristicParams::peelVectorRows).
struct LowerOptions {
  /// Peeled vector rows (docs/lowering.md): the vector accesses along the kernel's row (the ID a
  /// fusion input's Vectorize copy is split from) may start at any address. Each row is rotated
  /// by the misalignment s of its start in the widest-ranked such input (the anchor): slot q of
  /// the row's loops holds element (q - s) mod row, so the slots of one vector are one aligned
  /// vector of the anchor; a vector copy takes the vector access only where its elements are
  /// adjacent and its address is aligned, and element by element (the head and the tail)
  /// elsewhere. Correct for any address, width and stride; without it a vectorized row needs the
  /// aligned layout the executor checks.
  bool peelVectorRows = false;
};

/// The row of a kernel lowered with LowerOptions::peelVectorRows (pass peel_rows).
struct PeeledRow {
  const ir::TensorView* anchor = nullptr;  ///< the fusion input whose rows set the rotation
  const ir::TensorView* reader = nullptr;  ///< its vectorized copy (its loops index the rows)
  ir::IterDomain* rowId = nullptr;         ///< reader's logical ID its vector ID is split from
  int64_t width = 0;                       ///< reader's vector width
  /// The tensors whose Vectorize copy lies along the row: their copies are peeled.
  std::unordered_set<const ir::TensorView*> vectorTvs;
  bool active() const { return anchor != nullptr; }
};

/// Analyses shared by the passes of one lowering. The fusion must outlive the kernel.
class LowerContext {
 public:
  explicit LowerContext(const ir::Fusion& fusion, LowerOptions options = {})
      : fusion(fusion), options(options) {}

  const ir::Fusion& fusion;
  const LowerOptions options;
  /// peel_rows: the peeled row (inactive unless options.peelVectorRows found one).
  PeeledRow peel;
  /// expr_sort: tensor math exprs, producers first.
  std::vector<const ir::Expr*> exprs;
  /// kernel_params / allocations: the buffer of each tensor.
  std::unordered_map<const ir::TensorView*, kir::Buffer*> buffers;
  /// reductions: what the consumers of a grid reduction's outputs need to know. Only the block
  /// that finished the reduction holds its result (`last` is true there), and inside serial loops
  /// that holds per iteration; thread_predicates guards the consumers by `last` and checks them.
  struct GridResult {
    kir::Var* last = nullptr;
    std::vector<ir::ParallelType> dims;           ///< the reduced block dims (BIDx/BIDy/BIDz)
    std::vector<const kir::ForLoop*> serialLoops;  ///< serial loops around the call site
  };
  /// The GridResult of each output of a grid reduction.
  std::unordered_map<const ir::TensorView*, GridResult> gridResults;
  /// Outputs of grid all-reduces (a grid broadcast, GridReduce::all): every block holds the
  /// result; the reduced block dims, whose block 0 alone writes it to global memory.
  std::unordered_map<const ir::TensorView*, std::vector<ir::ParallelType>> gridAllReduced;

  /// loop_nests: which loop IDs are one loop, their promoted IDs and nesting (built by
  /// buildLoopGraph from the scheduled fusion; see transform/loop_graph.h).
  void buildLoopGraph() { loop_graph_ = std::make_unique<transform::LoopGraph>(fusion); }
  const transform::LoopGraph& loopGraph() const;
  /// The loop group of a loop ID.
  int64_t loopGroup(const ir::IterDomain* id) const { return loopGraph().group(id); }
  /// The ID the loop of `id`'s group runs over (its promoted ID).
  ir::IterDomain* loopRepresentative(const ir::IterDomain* id) const {
    return loopGraph().promoted(id);
  }
  /// The parallel type of the group: the non-Serial type of its members, else Serial.
  ir::ParallelType loopParallelType(const ir::IterDomain* id) const {
    return loopGraph().parallelType(loopGroup(id));
  }
  /// loop_nests: the loop each tensor is computed and allocated in (nullptr: the kernel body).
  std::unordered_map<const ir::TensorView*, kir::ForLoop*> scopes;
  /// True when `scope` is the one `tv` is allocated in.
  bool isScopeOf(const ir::TensorView* tv, const kir::ForLoop* scope) const;

  /// The kir value of an ir scalar (constant, extent of an input tensor, scalar math over those).
  /// UserError when the scalar cannot be computed inside the kernel, or when its math nests more
  /// than kMaxScalarDepth ops (the kernel computes it as one C++ expression).
  kir::Value* lowerScalar(kir::Kernel& kernel, const ir::Val* v);
  static constexpr int64_t kMaxScalarDepth = 256;

 private:
  std::unique_ptr<transform::LoopGraph> loop_graph_;
  std::unordered_map<const ir::Val*, kir::Value*> scalars_;
  std::unordered_map<const kir::Value*, int64_t> scalar_depths_;  // of the scalar math lowered
};

/// One lowering pass, and the pipeline's list type (support/pass_list.h).
using Pass = PassOf<kir::Kernel, LowerContext>;
using Pipeline = PassList<kir::Kernel, LowerContext>;

// ---- The passes, in pipeline order (one file each under csrc/lower/) ----------------------------

/// Orders the fusion's tensor math exprs topologically (Fusion::exprs) into ctx.exprs.
bool exprSort(kir::Kernel& kernel, LowerContext& ctx);
/// One Param buffer per fusion input, output and Global intermediate, in that order.
bool kernelParams(kir::Kernel& kernel, LowerContext& ctx);
/// Builds ForLoops from each output's loop domain, sharing the outer compute-at loops of
/// producers with their consumers, with one TensorOp per expr; records the launch dims.
bool loopNests(kir::Kernel& kernel, LowerContext& ctx);
/// Checks each intermediate's memory type against the parallel types that write and read it
/// (registers read by their thread, shared memory by its block, global memory written in the
/// kernel by the block that wrote it); changes nothing.
bool memoryReads(kir::Kernel& kernel, LowerContext& ctx);
/// Local buffers for intermediates, allocated inside their compute-at loop, sized by the loop IDs
/// right of it (reductions, broadcasts and thread/block IDs excluded).
bool allocations(kir::Kernel& kernel, LowerContext& ctx);
/// Reductions: an accumulator declared before the outermost reduction loop, accumulation inside,
/// a BlockReduce over the thread-parallel reduction IDs and the result write after the loops.
bool reductions(kir::Kernel& kernel, LowerContext& ctx);
/// Scans: an accumulator declared before the scan loop (the serial, innermost loop of the scan
/// ID), accumulation and a result write of the prefix in each iteration.
bool scans(kir::Kernel& kernel, LowerContext& ctx);
/// Sorts: an ArgsortOp's or TopKOp's TensorOp replaces the loop of its sort dim (serial,
/// innermost, holding the op alone), so that indexing makes it one SortRow per row.
bool sorts(kir::Kernel& kernel, LowerContext& ctx);
/// Guards global writes of tensors not parallelized on a launched thread/block type P by
/// P's index == 0, and ops under parallel loops narrower than the launch by index < extent.
bool threadPredicates(kir::Kernel& kernel, LowerContext& ctx);
/// Guards each TensorOp by its logical indices being in range (non-divisible splits) and result
/// writes of block reductions to global memory by the reduced thread indices being 0.
bool predicates(kir::Kernel& kernel, LowerContext& ctx);
/// Drops predicate conjuncts that index bounds prove always true (exact splits, thread indices
/// of constant launches); an if whose whole condition holds becomes its then-body.
bool eliminatePredicates(kir::Kernel& kernel, LowerContext& ctx);
/// Unswitch loops: one hoisted check of the inner predicates (at their loops' last iterations)
/// around a copy without inner predicates, the predicated loop as the else branch.
bool unswitch(kir::Kernel& kernel, LowerContext& ctx);
/// With LowerOptions::peelVectorRows: finds the row to peel (ctx.peel: the anchor input, its
/// row ID and the tensors with vector copies along it); changes nothing.
bool peelRows(kir::Kernel& kernel, LowerContext& ctx);
/// Replaces TensorOps by Stores and Loads indexed from loop indices through the Split/Merge
/// exprs: parameters by logical index times runtime stride (none for a contiguous innermost dim,
/// one for a run of contiguous dims merged in the loop domain), local buffers densely. In a
/// peeled row, parameters are indexed at the rotated row index.
bool indexing(kir::Kernel& kernel, LowerContext& ctx);
/// Vectorize loops of one global<->local copy become a VectorCopy under the predicate of the
/// vector's last element (all-or-nothing); other Vectorize loops stay unrolled serial loops. In a
/// peeled row: the VectorCopy where the vector is whole, adjacent and aligned, else the loop.
bool vectorize(kir::Kernel& kernel, LowerContext& ctx);
/// Inserts a BlockSync before a statement that reads a shared buffer written since the last sync.
bool syncs(kir::Kernel& kernel, LowerContext& ctx);
/// Folds constants and removes x * 1, x + 0, x / 1, true && x in every value.
bool simplify(kir::Kernel& kernel, LowerContext& ctx);
/// Names index math that is loop-invariant or repeated: const index variables declared in the
/// outermost scope defining their loop indices (never moving a possible division by zero to
/// where it would not have been evaluated), each distinct expression once per scope.
bool hoistIndices(kir::Kernel& kernel, LowerContext& ctx);

/// The pipeline, in order (defined in pipeline.cpp). The optional passes (eliminate_predicates,
/// unswitch, simplify, hoist_indices) may be switched off with LOOM_DISABLE.
const Pipeline& pipeline();

/// Lowers `fusion` (scheduled; every tensor math expr must be supported). `dump` controls
/// LOOM_DUMP=kernel_ir printing (to the dump sink) after passes that changed the kernel;
/// LOOM_DEBUG=verify_kernel_ir verifies the kernel after every pass; LOOM_DISABLE skips the
/// optional passes it names.
std::unique_ptr<kir::Kernel> lowerFusion(const ir::Fusion& fusion,
                                         const DumpOptions& dump = DumpOptions::fromEnvironment(),
                                         LowerOptions options = {});

/// Runs the pipeline up to and including the pass named `last` (for pass tests).
std::unique_ptr<kir::Kernel> lowerFusionUntil(const ir::Fusion& fusion, std::string_view last,
                                              LowerOptions options = {});

}  // namespace loom::lower
