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
#include "loom/ir/ir.h"
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

// A fusion nobody scheduled: no loop ID runs on blocks or threads and nothing is inlined. Its
// kernel would run every element in one thread, each intermediate a whole-tensor array on that
// thread's stack (hundreds of MB for the examples), which no GPU can launch.
bool isScheduled(const ir::Fusion& fusion) {
  for (const ir::TensorView* tv : fusion.allTvs()) {
    if (tv->computeAtPosition() > 0) return true;
    for (const ir::IterDomain* id : tv->loop()) {
      if (ir::isThreadOrBlockDim(id->parallelType())) return true;
    }
  }
  return false;
}

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
  LOOM_CHECK(isScheduled(*fusion), a.file,
             " is not scheduled (no tensor is parallelized on blocks or threads and nothing is "
             "inlined), so its kernel would run in one thread with every intermediate a "
             "whole-tensor array. 'loom codegen' prints the kernel of a hand-scheduled fusion "
             "(examples/scheduled/ has some); 'LOOM_DUMP=cuda_kernel loom run ",
             a.file, "' schedules it automatically and prints its kernels");
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
