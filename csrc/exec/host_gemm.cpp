// SPDX-License-Identifier: Apache-2.0
// The host backend's GEMM (exec/gemm.h): packed f32 panels, an f32 accumulator per output tile,
// tiles spread over threads.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "loom/exec/gemm.h"
#include "loom/support/error.h"
#include "loom/tensor/half.h"

namespace loom::exec {
namespace {

// Tile sizes: an a panel (kMc x kKc) and a b panel (kKc x kNc) of f32 stay in L2 together, the
// accumulator row (kNc floats) and a b row in L1.
constexpr int64_t kMc = 64;
constexpr int64_t kNc = 256;
constexpr int64_t kKc = 256;

float load(const void* base, int64_t offset, DataType dtype) {
  switch (dtype) {
    case DataType::Float32: return static_cast<const float*>(base)[offset];
    case DataType::BFloat16: return bfloat16BitsToFloat(static_cast<const uint16_t*>(base)[offset]);
    case DataType::Float16: return halfBitsToFloat(static_cast<const uint16_t*>(base)[offset]);
    default: LOOM_UNREACHABLE("host GEMM of ", dtype);
  }
}

void store(void* base, int64_t offset, DataType dtype, float value) {
  switch (dtype) {
    case DataType::Float32: static_cast<float*>(base)[offset] = value; return;
    case DataType::BFloat16:
      static_cast<uint16_t*>(base)[offset] = floatToBFloat16Bits(value);
      return;
    case DataType::Float16: static_cast<uint16_t*>(base)[offset] = floatToHalfBits(value); return;
    default: LOOM_UNREACHABLE("host GEMM of ", dtype);
  }
}

// One output tile [i0, i0 + mc) x [j0, j0 + nc) of one batch: accumulates over k in packed
// panels, then adds the bias, applies the activation and rounds once (cuBLASLt's order).
struct TileWorker {
  const GemmProblem& p;
  const ir::MatrixStrides& c;
  std::vector<float> a_pack = std::vector<float>(size_t(kMc * kKc));
  std::vector<float> b_pack = std::vector<float>(size_t(kKc * kNc));
  std::vector<float> acc = std::vector<float>(size_t(kMc * kNc));

  void run(int64_t a_off, int64_t b_off, int64_t c_off, int64_t i0, int64_t j0) {
    const ir::MatmulGeometry& g = p.geometry;
    const int64_t mc = std::min(kMc, g.m - i0);
    const int64_t nc = std::min(kNc, g.n - j0);
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t p0 = 0; p0 < g.k; p0 += kKc) {
      const int64_t kc = std::min(kKc, g.k - p0);
      for (int64_t i = 0; i < mc; ++i) {
        const int64_t row = a_off + (i0 + i) * g.a.row;
        for (int64_t q = 0; q < kc; ++q) {
          a_pack[size_t(i * kc + q)] = load(p.a, row + (p0 + q) * g.a.col, p.dtype);
        }
      }
      for (int64_t q = 0; q < kc; ++q) {
        const int64_t row = b_off + (p0 + q) * g.b.row;
        for (int64_t j = 0; j < nc; ++j) {
          b_pack[size_t(q * nc + j)] = load(p.b, row + (j0 + j) * g.b.col, p.dtype);
        }
      }
      for (int64_t i = 0; i < mc; ++i) {
        float* out_row = acc.data() + i * nc;
        const float* a_row = a_pack.data() + i * kc;
        for (int64_t q = 0; q < kc; ++q) {
          const float x = a_row[q];
          const float* b_row = b_pack.data() + q * nc;
          for (int64_t j = 0; j < nc; ++j) out_row[j] += x * b_row[j];
        }
      }
    }
    for (int64_t i = 0; i < mc; ++i) {
      for (int64_t j = 0; j < nc; ++j) {
        float v = acc[size_t(i * nc + j)];
        if (g.hasBias) v += load(p.bias, (j0 + j) * g.biasStride, p.dtype);
        if (p.activation != ir::MatmulActivation::None) v = gemmActivation(p.activation, v);
        store(p.out, c_off + (i0 + i) * c.row + (j0 + j) * c.col, p.dtype, v);
      }
    }
  }
};

// The offsets of batch `index` (row-major over geometry.batch) in a, b and out.
void batchOffsets(const ir::MatmulGeometry& g, const ir::MatrixStrides& c, int64_t index,
                  int64_t& a, int64_t& b, int64_t& out) {
  a = b = out = 0;
  for (size_t d = g.batch.size(); d-- > 0;) {
    const int64_t i = index % g.batch[d];
    index /= g.batch[d];
    a += i * g.a.batch[d];
    b += i * g.b.batch[d];
    out += i * c.batch[d];
  }
}

}  // namespace

float gemmActivation(ir::MatmulActivation activation, float x) {
  switch (activation) {
    case ir::MatmulActivation::None: return x;
    case ir::MatmulActivation::Relu: return std::isnan(x) || x > 0.0f ? x : 0.0f;  // as ops::relu
    case ir::MatmulActivation::GeluTanh: {
      // ops::gelu(x, Tanh), step by step in f32: h = x * 0.5, c = x * (x * x),
      // i = (x + c * 0.044715) * sqrt(2 / pi), h * (tanh(i) + 1).
      const float h = x * 0.5f;
      const float c = x * (x * x);
      const float i = (x + c * 0.044715f) * 0.7978845608028654f;
      return h * (std::tanh(i) + 1.0f);
    }
  }
  return x;
}

std::optional<BlasOperand> blasOperand(int64_t rows, int64_t cols, int64_t rowStride,
                                       int64_t colStride) {
  // Stored as is (column-major): rows are unit-strided, columns ld apart.
  if (rows <= 1 || rowStride == 1) {
    const int64_t ld = cols <= 1 ? std::max<int64_t>(rows, 1) : colStride;
    if (ld >= std::max<int64_t>(rows, 1)) return BlasOperand{rows, cols, ld, false};
  }
  // Stored transposed: the columns are unit-strided, rows ld apart.
  if (cols <= 1 || colStride == 1) {
    const int64_t ld = rows <= 1 ? std::max<int64_t>(cols, 1) : rowStride;
    if (ld >= std::max<int64_t>(cols, 1)) return BlasOperand{cols, rows, ld, true};
  }
  return std::nullopt;
}

void hostGemm(const GemmProblem& p, int threads) {
  const ir::MatmulGeometry& g = p.geometry;
  const ir::MatrixStrides c = g.denseOut();
  const int64_t batches = g.batchCount();
  if (batches == 0 || g.m == 0 || g.n == 0) return;
  const int64_t row_tiles = (g.m + kMc - 1) / kMc;
  const int64_t col_tiles = (g.n + kNc - 1) / kNc;
  const int64_t tiles = batches * row_tiles * col_tiles;
  // Threads only pay off for real work: about a million multiply-adds each at least.
  const double work =
      double(batches) * double(g.m) * double(g.n) * double(std::max<int64_t>(g.k, 1));
  int64_t count =
      threads > 0 ? threads : int64_t(std::max(1u, std::thread::hardware_concurrency()));
  count = std::max<int64_t>(1, std::min({count, tiles, int64_t(work / 1e6) + 1}));
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    TileWorker w{p, c};
    for (int64_t t = next++; t < tiles; t = next++) {
      const int64_t batch = t / (row_tiles * col_tiles);
      const int64_t rest = t % (row_tiles * col_tiles);
      int64_t a_off = 0, b_off = 0, c_off = 0;
      batchOffsets(g, c, batch, a_off, b_off, c_off);
      w.run(a_off, b_off, c_off, (rest / col_tiles) * kMc, (rest % col_tiles) * kNc);
    }
  };
  if (count == 1) {
    worker();
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t i = 1; i < count; ++i) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

}  // namespace loom::exec
