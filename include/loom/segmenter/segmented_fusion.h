// SPDX-License-Identifier: Apache-2.0
// SegmentedFusion: a fusion split into segments that one scheduler each takes, with standalone
// segment fusions, the value mapping to the original fusion and a run order.
//
// Every segment's fusion is an unscheduled copy of a connected set of the original's math exprs.
// Its inputs are the original fusion inputs it reads plus the intermediates other segments
// produce (fresh global tensors of the intermediate's logical shape, reductions removed); its
// outputs are the values it produces that the original outputs or a later segment reads. So
// intermediates between segments travel through global memory.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "loom/ir/fusion.h"
#include "loom/ir/matmul_activation.h"
#include "loom/multidevice/communication.h"
#include "loom/scheduler/heuristic.h"

namespace loom::segmenter {

/// A standalone copy of some exprs of an original fusion.
struct SegmentFusion {
  std::unique_ptr<ir::Fusion> fusion;
  /// Original Vals: segment fusion input i is the copy of inputs[i].
  std::vector<ir::Val*> inputs;
  /// Original Vals: segment fusion output i is the copy of outputs[i].
  std::vector<ir::Val*> outputs;
  /// Original Val -> its copy in `fusion` (inputs, outputs and every value in between).
  std::unordered_map<const ir::Val*, ir::Val*> toSegment;
};

/// Copies `exprs` (math exprs of `original`, any order) into a new fusion as described above.
/// `live` is the set of the original's math exprs that count as consumers (usually
/// original.exprs()): a value is a segment output when the original outputs it or a live expr
/// outside `exprs` reads it. Scalar math feeding the exprs is copied along.
SegmentFusion buildSegmentFusion(const ir::Fusion& original, const std::vector<ir::Expr*>& exprs,
                                 const std::vector<ir::Expr*>& live);

/// A segment that is one kernel: the scheduler the registry chose and its heuristic parameters
/// for the sizes the segmentation was made for.
struct KernelWork {
  scheduler::SchedulerType scheduler = scheduler::SchedulerType::Pointwise;
  std::unique_ptr<scheduler::HeuristicParams> params;

  KernelWork() = default;
  KernelWork(scheduler::SchedulerType type, std::unique_ptr<scheduler::HeuristicParams> p)
      : scheduler(type), params(std::move(p)) {}
  KernelWork(KernelWork&&) = default;
  KernelWork& operator=(KernelWork&&) = default;
  /// Deep copy of the parameters.
  KernelWork(const KernelWork& other);
  KernelWork& operator=(const KernelWork& other);
};

/// A segment that is one communication (its one expr moves data between devices) and no kernel:
/// the runtime runs it through the communicator.
struct CommunicationWork {
  multidevice::Communication communication;
};

/// A segment that is one matmul or linear (ir::MatmulOp, ir::LinearOp) and no generated kernel:
/// the runtime calls a GEMM library for it (cuBLASLt on a GPU, the blocked host GEMM on the host
/// backend: runtime/matmul_executor.h). Its fusion holds the expr and the pointwise exprs after
/// it that the GEMM's epilogue applies (segmenter/matmul_epilogue.h), and outputs the last;
/// its inputs are original inputs (any strides) or intermediates other segments produce (dense).
struct MatmulWork {
  std::string op;     ///< "matmul" or "linear"
  bool bias = false;  ///< a linear with a bias, added in the GEMM's epilogue
  /// Applied after the bias, in f32, before the rounding to the operands' dtype.
  ir::MatmulActivation activation = ir::MatmulActivation::None;
  bool operator==(const MatmulWork&) const = default;
  /// "matmul", "linear", "linear with bias in the epilogue", "linear with bias + gelu_tanh in
  /// the epilogue", "matmul with relu in the epilogue".
  std::string toString() const;
};

/// The matmul work of `e` when it is a MatmulOp or LinearOp (such an expr is a segment of its
/// own, and kernel schedulers refuse fusions that hold one), else nullopt.
std::optional<MatmulWork> matmulWorkOf(const ir::Expr* e);

/// A segment that is one attention node (ir::SdpaFwdOp, ir::SdpaBwdOp) and no generated kernel:
/// the runtime runs Loom's fused attention kernels where they take the operands, else the
/// node's composite as a fusion of its own (runtime/attention_executor.h).
struct AttentionWork {
  std::string op;  ///< "sdpfa_fwd" or "sdpfa_bwd"
  bool operator==(const AttentionWork&) const = default;
  std::string toString() const { return op; }
};

/// The attention work of `e` when it is an SdpaFwdOp or SdpaBwdOp (a segment of its own; kernel
/// schedulers refuse fusions that hold one), else nullopt.
std::optional<AttentionWork> attentionWorkOf(const ir::Expr* e);

/// What a segment does: one alternative per kind of work. A new kind (a library call, a host
/// program) is one more alternative here and one SegmentExecutor in the runtime
/// (runtime/segment_executor.h); docs/design.md lists the places it touches.
using SegmentWork = std::variant<KernelWork, CommunicationWork, MatmulWork, AttentionWork>;

/// "kernel", "communication", "matmul" or "attention".
std::string_view workKindName(const SegmentWork& work);

/// One segment: its exprs, its fusion and its work.
struct Segment {
  int64_t id = 0;
  /// The original math exprs, producers first.
  std::vector<ir::Expr*> exprs;
  SegmentFusion fusion;
  SegmentWork work;

  /// The kernel's work, or nullptr for a segment of another kind.
  const KernelWork* kernel() const { return std::get_if<KernelWork>(&work); }
  KernelWork* kernel() { return std::get_if<KernelWork>(&work); }
  /// The communication, or nullptr for a segment of another kind.
  const multidevice::Communication* communication() const {
    const auto* c = std::get_if<CommunicationWork>(&work);
    return c == nullptr ? nullptr : &c->communication;
  }
  /// The matmul's work, or nullptr for a segment of another kind.
  const MatmulWork* matmul() const { return std::get_if<MatmulWork>(&work); }
  /// The attention's work, or nullptr for a segment of another kind.
  const AttentionWork* attention() const { return std::get_if<AttentionWork>(&work); }
  /// What it runs, for records and dumps: the scheduler's name ("pointwise", ...), the
  /// communication's type ("Allgather", ...) or the op of a matmul segment ("matmul", "linear").
  std::string what() const;
  /// Its parameters as text: HeuristicParams::toString(), Communication::toString() or
  /// MatmulWork::toString().
  std::string parameters() const;
};

/// How one in-place output (ir::Fusion::aliasOutputToInput) reaches its input's memory: stored
/// there by the segment that computes it, or computed into a buffer of its own and copied into
/// the input after the last segment ran (segmenter/in_place.h decides; docs/design.md, "In-place
/// outputs").
struct InPlaceWrite {
  int64_t output = 0;          ///< position among original()'s outputs
  int64_t input = 0;           ///< position among original()'s inputs
  int64_t segment = -1;        ///< the segment that stores it into the input; -1: copied after
  int64_t segmentOutput = -1;  ///< its position among that segment's outputs
  std::string why;             ///< why it is copied; "" when stored in place
  bool inPlace() const { return segment >= 0; }
};

/// The segments of one fusion in a valid run order (every segment after the producers of its
/// inputs). The original fusion is not owned and must outlive this object, except a rewritten
/// copy of it (the Welford translation), which is owned: original() is then that copy, with the
/// same inputs and outputs in the same order, and source() the caller's fusion.
class SegmentedFusion {
 public:
  explicit SegmentedFusion(const ir::Fusion* original)
      : original_(original), source_(original) {}

  const ir::Fusion& original() const { return *original_; }
  /// The fusion the caller segmented (original() unless a rewritten copy was segmented).
  const ir::Fusion& source() const { return *source_; }
  /// Makes `rewritten` (a copy of source() rewritten for these sizes) the original, owned.
  void adoptRewritten(std::shared_ptr<const ir::Fusion> rewritten, const ir::Fusion* source);
  /// True when original() is a rewritten copy (Welford translated to two passes).
  bool rewritten() const { return owned_ != nullptr; }
  /// What happened to the fusion's Welfords ("" when it has none): printed by toString.
  const std::string& welfordNote() const { return welford_note_; }
  void setWelfordNote(std::string note) { welford_note_ = std::move(note); }
  /// Per in-place output of original(): how it is written (empty without any).
  const std::vector<InPlaceWrite>& inPlaceWrites() const { return in_place_; }
  void setInPlaceWrites(std::vector<InPlaceWrite> writes) { in_place_ = std::move(writes); }
  std::vector<Segment>& segments() { return segments_; }
  const std::vector<Segment>& segments() const { return segments_; }
  int64_t size() const { return int64_t(segments_.size()); }

  /// True when both have the same segments (same exprs and equal work: schedulers and
  /// parameters, or communications), so kernels compiled for one run the other's sizes too.
  bool sameAs(const SegmentedFusion& other) const;

  /// "segment 0 (reduction): T1 = sum(T0) | inputs T0 | outputs T1" per segment, in run
  /// order; printed by LOOM_DUMP=segments.
  std::string toString() const;

 private:
  const ir::Fusion* original_;
  const ir::Fusion* source_;
  std::shared_ptr<const ir::Fusion> owned_;
  std::string welford_note_;
  std::vector<Segment> segments_;
  std::vector<InPlaceWrite> in_place_;
};

}  // namespace loom::segmenter
