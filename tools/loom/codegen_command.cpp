// SPDX-License-Identifier: Apache-2.0
// `loom codegen FILE.fus [--arch sm_90] [--sms N]`: lower a scheduled fusion, print its CUDA
// kernel, and compile it with NVRTC to report registers and spills (no GPU needed). --sms names the
// target's multiprocessor count, as the executor has it from the device (launch bounds of
// one-wave grids; codegen::launchBounds).
#include <cstdlib>
#include <iostream>

#include "loom/codegen/kernel_codegen.h"
#include "loom/ir/parser.h"
#include "loom/lower/lower.h"
#include "tools/loom/commands.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/nvrtc.h"
#endif

namespace loom::tools {

int codegenCommand(const std::vector<std::string>& args) {
  std::string file;
  std::string arch = "sm_90";
  codegen::CodegenOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--arch") {
      LOOM_CHECK(i + 1 < args.size(), "--arch needs a value such as sm_90");
      arch = args[++i];
    } else if (args[i] == "--sms") {
      LOOM_CHECK(i + 1 < args.size(), "--sms needs a multiprocessor count such as 132");
      const std::string& v = args[++i];
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      LOOM_CHECK(!v.empty() && *end == '\0' && n > 0,
                 "--sms needs a positive multiprocessor count such as 132, got '", v, "'");
      options.multiprocessors = n;
    } else if (!args[i].empty() && args[i][0] == '-') {
      LOOM_THROW("unknown option '", args[i], "' for codegen (expected --arch or --sms)");
    } else {
      LOOM_CHECK(file.empty(), "codegen takes one file, got '", file, "' and '", args[i], "'");
      file = args[i];
    }
  }
  LOOM_CHECK(!file.empty(), "usage: loom codegen FILE.fus [--arch sm_90] [--sms N]");
  auto fusion = ir::parseFusionFile(file);
  auto kernel = lower::lowerFusion(*fusion);
  codegen::GeneratedKernel g = codegen::generateKernel(*kernel, options);
  std::cout << g.kernelText;
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (!cuda::nvrtcAvailable()) {
    std::cout << "// NVRTC not available (" << cuda::nvrtcUnavailableReason()
              << "): not compiled\n";
    return 0;
  }
  cuda::NvrtcCompiler compiler;
  cuda::CompileResult r = compiler.compile(g.source, cuda::CompileOptions::forArch(arch, g.name));
  for (const cuda::KernelResources& k : r.kernels) {
    std::cout << "// " << r.arch << " " << k.function << ": " << k.registers << " registers, "
              << k.spillStores << " bytes spill stores, " << k.spillLoads
              << " bytes spill loads, " << k.stackFrame << " bytes stack\n";
  }
#else
  std::cout << "// built without the CUDA backend: not compiled with NVRTC\n";
#endif
  return 0;
}

}  // namespace loom::tools
