// SPDX-License-Identifier: Apache-2.0
// `loom codegen FILE.fus [--arch sm_90] [--sms N]`: lower a scheduled fusion, print its CUDA
// kernel, and compile it with NVRTC to report registers and spills (no GPU needed). --sms names the
// target's multiprocessor count, as the executor has it from the device (launch bounds of
// one-wave grids; codegen::launchBounds).
#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "loom/codegen/kernel_codegen.h"
#include "loom/lower/lower.h"
#include "tools/loom/commands.h"
#include "tools/loom/run_device.h"

namespace loom::tools {

namespace {

struct CodegenArgs {
  std::string file;
  std::string arch = "sm_90";
  std::string sms;
  CLI::Option* smsOption = nullptr;  ///< given: sms holds the count
};

int runCodegen(const CodegenArgs& a) {
  codegen::CodegenOptions options;
  if (a.smsOption->count() > 0) {
    char* end = nullptr;
    const long long n = std::strtoll(a.sms.c_str(), &end, 10);
    LOOM_CHECK(*end == '\0' && n > 0,
               "--sms needs a positive multiprocessor count such as 132, got '", a.sms, "'");
    options.multiprocessors = n;
  }
  auto fusion = readFusionFile(a.file);
  auto kernel = lower::lowerFusion(*fusion);
  codegen::GeneratedKernel g = codegen::generateKernel(*kernel, options);
  std::cout << g.kernelText;  // before compiling: printed even when NVRTC then refuses it
  std::cout << nvrtcReport(g, a.arch);
  return 0;
}

}  // namespace

Command addCodegenCommand(CLI::App& loom) {
  auto a = std::make_shared<CodegenArgs>();
  CLI::App* cmd = loom.add_subcommand(
      "codegen",
      "print the CUDA kernel of a scheduled fusion; compile it with NVRTC (no GPU needed)");
  cmd->add_option("FILE.fus", a->file, "a scheduled fusion (examples/scheduled/ has some)")
      ->required()
      ->type_name("");
  cmd->add_option("--arch", a->arch, "the GPU architecture NVRTC compiles for (default sm_90)")
      ->type_name("sm_XY");
  a->smsOption =
      cmd->add_option("--sms", a->sms,
                      "the target's multiprocessor count, as the executor has it from the device "
                      "(launch bounds of one-wave grids); default: unknown, no launch bounds")
          ->type_name("N");
  cmd->footer("Example: loom codegen examples/scheduled/block_sum.fus --arch sm_90 --sms 132");
  return {cmd, [a] { return runCodegen(*a); }};
}

}  // namespace loom::tools
