// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: any bytes through the .fus parser. A parse either fails with a UserError or
// gives a fusion whose printed form parses back to the same text (the printer's canonical form).
// Anything else (a crash, a sanitizer report, another exception, a text that does not round-trip)
// is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "loom/ir/fusion.h"
#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<loom::ir::Fusion> fusion;
  try {
    fusion = loom::ir::parseFusion(text);
  } catch (const loom::UserError&) {
    return 0;  // rejected with a message: fine
  }
  const std::string printed = loom::ir::printFusion(*fusion);
  std::unique_ptr<loom::ir::Fusion> again;
  try {
    again = loom::ir::parseFusion(printed, "<printed>");
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "the printed form does not parse: %s\n%s", e.what(), printed.c_str());
    std::abort();
  }
  if (loom::ir::printFusion(*again) != printed) {
    std::fprintf(stderr, "print(parse(print(f))) != print(f):\n%s", printed.c_str());
    std::abort();
  }
  return 0;
}
