// SPDX-License-Identifier: Apache-2.0
// Which parts of the runtime library generated kernel sources carry (fewer bytes for NVRTC).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "loom/codegen/attention_kernel.h"
#include "loom/codegen/kernel_codegen.h"
#include "loom/codegen/runtime_library.h"
#include "loom/ir/builder.h"
#include "loom/ir/fusion.h"

namespace loom::codegen {
namespace {

// A kernel without grid reductions and sorts leaves grid.cuh and sort.cuh out and keeps every
// other runtime file, in order, followed by the kernel text.
TEST(RuntimeLibraryFor, OmitsGridAndSortFilesTheKernelDoesNotUse) {
  kir::Kernel kernel;
  GeneratedKernel g = generateKernel(kernel);
  EXPECT_EQ(g.source.find("runtime/grid.cuh"), std::string::npos);
  EXPECT_EQ(g.source.find("gridSync("), std::string::npos);
  EXPECT_EQ(g.source.find("runtime/sort.cuh"), std::string::npos);
  EXPECT_EQ(g.source.find("argsortRow("), std::string::npos);
  size_t last = 0;
  for (const RuntimeFile& f : runtimeLibraryFiles()) {
    if (f.name == "grid.cuh" || f.name == "sort.cuh" || f.name == "scatter.cuh" ||
        f.name == "attention_params.cuh" || f.name == "attention.cuh" || f.name == "mma.cuh" ||
        f.name == "attention_mma.cuh" || f.name == "attention_bwd_mma.cuh") {
      continue;
    }
    size_t at = g.source.find("// ---- runtime/" + std::string(f.name) + " ----");
    ASSERT_NE(at, std::string::npos) << f.name;
    EXPECT_GE(at, last) << f.name << " is out of dependency order";
    last = at;
  }
  // The launch defines open both the source and the printed kernel; the function closes both.
  const std::string defines = launchDefines(kernel);
  ASSERT_EQ(g.kernelText.substr(0, defines.size()), defines);
  EXPECT_EQ(g.source,
            defines + runtimeLibraryFor(kernel) + "\n" + g.kernelText.substr(defines.size()));
  EXPECT_LT(g.source.size(), runtimeLibrarySource().size() + g.kernelText.size());
}

// A kernel with no parallel loops launches one thread in one block: all six dims are defined.
TEST(LaunchDefines, UnlaunchedDimsAreOne) {
  kir::Kernel kernel;
  EXPECT_EQ(
      launchDefines(kernel),
      "#define LOOM_BLOCK_DIM_X 1u\n#define LOOM_BLOCK_DIM_Y 1u\n#define LOOM_BLOCK_DIM_Z 1u\n"
      "#define LOOM_GRID_DIM_X 1u\n#define LOOM_GRID_DIM_Y 1u\n#define LOOM_GRID_DIM_Z 1u\n");
}

// Constant extents are defined (the largest of a type's loops); one that depends on the inputs
// leaves its dim to the launch.
TEST(LaunchDefines, ConstantExtentsOnlyLargestPerType) {
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  ir::Scalar* c96 = ir::IrBuilder::index(96);
  ir::Scalar* c128 = ir::IrBuilder::index(128);
  ir::Scalar* c4 = ir::IrBuilder::index(4);
  ir::Scalar* n = ir::IrBuilder::symbolic(kIndexType);
  kir::Kernel kernel;
  kernel.launch.push_back({ir::ParallelType::TIDx, {c96, c128}});
  kernel.launch.push_back({ir::ParallelType::TIDy, {c4}});
  kernel.launch.push_back({ir::ParallelType::BIDx, {n}});
  EXPECT_EQ(
      launchDefines(kernel),
      "#define LOOM_BLOCK_DIM_X 128u\n#define LOOM_BLOCK_DIM_Y 4u\n#define LOOM_BLOCK_DIM_Z 1u\n"
      "#define LOOM_GRID_DIM_Y 1u\n#define LOOM_GRID_DIM_Z 1u\n");
}

// Grids of at most one block per SM get __launch_bounds__(threads, 1) in the declaration (and in
// the name's hash); two blocks per SM, a grid of several waves, a launch shape known only at run
// time and an unknown SM count get none.
TEST(LaunchBounds, OnlyForGridsOfOneBlockPerSm) {
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  auto kernelWith = [](int64_t tidx, int64_t tidy, ir::Scalar* bidx) {
    auto k = std::make_unique<kir::Kernel>();
    k->launch.push_back({ir::ParallelType::TIDx, {ir::IrBuilder::index(tidx)}});
    k->launch.push_back({ir::ParallelType::TIDy, {ir::IrBuilder::index(tidy)}});
    k->launch.push_back({ir::ParallelType::BIDx, {bidx}});
    return k;
  };
  auto outer = kernelWith(4, 128, ir::IrBuilder::index(128));  // 512 threads, 128 blocks
  EXPECT_EQ(launchBounds(*outer, 132), "__launch_bounds__(512, 1) ");
  EXPECT_EQ(launchBounds(*outer, 128), "__launch_bounds__(512, 1) ");
  EXPECT_EQ(launchBounds(*outer, 127), "");  // two blocks on one SM
  EXPECT_EQ(launchBounds(*outer, 0), "");    // SM count unknown
  EXPECT_EQ(launchBounds(*kernelWith(128, 1, ir::IrBuilder::index(16384)), 132), "");
  EXPECT_EQ(launchBounds(*kernelWith(4, 128, ir::IrBuilder::symbolic(kIndexType)), 132), "");

  GeneratedKernel plain = generateKernel(*outer);
  GeneratedKernel bounded = generateKernel(*outer, CodegenOptions{132});
  EXPECT_NE(plain.kernelText.find("__global__ void " + plain.name + "("), std::string::npos)
      << plain.kernelText;
  EXPECT_NE(
      bounded.kernelText.find("__global__ void __launch_bounds__(512, 1) " + bounded.name + "("),
      std::string::npos)
      << bounded.kernelText;
  EXPECT_NE(bounded.source.find("__launch_bounds__(512, 1) " + bounded.name), std::string::npos);
  EXPECT_NE(plain.name, bounded.name);
}

// A kernel with grid-reduction scratch gets grid.cuh, one that sorts rows sort.cuh, one with an
// atomic scatter_add scatter.cuh; one with all three gets the whole library but the attention
// files (the fused attention kernel's alone).
TEST(RuntimeLibraryFor, KeepsGridAndSortFilesForKernelsThatUseThem) {
  kir::Kernel kernel;
  kernel.gridScratch.push_back({"gw0", "float", 4, false});
  kernel.gridScratch.push_back({"gs0", "unsigned", 4, true});
  std::string library = runtimeLibraryFor(kernel);
  EXPECT_NE(library.find("runtime/grid.cuh"), std::string::npos);
  EXPECT_EQ(library.find("runtime/sort.cuh"), std::string::npos);
  kir::Buffer* in = kernel.createBuffer();
  in->name = "T0";
  kir::Buffer* idx = kernel.createBuffer();
  idx->name = "T1";
  idx->dtype = DataType::Int64;
  kir::Value* n = kernel.constInt(8);
  kernel.body.push_back(kernel.create<kir::SortRow>(
      nullptr, kir::SortRow::Row{in, kernel.constInt(0), kernel.constInt(1)}, kir::SortRow::Row{},
      kir::SortRow::Row{idx, kernel.constInt(0), kernel.constInt(1)}, n, n, false));
  library = runtimeLibraryFor(kernel);
  EXPECT_NE(library.find("runtime/sort.cuh"), std::string::npos);
  EXPECT_EQ(library.find("runtime/scatter.cuh"), std::string::npos);
  // An atomic scatter_add's statement brings scatter.cuh: then every file but the attention ones.
  kir::Buffer* out = kernel.createBuffer();
  out->name = "T2";
  kernel.body.push_back(kernel.create<kir::ScatterAdd>(nullptr, out, idx, in, 0, "gsync", 0));
  library = runtimeLibraryFor(kernel);
  std::string all;
  for (const RuntimeFile& f : runtimeLibraryFiles()) {
    if (f.name == "attention_params.cuh" || f.name == "attention.cuh" || f.name == "mma.cuh" ||
        f.name == "attention_mma.cuh" || f.name == "attention_bwd_mma.cuh") {
      continue;
    }
    all += "// ---- runtime/" + std::string(f.name) + " ----\n" + std::string(f.text);
  }
  EXPECT_EQ(library, all);
  EXPECT_EQ(library.find("attentionFwdBlock"), std::string::npos);
  EXPECT_EQ(library.find("AttentionFwdParams"), std::string::npos);
  EXPECT_EQ(library.find("mma.sync"), std::string::npos);
}

// The fused attention kernels carry their block's file and what it uses (types, math, random),
// not the reductions', and name their pass, dtype and head dim; odd head dims have no kernel. The
// bf16 / f16 forward is the tensor-core one (mma.cuh, attention_mma.cuh), the f32 forward and
// backward the FMA ones (attention.cuh).
TEST(FusedAttentionKernelSource, CarriesAttentionAndItsDependencies) {
  GeneratedKernel g = fusedAttentionFwdKernel(DataType::BFloat16, 128);
  EXPECT_EQ(g.name, "loom_attention_fwd_mma_bf16_d128");
  for (const char* f : {"types.cuh", "math.cuh", "random.cuh", "attention_params.cuh", "mma.cuh",
                        "attention_mma.cuh"}) {
    EXPECT_NE(g.source.find("// ---- runtime/" + std::string(f)), std::string::npos) << f;
  }
  EXPECT_EQ(g.source.find("// ---- runtime/attention.cuh ----"), std::string::npos);
  EXPECT_EQ(g.source.find("runtime/block.cuh"), std::string::npos);
  EXPECT_NE(g.kernelText.find("attentionFwdMmaBlock<__nv_bfloat16, 128, false>"), std::string::npos)
      << g.kernelText;
  // With dropout, a kernel of its own; the f32 forward and the backward read the flag at run time.
  const GeneratedKernel drop = fusedAttentionFwdKernel(DataType::Float16, 64, /*dropout=*/true);
  EXPECT_EQ(drop.name, "loom_attention_fwd_mma_dropout_f16_d64");
  EXPECT_NE(drop.kernelText.find("attentionFwdMmaBlock<__half, 64, true>"), std::string::npos)
      << drop.kernelText;
  EXPECT_TRUE(fusedAttentionDropoutVariant(FusedAttentionPass::Forward, DataType::BFloat16, true));
  EXPECT_FALSE(
      fusedAttentionDropoutVariant(FusedAttentionPass::Forward, DataType::BFloat16, false));
  EXPECT_FALSE(fusedAttentionDropoutVariant(FusedAttentionPass::Forward, DataType::Float32, true));
  EXPECT_FALSE(
      fusedAttentionDropoutVariant(FusedAttentionPass::BackwardDq, DataType::Float16, true));
  EXPECT_EQ(fusedAttentionFwdKernel(DataType::Float32, 64, true).name,
            "loom_attention_fwd_f32_d64");
  EXPECT_EQ(fusedAttentionTile(FusedAttentionPass::Forward, DataType::BFloat16, 128).threads, 128);
  // Two 16-row subtiles a warp at head dim 64 without dropout, else one (attentionFwdMmaRows()).
  EXPECT_EQ(fusedAttentionTile(FusedAttentionPass::Forward, DataType::BFloat16, 64).rows, 128);
  EXPECT_EQ(fusedAttentionTile(FusedAttentionPass::Forward, DataType::BFloat16, 64, true).rows, 64);
  EXPECT_EQ(fusedAttentionTile(FusedAttentionPass::Forward, DataType::Float16, 128).rows, 64);
  EXPECT_EQ(fusedAttentionSharedBytes(FusedAttentionPass::Forward, DataType::BFloat16, 128),
            size_t(4 * 64 * (128 + 8) * 2));
  const GeneratedKernel f32 = fusedAttentionFwdKernel(DataType::Float32, 128);
  EXPECT_EQ(f32.name, "loom_attention_fwd_f32_d128");
  EXPECT_NE(f32.source.find("// ---- runtime/attention.cuh"), std::string::npos);
  EXPECT_EQ(f32.source.find("mma.sync"), std::string::npos);
  EXPECT_NE(f32.kernelText.find("attentionFwdBlock<float, 128, 32, 32, 8>"), std::string::npos)
      << f32.kernelText;
  EXPECT_EQ(f32.source.find("// ---- runtime/attention_bwd_mma.cuh"), std::string::npos);
  const GeneratedKernel dkdv32 =
      fusedAttentionKernel(FusedAttentionPass::BackwardDkDv, DataType::Float32, 64);
  EXPECT_EQ(dkdv32.name, "loom_attention_bwd_dkdv_f32_d64");
  EXPECT_NE(dkdv32.kernelText.find("(loom::AttentionBwdParams p)"), std::string::npos);
  EXPECT_NE(dkdv32.kernelText.find("attentionBwdDkDvBlock<float, 64, 32, 32, 8>"),
            std::string::npos);
  EXPECT_EQ(dkdv32.source.find("mma.sync"), std::string::npos);
  EXPECT_EQ(fusedAttentionUnsupported(DataType::Float16, 64, 64), std::nullopt);
  EXPECT_EQ(fusedAttentionUnsupported(DataType::Float16, 64, 64), std::nullopt);
  EXPECT_EQ(fusedAttentionUnsupported(DataType::Float32, 96, 96),
            "the fused attention kernel has head dims 64 and 128, not 96");
}

// The bf16 / f16 backward is the tensor-core one (attention_bwd_mma.cuh, with mma.cuh, the
// forward's tile loader and attention.cuh's backward helpers): both kernels, both head dims, their
// CTA (64 rows or keys, four warps) and shared memory (the runtime's own formulas).
TEST(FusedAttentionKernelSource, Bf16AndF16BackwardAreTheTensorCoreBlocks) {
  for (DataType dtype : {DataType::BFloat16, DataType::Float16}) {
    for (int64_t e : {64, 128}) {
      const std::string type = dtype == DataType::BFloat16 ? "__nv_bfloat16" : "__half";
      const std::string dim = std::to_string(e);
      const int64_t tile = e == 64 ? 64 : 32;  // attentionBwdMmaTile()
      for (auto pass : {FusedAttentionPass::BackwardDq, FusedAttentionPass::BackwardDkDv}) {
        const bool dq = pass == FusedAttentionPass::BackwardDq;
        const GeneratedKernel g = fusedAttentionKernel(pass, dtype, e);
        SCOPED_TRACE(g.name);
        EXPECT_TRUE(fusedAttentionUsesMma(pass, dtype));
        EXPECT_EQ(g.name, std::string("loom_attention_") + (dq ? "bwd_dq_mma_" : "bwd_dkdv_mma_") +
                              std::string(dataTypeName(dtype)) + "_d" + dim);
        const std::string block = dq ? "attentionBwdDqMmaBlock<" : "attentionBwdDkDvMmaBlock<";
        EXPECT_NE(g.kernelText.find(block + type + ", " + dim +
                                    ">(p, reinterpret_cast<unsigned char*>(loom_smem))"),
                  std::string::npos)
            << g.kernelText;
        EXPECT_NE(g.kernelText.find("__launch_bounds__(128)"), std::string::npos);
        EXPECT_EQ(g.kernelText.find("attentionBwdDqBlock<"), std::string::npos);
        EXPECT_EQ(g.kernelText.find("attentionBwdDkDvBlock<"), std::string::npos);
        for (const char* f : {"types.cuh", "random.cuh", "attention_params.cuh", "attention.cuh",
                              "mma.cuh", "attention_mma.cuh", "attention_bwd_mma.cuh"}) {
          const std::string marker = "// ---- runtime/" + std::string(f) + " ----";
          EXPECT_NE(g.source.find(marker), std::string::npos) << f;
        }
        EXPECT_NE(g.source.find("mma.sync.aligned.m16n8k16"), std::string::npos);
        EXPECT_EQ(fusedAttentionTile(pass, dtype, e).rows, 64);
        EXPECT_EQ(fusedAttentionTile(pass, dtype, e).threads, 128);
        const size_t row_bytes = size_t(e + 8) * 2;
        EXPECT_EQ(fusedAttentionSharedBytes(pass, dtype, e),
                  dq ? 4 * tile * row_bytes : (2 * 64 + 4 * tile) * row_bytes + 16 * tile);
      }
    }
  }
  // The forward's tensor-core kernel leaves the backward's file out.
  EXPECT_EQ(fusedAttentionFwdKernel(DataType::BFloat16, 64)
                .source.find("// ---- runtime/attention_bwd_mma.cuh"),
            std::string::npos);
}

// Fusion inputs are read through the load-hint helpers and fusion outputs written through the
// store-hint helpers; a global intermediate and a parameter that is both input and output keep
// plain accesses (the read-only path must never see memory the kernel writes).
TEST(KernelCodegen, CacheHintHelpersOnlyOnFusionInputsAndOutputs) {
  kir::Kernel kernel;
  kernel.indexType = DataType::Int32;  // index constants print without the LL suffix
  auto param = [&](const char* name, bool input, bool output) {
    kir::Buffer* b = kernel.createBuffer();
    b->name = name;
    b->rank = 1;
    b->isFusionInput = input;
    b->isFusionOutput = output;
    kernel.params.push_back(b);
    return b;
  };
  kir::Buffer* in = param("T0", true, false);
  kir::Buffer* out = param("T1", false, true);
  kir::Buffer* both = param("T2", true, true);
  kir::Buffer* scratch = param("T3", false, false);
  kir::Value* i = kernel.constInt(4);
  auto load = [&](const kir::Buffer* b) { return kernel.create<kir::Load>(b, i); };
  auto add = [&](kir::Value* a, kir::Value* b) {
    return kernel.create<kir::BinaryExpr>(DataType::Float32, ir::BinaryOpType::Add, a, b);
  };
  kernel.body.push_back(kernel.create<kir::VectorCopy>(scratch, i, in, i, 4));
  kernel.body.push_back(kernel.create<kir::VectorCopy>(out, i, scratch, i, 4));
  kernel.body.push_back(kernel.create<kir::VectorCopy>(both, i, both, i, 4));
  kernel.body.push_back(
      kernel.create<kir::Store>(out, i, add(add(load(in), load(scratch)), load(both))));
  kernel.body.push_back(kernel.create<kir::Store>(scratch, i, load(in)));
  kernel.body.push_back(kernel.create<kir::Store>(both, i, load(out)));
  const std::string text = generateKernel(kernel).kernelText;
  auto has = [&](const std::string& s) { return text.find(s) != std::string::npos; };
  EXPECT_TRUE(has("loom::loadVectorInput(v, &T0[4]);")) << text;
  EXPECT_TRUE(has("loom::loadVector(v, &T3[4]);")) << text;
  EXPECT_TRUE(has("loom::storeVector(&T3[4], v);")) << text;
  EXPECT_TRUE(has("loom::storeVectorOutput(&T1[4], v);")) << text;
  EXPECT_TRUE(has("loom::loadVector(v, &T2[4]);")) << text;
  EXPECT_TRUE(has("loom::storeVector(&T2[4], v);")) << text;
  EXPECT_TRUE(
      has("loom::storeOutput(&T1[4], static_cast<float>(((loom::loadInput(&T0[4]) + "
          "T3[4]) + T2[4])));"))
      << text;
  EXPECT_TRUE(has("  T3[4] = static_cast<float>(loom::loadInput(&T0[4]));")) << text;
  EXPECT_TRUE(has("  T2[4] = static_cast<float>(T1[4]);")) << text;
  EXPECT_FALSE(has("loadInput(&T1") || has("loadInput(&T2") || has("loadInput(&T3")) << text;
  EXPECT_FALSE(has("storeOutput(&T2") || has("storeOutput(&T3")) << text;
}

}  // namespace
}  // namespace loom::codegen
