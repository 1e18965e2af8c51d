// SPDX-License-Identifier: Apache-2.0
// MatmulSegmentExecutor (runtime/matmul_executor.h).
#include "loom/runtime/matmul_executor.h"

#include <algorithm>

#include "loom/ir/exprs.h"
#include "loom/ir/matmul_geometry.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ops/shape.h"
#include "loom/ops/tensor_builder.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/support/error.h"

namespace loom::runtime {
namespace {

// The matrix of one operand as the GEMM reads it: rows, cols and strides.
struct Matrix {
  int64_t rows, cols, row_stride, col_stride;
};

ir::MatmulGeometry geometryOf(const ir::Expr* e, const std::vector<Tensor>& operands) {
  std::vector<std::vector<int64_t>> sizes, strides;
  for (const Tensor& t : operands) {
    sizes.push_back(t.sizes());
    strides.push_back(t.strides());
  }
  return ir::matmulGeometry(e, sizes, strides);
}

}  // namespace

MatmulSegmentExecutor::MatmulSegmentExecutor(const segmenter::Segment& segment,
                                             const SegmentContext& context)
    : device_(context.device), options_(context.executor) {
  const ir::Fusion& fusion = *segment.fusion.fusion;
  for (ir::Expr* e : fusion.exprs()) {
    if (e->isA<ir::MatmulOp>() || e->isA<ir::LinearOp>()) expr_ = e;
  }
  // The segment outputs the matmul's result, or the last expr of the epilogue its GEMM applies
  // (segmenter/matmul_epilogue.h), of the same dtype.
  LOOM_ASSERT(segment.matmul() != nullptr && expr_ != nullptr && fusion.outputs().size() == 1 &&
                  fusion.outputs()[0]->dtype() == expr_->output(0)->dtype(),
              "a matmul segment computes one matmul or linear and outputs it or its epilogue");
  activation_ = segment.matmul()->activation;
  // The segment's inputs come in the original fusion's order, not the operands' (a weight that
  // is a fusion input precedes an activation another segment produced).
  const auto& seg_inputs = fusion.inputs();
  for (ir::Val* in : expr_->inputs()) {
    auto it = std::find(seg_inputs.begin(), seg_inputs.end(), in);
    LOOM_ASSERT(it != seg_inputs.end(), "a matmul operand is an input of its segment");
    arg_of_.push_back(size_t(it - seg_inputs.begin()));
  }
  copies_.resize(expr_->inputs().size());
}

MatmulSegmentExecutor::~MatmulSegmentExecutor() = default;

int64_t MatmulSegmentExecutor::denseCopies() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dense_copies_;
}

Tensor MatmulSegmentExecutor::dense(size_t operand, const Tensor& t) const {
  FusionExecutorCache* cache = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++dense_copies_;
    if (copies_[operand] == nullptr) {
      auto fusion = std::make_unique<ir::Fusion>();
      ir::FusionGuard guard(fusion.get());
      ir::TensorView* in = ops::TensorBuilder().rank(t.dim()).dtype(t.dtype()).build();
      fusion->addInput(in);
      fusion->addOutput(ops::set(in));
      RuntimeOptions options;
      options.device = device_;
      options.executor = options_;
      copies_[operand] = std::make_unique<FusionExecutorCache>(std::move(fusion), options);
    }
    cache = copies_[operand].get();
  }
  std::vector<eval::Argument> args{t};
  return cache->run(args).at(0);
}

void MatmulSegmentExecutor::runInto(std::span<const eval::Argument> args,
                                    std::vector<Tensor>& outputs, SegmentRecord&,
                                    std::span<const Tensor> into) {
  LOOM_ASSERT(into.empty(), "a matmul segment stores no output in place");
  const auto& ins = expr_->inputs();
  std::vector<Tensor> operands;
  for (size_t i = 0; i < ins.size(); ++i) {
    const auto* tv = ins[i]->as<ir::TensorView>();
    LOOM_ASSERT(arg_of_[i] < args.size(), "matmul segment argument count");
    const Tensor* t = std::get_if<Tensor>(&args[arg_of_[i]]);
    LOOM_CHECK(t != nullptr && t->defined(), "'", expr_->opName(), "': its operand ",
               tv->toString(), " must be a tensor");
    const auto rank = int64_t(ir::TensorDomain::noReductions(tv->logical()).size());
    LOOM_CHECK(t->dtype() == tv->dtype() && t->dim() == rank, "'", expr_->opName(),
               "': its operand ", tv->toString(), " is declared ", tv->dtype(), " of rank ", rank,
               ", got ", describe(*t));
    operands.push_back(*t);
  }
  ir::MatmulGeometry g = geometryOf(expr_, operands);
  // Operands the device's GEMM cannot read as they are: dense copies, then the geometry again.
  const Matrix a{g.m, g.k, g.a.row, g.a.col};
  const Matrix b{g.k, g.n, g.b.row, g.b.col};
  bool copied = false;
  for (auto [i, mat] : {std::pair<size_t, Matrix>{0, a}, std::pair<size_t, Matrix>{1, b}}) {
    if (!device_->gemmReads(mat.rows, mat.cols, mat.row_stride, mat.col_stride)) {
      operands[i] = dense(i, operands[i]);
      copied = true;
    }
  }
  if (g.hasBias && !device_->gemmReads(1, g.n, 0, g.biasStride)) {
    // One packed value per output feature (a 0-D or one-element bias repeats).
    const Tensor& bias = operands[2];
    operands[2] =
        dense(2, Tensor(bias.storage(), bias.dtype(), {g.n}, {g.biasStride}, bias.offset()));
    copied = true;
  }
  if (copied) g = geometryOf(expr_, operands);
  Tensor out = device_->empty(g.outSizes, operands[0].dtype(), options_.stream);
  if (options_.poisonOutputs) device_->poison(out, options_.stream);
  exec::GemmProblem problem;
  problem.geometry = g;
  problem.dtype = out.dtype();
  problem.activation = activation_;
  problem.a = operands[0].data();
  problem.b = operands[1].data();
  problem.bias = g.hasBias ? operands[2].data() : nullptr;
  problem.out = out.data();
  device_->gemm(problem, options_.stream);
  outputs.clear();
  outputs.push_back(std::move(out));
}

std::string MatmulSegmentExecutor::step(const segmenter::Segment& segment) const {
  const bool gpu = device_->backend() == exec::Backend::Cuda;
  return segment.parameters() + " by " + (gpu ? "cuBLASLt" : "the host GEMM") + " on " +
         device_->name() + ": " + valueNames(segment.fusion.inputs) + " -> " +
         valueNames(segment.fusion.outputs);
}

}  // namespace loom::runtime
