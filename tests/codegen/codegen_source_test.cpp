// SPDX-License-Identifier: Apache-2.0
// Which parts of the runtime library generated kernel sources carry (fewer bytes for NVRTC).
#include <gtest/gtest.h>

#include <string>

#include "loom/codegen/kernel_codegen.h"
#include "loom/codegen/runtime_library.h"

namespace loom::codegen {
namespace {

// A kernel without grid reductions leaves grid.cuh out and keeps every other runtime file, in
// order, followed by the kernel text.
TEST(RuntimeLibraryFor, OmitsGridFileWithoutGridReductions) {
  kir::Kernel kernel;
  GeneratedKernel g = generateKernel(kernel);
  EXPECT_EQ(g.source.find("runtime/grid.cuh"), std::string::npos);
  EXPECT_EQ(g.source.find("gridSync("), std::string::npos);
  size_t last = 0;
  for (const RuntimeFile& f : runtimeLibraryFiles()) {
    if (f.name == "grid.cuh") continue;
    size_t at = g.source.find("// ---- runtime/" + std::string(f.name) + " ----");
    ASSERT_NE(at, std::string::npos) << f.name;
    EXPECT_GE(at, last) << f.name << " is out of dependency order";
    last = at;
  }
  ASSERT_GE(g.source.size(), g.kernelText.size());
  EXPECT_EQ(g.source.substr(g.source.size() - g.kernelText.size()), g.kernelText);
  EXPECT_LT(g.source.size(), runtimeLibrarySource().size() + g.kernelText.size());
}

// A kernel with grid-reduction scratch gets the whole library, grid.cuh included.
TEST(RuntimeLibraryFor, KeepsGridFileForGridReductions) {
  kir::Kernel kernel;
  kernel.gridScratch.push_back({"gw0", "float", 4, false});
  kernel.gridScratch.push_back({"gs0", "unsigned", 4, true});
  std::string library = runtimeLibraryFor(kernel);
  EXPECT_NE(library.find("runtime/grid.cuh"), std::string::npos);
  EXPECT_EQ(library, std::string(runtimeLibrarySource()));
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
  kernel.body.push_back(kernel.create<kir::Store>(
      out, i, add(add(load(in), load(scratch)), load(both))));
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
  EXPECT_TRUE(has("loom::storeOutput(&T1[4], static_cast<float>(((loom::loadInput(&T0[4]) + "
                  "T3[4]) + T2[4])));"))
      << text;
  EXPECT_TRUE(has("  T3[4] = static_cast<float>(loom::loadInput(&T0[4]));")) << text;
  EXPECT_TRUE(has("  T2[4] = static_cast<float>(T1[4]);")) << text;
  EXPECT_FALSE(has("loadInput(&T1") || has("loadInput(&T2") || has("loadInput(&T3")) << text;
  EXPECT_FALSE(has("storeOutput(&T2") || has("storeOutput(&T3")) << text;
}

}  // namespace
}  // namespace loom::codegen
