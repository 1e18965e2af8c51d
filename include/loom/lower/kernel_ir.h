// SPDX-License-Identifier: Apache-2.0
// Kernel IR (loom::kir): the loop-level program that lowering builds and codegen prints.
//
// ## Semantics
//
// * A Kernel owns every node (an arena); nodes are immutable values except Scopes, which passes
//   rewrite. Values are scalar expressions evaluated by one CUDA thread; Statements run in order.
// * Buffers are the memory a kernel touches: parameters (global tensors passed as
//   loom::Tensor<T, N> with logical sizes and strides in elements; global intermediates are
//   parameters too, allocated by the executor), local arrays (per thread, constant size) and
//   shared arrays (a TensorView of MemoryType::Shared: offsets into the one dynamic shared buffer,
//   after the block-reduction scratch).
// * ForLoop iterates index over [start, stop). A loop with a thread or block ParallelType is not a
//   loop: its index is threadIdx/blockIdx. The launch gives each parallel type the largest `stop`
//   of its loops (Kernel::launch), and a loop whose `stop` is smaller runs on `index < stop` only
//   (the thread_predicates pass).
// * TensorOp is the pre-indexing form of one tensor math expr (it still points at the ir::Expr);
//   the indexing pass replaces every TensorOp by scalar Stores of Loads. After indexing, no
//   statement refers to a TensorView except through its Buffer.
// * BlockReduce all-reduces `acc` over the thread dims it names: every thread of a group gets the
//   result. Every thread of the block must reach it, so it is never inside an IfThenElse.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/op_types.h"
#include "loom/ir/scalar.h"
#include "loom/ir/tensor_view.h"

namespace loom::kir {

class Kernel;

/// Value kinds and statement kinds (one list each, so switches stay exhaustive).
#define LOOM_KIR_FOR_EACH_VALUE(X)                                                       \
  X(Const) X(Var) X(NamedScalar) X(TensorSize) X(UnaryExpr) X(BinaryExpr) X(TernaryExpr) \
  X(Load) X(Call) X(Misalignment)
#define LOOM_KIR_FOR_EACH_STMT(X)                                                           \
  X(ForLoop) X(IfThenElse) X(Allocate) X(DeclareVar) X(Store) X(BlockSync) X(BlockReduce) \
  X(Comment) X(TensorOp) X(Welford) X(GridReduce) X(VectorCopy) X(SortRow) X(ScatterAdd)

enum class NodeKind : uint8_t {
#define LOOM_KIR_ENUM(n) n,
  LOOM_KIR_FOR_EACH_VALUE(LOOM_KIR_ENUM) LOOM_KIR_FOR_EACH_STMT(LOOM_KIR_ENUM)
#undef LOOM_KIR_ENUM
};

class Node {
 public:
  virtual ~Node() = default;
  NodeKind kind() const { return kind_; }
  template <typename T>
  bool isA() const {
    return kind_ == T::kKind;
  }
  template <typename T>
  T* as() {
    LOOM_ASSERT(isA<T>(), "kir node has kind ", int(kind_));
    return static_cast<T*>(this);
  }
  template <typename T>
  const T* as() const {
    LOOM_ASSERT(isA<T>(), "kir node has kind ", int(kind_));
    return static_cast<const T*>(this);
  }
  template <typename T>
  T* dynCast() {
    return isA<T>() ? static_cast<T*>(this) : nullptr;
  }
  template <typename T>
  const T* dynCast() const {
    return isA<T>() ? static_cast<const T*>(this) : nullptr;
  }

 protected:
  explicit Node(NodeKind kind) : kind_(kind) {}

 private:
  NodeKind kind_;
};

#define LOOM_KIR_NODE(T) static constexpr NodeKind kKind = NodeKind::T;

// ---- Buffers ------------------------------------------------------------------------------------

enum class BufferKind : uint8_t { Param, Local, Shared };

class Value;

/// Memory one tensor lives in. Params are indexed with their runtime strides; local and shared
/// buffers are laid out over `allocIds` (the tensor's loop IDs right of its compute-at position
/// that are neither reductions, broadcasts nor thread/block parallel), densely unless
/// `allocStrides`.
struct Buffer {
  const ir::TensorView* tv = nullptr;
  std::string name;  ///< "T3"
  DataType dtype = DataType::Float32;
  BufferKind kind = BufferKind::Param;
  int64_t rank = 0;  ///< Param: logical rank without reductions (the Tensor<T, N> parameter's N)
  bool isFusionInput = false;
  bool isFusionOutput = false;
  std::vector<ir::IterDomain*> allocIds;  ///< Local/Shared only
  Value* size = nullptr;                  ///< Local/Shared only: number of elements
  /// Local/Shared only: the element stride of each of `allocIds`; empty means dense. A shared
  /// buffer whose rows are read down their columns has its rows padded (pass allocations).
  std::vector<int64_t> allocStrides;
  /// Shared only: byte offset of the buffer in the dynamic shared memory after the block-reduction
  /// scratch (16-byte aligned; see Kernel::sharedTensorBytes).
  int64_t smemOffset = 0;
  /// Shared only, for a buffer of symbolic size (a hand schedule keeping a row of run-time
  /// length in shared memory): its byte offset after all constant-size shared tensors, as a
  /// kernel value (Kernel::dynamicShared); nullptr for a constant-size buffer (smemOffset).
  Value* dynamicSmemOffset = nullptr;
};

// ---- Values -------------------------------------------------------------------------------------

class Value : public Node {
 public:
  DataType dtype() const { return dtype_; }

 protected:
  Value(NodeKind kind, DataType dtype) : Node(kind), dtype_(dtype) {}

 private:
  DataType dtype_;
};

class Const : public Value {
 public:
  LOOM_KIR_NODE(Const)
  Const(DataType dtype, ir::ScalarValue value) : Value(kKind, dtype), value(value) {}
  std::optional<int64_t> asInt() const;
  ir::ScalarValue value;
};

/// A named local scalar: loop index, accumulator, temporary.
class Var : public Value {
 public:
  LOOM_KIR_NODE(Var)
  Var(DataType dtype, std::string name) : Value(kKind, dtype), name(std::move(name)) {}
  std::string name;
};

/// threadIdx.x, blockIdx.y, blockDim.x, gridDim.z, ...
class NamedScalar : public Value {
 public:
  LOOM_KIR_NODE(NamedScalar)
  explicit NamedScalar(std::string name) : Value(kKind, kIndexType), name(std::move(name)) {}
  std::string name;
};

/// A parameter's runtime size (`T0.size[1]`) or stride (`T0.stride[1]`).
class TensorSize : public Value {
 public:
  LOOM_KIR_NODE(TensorSize)
  TensorSize(const Buffer* buffer, int64_t dim, bool stride)
      : Value(kKind, kIndexType), buffer(buffer), dim(dim), isStride(stride) {}
  const Buffer* buffer;
  int64_t dim;
  bool isStride;
};

class UnaryExpr : public Value {
 public:
  LOOM_KIR_NODE(UnaryExpr)
  UnaryExpr(DataType dtype, ir::UnaryOpType op, Value* in) : Value(kKind, dtype), op(op), in(in) {}
  ir::UnaryOpType op;
  Value* in;
};

class BinaryExpr : public Value {
 public:
  LOOM_KIR_NODE(BinaryExpr)
  BinaryExpr(DataType dtype, ir::BinaryOpType op, Value* lhs, Value* rhs, bool total = false)
      : Value(kKind, dtype), op(op), lhs(lhs), rhs(rhs), total(total) {}
  ir::BinaryOpType op;
  Value* lhs;
  Value* rhs;
  /// The fusion's own math (tensor ops and scalars), as opposed to index math lowering made:
  /// an integer division, remainder or ceil_div of it is defined for every operand (by zero: 0;
  /// the most negative value by -1: itself, remainder 0; docs/ops.md) and codegen emits it so.
  /// Index math divides by split factors and extents, which are positive.
  bool total = false;
};

class TernaryExpr : public Value {
 public:
  LOOM_KIR_NODE(TernaryExpr)
  TernaryExpr(DataType dtype, ir::TernaryOpType op, Value* a, Value* b, Value* c)
      : Value(kKind, dtype), op(op), a(a), b(b), c(c) {}
  ir::TernaryOpType op;
  Value* a;
  Value* b;
  Value* c;
};

/// buffer[index] (an element of a parameter, local or shared buffer).
class Load : public Value {
 public:
  LOOM_KIR_NODE(Load)
  Load(const Buffer* buffer, Value* index) : Value(kKind, buffer->dtype), buffer(buffer), index(index) {}
  const Buffer* buffer;
  Value* index;
};

/// fn(args...): a function of the runtime library (codegen/runtime/*.cuh) on scalar values, such
/// as the random-number helpers. It must be pure (the same operands give the same value), so
/// passes may share, hoist or simplify around it like any other value.
class Call : public Value {
 public:
  LOOM_KIR_NODE(Call)
  Call(DataType dtype, std::string fn, std::vector<Value*> args)
      : Value(kKind, dtype), fn(std::move(fn)), args(std::move(args)) {}
  std::string fn;
  std::vector<Value*> args;
};

/// How many elements `&buffer[index]` lies past the last boundary of `width` elements:
/// (address / itemsize) mod width, for a parameter buffer and a power-of-two width. A peeled
/// vector row (lower.h, LowerOptions::peelVectorRows) rotates the row by the misalignment of its
/// start and takes the vector path only where this is 0. Never reads the element.
class Misalignment : public Value {
 public:
  LOOM_KIR_NODE(Misalignment)
  Misalignment(const Buffer* buffer, Value* index, int64_t width)
      : Value(kKind, kIndexType), buffer(buffer), index(index), width(width) {}
  const Buffer* buffer;
  Value* index;
  int64_t width;
};

// ---- Statements ---------------------------------------------------------------------------------

class Stmt : public Node {
 protected:
  using Node::Node;
};

using Scope = std::vector<Stmt*>;

class ForLoop : public Stmt {
 public:
  LOOM_KIR_NODE(ForLoop)
  ForLoop(Var* index, Value* start, Value* stop, ir::ParallelType ptype, ir::IterDomain* id)
      : Stmt(kKind), index(index), start(start), stop(stop), ptype(ptype), id(id) {}
  bool isParallel() const { return ir::isThreadOrBlockDim(ptype); }
  Var* index;
  Value* start;
  Value* stop;
  ir::ParallelType ptype;
  /// The loop ID this loop was made for (a representative of its loop group).
  ir::IterDomain* id;
  /// A Bulk loop: the thread types (x first) whose threads share its iterations, each thread
  /// starting at its index over them and stepping by their count (never empty: a bulk loop no
  /// free thread type can share is Serial).
  std::vector<ir::ParallelType> sharedBy;
  Scope body;
};

class IfThenElse : public Stmt {
 public:
  LOOM_KIR_NODE(IfThenElse)
  explicit IfThenElse(Value* cond) : Stmt(kKind), cond(cond) {}
  Value* cond;
  Scope thenBody;
  Scope elseBody;
};

/// Declares a local or shared buffer.
class Allocate : public Stmt {
 public:
  LOOM_KIR_NODE(Allocate)
  explicit Allocate(const Buffer* buffer) : Stmt(kKind), buffer(buffer) {}
  const Buffer* buffer;
};

/// Declares a scalar variable with an initial value (accumulators), or, when `constIndex`, a named
/// index value computed once and never assigned (hoist_indices): `const <index type> i12 = init;`.
class DeclareVar : public Stmt {
 public:
  LOOM_KIR_NODE(DeclareVar)
  DeclareVar(Var* var, Value* init, bool const_index = false)
      : Stmt(kKind), var(var), init(init), constIndex(const_index) {}
  Var* var;
  Value* init;
  bool constIndex;
};

/// buffer[index] = value, or var = value when buffer is null.
class Store : public Stmt {
 public:
  LOOM_KIR_NODE(Store)
  Store(const Buffer* buffer, Value* index, Value* value)
      : Stmt(kKind), buffer(buffer), index(index), value(value) {}
  Store(Var* var, Value* value) : Stmt(kKind), var(var), value(value) {}
  const Buffer* buffer = nullptr;
  Value* index = nullptr;
  Var* var = nullptr;
  Value* value;
};

/// __syncthreads().
class BlockSync : public Stmt {
 public:
  LOOM_KIR_NODE(BlockSync)
  BlockSync() : Stmt(kKind) {}
};

/// acc = blockReduce<x, y, z>(acc, op, init, scratch): an all-reduce over the named thread dims.
class BlockReduce : public Stmt {
 public:
  LOOM_KIR_NODE(BlockReduce)
  BlockReduce(ir::ReductionOpType op, Var* acc, Value* init, bool x, bool y, bool z)
      : Stmt(kKind), op(op), acc(acc), init(init), x(x), y(y), z(z) {}
  ir::ReductionOpType op;
  Var* acc;
  Value* init;
  bool x, y, z;
};

/// Welford steps on the accumulator triple (avg, m2, n) (loom::Welford in the runtime library):
/// Update adds the sample `in[0]`; Combine merges the state (in[0], in[1], in[2]); Block
/// all-reduces the triple over the named thread dims (loom::blockWelford, shared scratch like
/// BlockReduce, never inside an IfThenElse).
enum class WelfordMode : uint8_t { Update, Combine, Block };
class Welford : public Stmt {
 public:
  LOOM_KIR_NODE(Welford)
  Welford(WelfordMode mode, Var* avg, Var* m2, Var* n)
      : Stmt(kKind), mode(mode), avg(avg), m2(m2), n(n) {}
  WelfordMode mode;
  Var* avg;
  Var* m2;
  Var* n;
  Value* in[3] = {nullptr, nullptr, nullptr};
  bool x = false, y = false, z = false;
};

/// last = gridReduce of `acc` (or of the Welford triple when welford[0] is set) over the block
/// dims x/y/z: every block writes its partial to the work buffer of grid scratch `work`, the last
/// block of each segment (the blocks that agree on the dims not reduced) combines them and gets
/// `last` = true and the result in acc. Inside serial loops, `entrance` is the linear iteration
/// number of those loops (null outside any): each iteration uses its own slice of the scratch.
/// Every thread of every block must reach it (never inside an IfThenElse).
/// With `all` (a grid broadcast: the result is read in blocks along the reduced dims) every block
/// combines all partials after a grid barrier (loom::gridAllReduce) and gets the result; `last` is
/// unused, the semaphore scratch is the kernel's sync words and the kernel is cooperative.
class GridReduce : public Stmt {
 public:
  LOOM_KIR_NODE(GridReduce)
  GridReduce(ir::ReductionOpType op, Var* acc, Value* init, Var* last, int64_t work)
      : Stmt(kKind), op(op), acc(acc), init(init), last(last), work(work) {}
  bool isWelford() const { return welford[0] != nullptr; }
  ir::ReductionOpType op;
  Var* acc;  ///< null for Welford
  Value* init;
  Var* last;     ///< Bool, declared before
  /// Call site number c: Kernel::gridScratch[2c] is its work buffer "gw<c>", [2c + 1] its
  /// semaphores "gs<c>".
  int64_t work;
  Var* welford[3] = {nullptr, nullptr, nullptr};
  bool x = true, y = false, z = false;  ///< reduced block dims
  Value* entrance = nullptr;
  bool all = false;
};

class Comment : public Stmt {
 public:
  LOOM_KIR_NODE(Comment)
  explicit Comment(std::string text) : Stmt(kKind), text(std::move(text)) {}
  std::string text;
};

/// What a TensorOp does with its expr.
enum class TensorOpRole : uint8_t {
  Compute,     ///< out[i] = op(in[i]...)
  Accumulate,  ///< acc = op(acc, in[i]) (ReductionOp inside its reduction loops)
  WriteResult  ///< out[i] = acc (after the reduction loops and any block reduce)
};

/// One tensor expr before indexing. `acc` is the accumulator of Accumulate/WriteResult.
class TensorOp : public Stmt {
 public:
  LOOM_KIR_NODE(TensorOp)
  TensorOp(const ir::Expr* expr, const ir::TensorView* out, TensorOpRole role)
      : Stmt(kKind), expr(expr), out(out), role(role) {}
  const ir::Expr* expr;
  const ir::TensorView* out;
  TensorOpRole role;
  Var* acc = nullptr;
  Var* m2 = nullptr;  ///< Welford Accumulate: the triple is (acc, m2, n)
  Var* n = nullptr;
};

/// dst[dstIndex .. dstIndex + width) = src[srcIndex .. srcIndex + width) as one vector access per
/// side (loom::loadVector / storeVector through a loom::Array<T, width>); made by the vectorize
/// pass from a Vectorize loop of one copy. Both start offsets are multiples of width.
class VectorCopy : public Stmt {
 public:
  LOOM_KIR_NODE(VectorCopy)
  VectorCopy(const Buffer* dst, Value* dst_index, const Buffer* src, Value* src_index, int64_t width)
      : Stmt(kKind), dst(dst), dstIndex(dst_index), src(src), srcIndex(src_index), width(width) {}
  const Buffer* dst;
  Value* dstIndex;
  const Buffer* src;
  Value* srcIndex;
  int64_t width;
};

/// One row of an ArgsortOp or TopKOp, sorted by the calling thread (runtime sort.cuh:
/// loom::argsortRow / loom::topkRow): reads `n` elements of `in` starting at offset inBase,
/// inStride apart, and writes the first `k` of their order (k = n for argsort) to `indices`
/// (Int64) and, for topk, their values to `values`, each row starting at its base and stepping
/// by its stride. Made by the indexing pass from a sort's TensorOp, which the sorts pass took out
/// of its row's loop. Buffers are parameters (global memory). With `blockRow`, the threads of the
/// block sort the row together (loom::argsortRowBlock / topkRowBlock).
class SortRow : public Stmt {
 public:
  LOOM_KIR_NODE(SortRow)
  struct Row {
    const Buffer* buffer = nullptr;
    Value* base = nullptr;
    Value* stride = nullptr;
  };
  SortRow(const ir::Expr* expr, Row in, Row values, Row indices, Value* n, Value* k,
          bool descending)
      : Stmt(kKind),
        expr(expr),
        in(in),
        values(values),
        indices(indices),
        n(n),
        k(k),
        descending(descending) {}
  bool isTopK() const { return values.buffer != nullptr; }
  /// Every value of the statement, for passes that rewrite values in place.
  std::vector<Value**> valueSlots() {
    std::vector<Value**> slots{&in.base, &in.stride, &indices.base, &indices.stride, &n, &k};
    if (isTopK()) {
      slots.push_back(&values.base);
      slots.push_back(&values.stride);
    }
    return slots;
  }
  const ir::Expr* expr;  ///< the ArgsortOp or TopKOp
  Row in;
  Row values;  ///< topk only (buffer null for argsort)
  Row indices;
  Value* n;
  Value* k;
  bool descending;  ///< argsort's descending, topk's largest
  /// 0: the calling thread sorts the row. Otherwise every thread of the block calls it together
  /// (a bitonic sort of this many keys, a power of two >= n, in shared memory at byte
  /// `smemOffset` of the kernel's shared tensors).
  int64_t blockRow = 0;
  int64_t smemOffset = 0;
};

/// The accumulating phase of an atomic scatter_add (ir::ScatterOp::atomic; runtime scatter.cuh:
/// loom::scatterAddAtomic): after a grid barrier on the sync words `sync` (a per-launch grid
/// scratch), the grid walks every element j of `index` once and adds `src`[j] into `out` at j's
/// coordinates with `dim` replaced by index[j], an atomic add behind the range check of site
/// `site` (Kernel::indexChecks). The indexing pass appends it to the end of the kernel, after the
/// loops that copied self into `out`; every thread of the grid reaches it (the kernel is
/// cooperative). Buffers are parameters (global memory).
class ScatterAdd : public Stmt {
 public:
  LOOM_KIR_NODE(ScatterAdd)
  ScatterAdd(const ir::Expr* expr, const Buffer* out, const Buffer* index, const Buffer* src,
             int64_t dim, std::string sync, int64_t site)
      : Stmt(kKind),
        expr(expr),
        out(out),
        index(index),
        src(src),
        dim(dim),
        sync(std::move(sync)),
        site(site) {}
  const ir::Expr* expr;  ///< the ScatterOp
  const Buffer* out;
  const Buffer* index;
  const Buffer* src;
  int64_t dim;
  std::string sync;  ///< the GridScratch name of the gridSync words
  int64_t site;
};

// ---- Kernel -------------------------------------------------------------------------------------

/// One launch dimension: the parallel type and the extent (an ir scalar the executor evaluates).
struct LaunchDim {
  ir::ParallelType ptype;
  std::vector<const ir::Scalar*> extents;  ///< every loop of this type (all must agree)
};

class Kernel {
 public:
  Kernel() = default;
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  /// Creates a node owned by the kernel.
  template <typename T, typename... Args>
  T* create(Args&&... args) {
    auto node = std::make_unique<T>(std::forward<Args>(args)...);
    T* raw = node.get();
    nodes_.push_back(std::move(node));
    return raw;
  }
  Buffer* createBuffer() {
    buffers_.push_back(std::make_unique<Buffer>());
    return buffers_.back().get();
  }

  Const* constInt(int64_t v) { return create<Const>(kIndexType, ir::ScalarValue{v}); }
  Const* constBool(bool v) { return create<Const>(DataType::Bool, ir::ScalarValue{v}); }
  /// A fresh Var named prefix + counter ("i0", "acc1").
  Var* newVar(DataType dtype, const std::string& prefix) {
    return create<Var>(dtype, prefix + std::to_string(next_var_++));
  }

  Scope body;
  /// Kernel parameters in order: fusion inputs, fusion outputs, global intermediates.
  std::vector<Buffer*> params;
  std::vector<LaunchDim> launch;
  /// Element sizes of block reductions; the dynamic shared scratch is max(size) * threads.
  std::vector<DataType> blockReduceTypes;
  /// Bytes of shared-memory tensors, placed after the (16-byte aligned) reduction scratch.
  int64_t sharedTensorBytes = 0;
  /// Shared tensors of symbolic size, placed after the constant-size ones in this order, each
  /// rounded up to 16 bytes: the executor sizes the launch's dynamic shared memory from their
  /// extents, evaluated on the launch's bindings.
  struct DynamicShared {
    std::vector<const ir::Scalar*> extents;  ///< multiplied with `elements`
    int64_t elements = 1;                    ///< the product of the constant extents
    int64_t elementBytes = 0;
  };
  std::vector<DynamicShared> dynamicShared;
  /// Scalar fusion inputs, passed by value after the tensor parameters, in this order.
  std::vector<std::pair<const ir::Scalar*, Var*>> scalarParams;
  /// Global scratch of grid reductions, passed as plain pointers after all other parameters, in
  /// this order. Per call site: a work buffer (`elementBytes` per thread per block and entrance,
  /// no initial value) then a semaphore buffer (one zeroed unsigned per segment and entrance; the
  /// executor allocates one per block and entrance, an upper bound).
  struct GridScratch {
    std::string name;   ///< "gw0" / "gs0"
    std::string ctype;  ///< C element type: "float", "loom::Welford<float, long long>", "unsigned"
    int64_t elementBytes = 4;
    bool semaphore = false;
    /// Iterations of the serial loops around the call site (GridReduce::entrance's range): the
    /// product of the constant trip counts here, times the value of each of `entranceExtents`
    /// (the trip counts known only at launch), which the executor evaluates to size the scratch.
    int64_t entrances = 1;
    /// `elementBytes` once per launch, not per block (the gridSync words of a cooperative kernel).
    bool perLaunch = false;
    std::vector<const ir::Scalar*> entranceExtents = {};
  };
  std::vector<GridScratch> gridScratch;
  /// The kernel waits at grid barriers (grid all-reduces): it must be launched cooperatively,
  /// with every block resident at once; the executor checks the grid against the occupancy the
  /// device reports before launching and refuses a grid that cannot be resident.
  bool cooperative = false;
  /// The checked index reads of indexing ops (gather, index_select, scatter), by site number:
  /// a kernel with any takes `long long* loom_index_error` after the grid scratch, two words the
  /// executor zeroes before a launch: the first failing read stores its site + 1 and the
  /// offending value (runtime/index.cuh), and the executor raises the op's UserError from them.
  struct IndexCheck {
    std::string op;                      ///< "gather", "index_select", ...
    std::string index;                   ///< the index tensor ("T1")
    std::string indexed;                 ///< the tensor indexed ("T0")
    int64_t dim = 0;                     ///< its dim the index values select
    const ir::Scalar* extent = nullptr;  ///< that dim's extent (evaluated per launch)
  };
  std::vector<IndexCheck> indexChecks;
  /// Bytes of the largest block-reduction element that is not a DataType (Welford triples).
  int64_t blockReduceBytes = 0;
  std::string name = "loom_kernel";
  /// Type of index math and of the Tensor params' sizes/strides (Int32 or Int64); the executor
  /// sets it per run from the bound sizes (lower::selectIndexType) before generating the kernel.
  DataType indexType = DataType::Int64;
  /// A param accessed with VectorCopy: its vector width and the logical dims (positions among
  /// the tensor's non-reduction logical dims, outermost first) that the vectorized loop ID is
  /// merged from. The executor checks that those dims are dense in memory with a total size that
  /// is a multiple of the width, since a vector's predicate is all-or-nothing.
  struct VectorizedParam {
    const Buffer* buffer = nullptr;
    int64_t width = 1;
    std::vector<int64_t> dims;
    /// Along a peeled row (LowerOptions::peelVectorRows): the kernel checks each vector's
    /// adjacency and alignment itself, so any layout is right and the executor checks nothing.
    bool peeled = false;
  };
  std::vector<VectorizedParam> vectorized;

  const std::vector<std::unique_ptr<Buffer>>& buffers() const { return buffers_; }

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  int64_t next_var_ = 0;
};

/// The launch extent of parallel type `p` when lowering alone fixes it: 1 when no loop of the
/// kernel is parallelized on `p`, the largest extent of its loops when all are constant, nullopt
/// when one depends on the inputs (the executor evaluates it per launch).
std::optional<int64_t> constantLaunchExtent(const Kernel& kernel, ir::ParallelType p);
/// Threads per block (TIDx * TIDy * TIDz) when lowering alone fixes all three; nullopt otherwise.
std::optional<int64_t> constantBlockThreads(const Kernel& kernel);

/// Text form of a value ("(i3 * 128) + i4") and of the whole kernel (one statement per line,
/// two spaces per scope). Used by golden pass tests and LOOM_DUMP=kernel_ir.
std::string toString(const Value* v);
std::string toString(const Kernel& kernel);
/// One statement in the kernel's text form, with the bodies of loops and ifs, unindented.
std::string toString(const Stmt* s);
/// A statement's first line: a loop or an if without its body.
std::string headline(const Stmt* s);
std::string_view bufferKindName(BufferKind k);

}  // namespace loom::kir
