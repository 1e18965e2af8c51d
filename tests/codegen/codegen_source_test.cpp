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

}  // namespace
}  // namespace loom::codegen
