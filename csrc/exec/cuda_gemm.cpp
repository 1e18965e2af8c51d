// SPDX-License-Identifier: Apache-2.0
// The GPU's GEMM: a Loom GEMM (row-major batches of any strides, exec/gemm.h) as cuBLASLt calls
// in column-major terms. out = a @ b row-major is out^T = b^T a^T column-major, so cuBLASLt's A
// is our b, its B our a, and its D our dense out (n rows, m columns, ld n). Batches collapse into
// one strided batch where the strides allow (a weight without batch dims folds the batch into
// m instead), else the outer batch dims become a loop of calls.
#include <algorithm>
#include <optional>

#include "exec/gpu_device.h"
#include "loom/backend/cuda/cublaslt.h"
#include "loom/backend/cuda/memory.h"
#include "loom/support/error.h"

namespace loom::exec::detail {
namespace {

// cuBLAS's recommendation for Hopper: 32 MiB lets every algorithm run.
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

// The one stride of dims [from, sizes.size()) taken together (their row-major order), or nullopt
// when they do not form one strided range. Size-1 dims take any stride.
std::optional<int64_t> collapsed(const std::vector<int64_t>& sizes,
                                 const std::vector<int64_t>& strides, size_t from) {
  std::optional<int64_t> inner;
  int64_t span = 1;  // elements of the dims inside the current one
  for (size_t d = sizes.size(); d-- > from;) {
    if (sizes[d] == 1) continue;
    if (!inner) {
      inner = strides[d];
    } else if (strides[d] != *inner * span) {
      return std::nullopt;
    }
    span *= sizes[d];
  }
  return inner.value_or(0);
}

// One call: the geometry's matrices at the given element offsets, `count` batches `stride`s
// apart (per operand).
struct Call {
  int64_t count = 1;
  int64_t a_stride = 0, b_stride = 0, c_stride = 0;
};

void issue(const GemmProblem& p, const ir::MatmulGeometry& g, int64_t m, int64_t a_row,
           const Call& call, int64_t a_off, int64_t b_off, int64_t c_off, void* workspace,
           int index, CUstream stream) {
  const size_t item = dataTypeSize(p.dtype);
  // cuBLASLt's A: b^T, n x k; its B: a^T, k x m.
  std::optional<BlasOperand> x = blasOperand(g.n, g.k, g.b.col, g.b.row);
  std::optional<BlasOperand> y = blasOperand(g.k, m, g.a.col, a_row);
  LOOM_ASSERT(x && y, "cuBLASLt operands the matmul executor should have made dense");
  cuda::LtMatmulCall c;
  c.dtype = p.dtype;
  switch (p.activation) {
    case ir::MatmulActivation::None: c.activation = cuda::LtActivation::None; break;
    case ir::MatmulActivation::Relu: c.activation = cuda::LtActivation::Relu; break;
    case ir::MatmulActivation::GeluTanh: c.activation = cuda::LtActivation::Gelu; break;
  }
  c.batchCount = call.count;
  c.a = {static_cast<const char*>(p.b) + b_off * int64_t(item),
         x->storedRows,
         x->storedCols,
         x->ld,
         call.b_stride,
         x->transpose};
  c.b = {static_cast<const char*>(p.a) + a_off * int64_t(item),
         y->storedRows,
         y->storedCols,
         y->ld,
         call.a_stride,
         y->transpose};
  c.d = static_cast<char*>(p.out) + c_off * int64_t(item);
  c.dRows = g.n;
  c.dCols = m;
  c.ldd = std::max<int64_t>(g.n, 1);
  c.dBatchStride = call.c_stride;
  c.bias = g.hasBias ? p.bias : nullptr;
  c.workspace = workspace;
  c.workspaceBytes = kWorkspaceBytes;
  cuda::ltMatmul(c, index, stream);
}

}  // namespace

bool cudaGemmReads(int64_t rows, int64_t cols, int64_t rowStride, int64_t colStride) {
  return blasOperand(rows, cols, rowStride, colStride).has_value();
}

void cudaGemm(const GemmProblem& p, int index, CUstream stream) {
  const ir::MatmulGeometry& g = p.geometry;
  const ir::MatrixStrides out = g.denseOut();
  const int64_t batches = g.batchCount();
  if (batches == 0 || g.m == 0 || g.n == 0) return;
  if (g.k == 0) {
    // No products: zeros. A bias would need a kernel of its own; cuBLASLt takes no empty k.
    LOOM_CHECK(!g.hasBias,
               "linear with an empty contracted dim (k = 0) and a bias is not "
               "supported on the GPU yet");
    // relu(0) and gelu(0) are 0 too.
    std::vector<int64_t> sizes{batches * g.m * g.n};
    cuda::fillBytes(Tensor::fromBlob(p.out, sizes, {1}, p.dtype, Device::cuda(index)), 0, stream);
    return;
  }
  LOOM_ASSERT(!g.hasBias || g.n == 1 || g.biasStride == 1,
              "the bias epilogue needs a packed bias vector");
  std::vector<int64_t> ws_sizes{int64_t(kWorkspaceBytes / 4)};
  Tensor workspace = cuda::emptyCuda(ws_sizes, DataType::Float32, index, stream);
  // A weight without batch dims (linear, or matmul by one matrix): the batch is more rows of a.
  const bool b_shared =
      std::all_of(g.b.batch.begin(), g.b.batch.end(), [](int64_t s) { return s == 0; });
  if (b_shared && !g.batch.empty()) {
    std::vector<int64_t> sizes = g.batch, strides = g.a.batch;
    sizes.push_back(g.m);
    strides.push_back(g.a.row);
    if (std::optional<int64_t> row = collapsed(sizes, strides, 0);
        row && blasOperand(g.k, batches * g.m, g.a.col, *row)) {
      issue(p, g, batches * g.m, *row, Call{}, 0, 0, 0, workspace.data(), index, stream);
      return;
    }
  }
  // The largest suffix of batch dims that is one strided batch in a, b and out; the dims before
  // it are a loop of calls.
  const size_t nb = g.batch.size();
  size_t from = nb;
  Call call;
  for (size_t s = 0; s <= nb; ++s) {
    auto sa = collapsed(g.batch, g.a.batch, s);
    auto sb = collapsed(g.batch, g.b.batch, s);
    auto sc = collapsed(g.batch, out.batch, s);
    if (sa && sb && sc) {
      from = s;
      call.a_stride = *sa;
      call.b_stride = *sb;
      call.c_stride = *sc;
      break;
    }
  }
  call.count = 1;
  for (size_t d = from; d < nb; ++d) call.count *= g.batch[d];
  int64_t outer = 1;
  for (size_t d = 0; d < from; ++d) outer *= g.batch[d];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t a_off = 0, b_off = 0, c_off = 0, rest = o;
    for (size_t d = from; d-- > 0;) {
      const int64_t i = rest % g.batch[d];
      rest /= g.batch[d];
      a_off += i * g.a.batch[d];
      b_off += i * g.b.batch[d];
      c_off += i * out.batch[d];
    }
    issue(p, g, g.m, g.a.row, call, a_off, b_off, c_off, workspace.data(), index, stream);
  }
}

}  // namespace loom::exec::detail
