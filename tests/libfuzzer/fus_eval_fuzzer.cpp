// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: bytes -> .fus parser -> ir::verify and ir::verifyRunnable -> the reference
// evaluator on small random inputs. Every stage may reject its input with a UserError (verify's
// InternalErrors, an IR contract the text breaks, count as rejections too: FusionExecutorCache
// turns them into UserErrors); an InternalError from the evaluator, another exception, a crash or
// a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ir/parser.h"
#include "loom/ir/verifier.h"
#include "loom/support/error.h"
#include "loom/tensor/tensor.h"

namespace {

// Symbolic sizes take small values picked from the text's hash, so one input always evaluates
// the same way; a tensor of more than this many elements is not evaluated.
constexpr int64_t kMaxElements = 1 << 16;

uint64_t hashOf(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (char c : text) h = (h ^ uint8_t(c)) * 1099511628211ull;
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<loom::ir::Fusion> fusion;
  try {
    fusion = loom::ir::parseFusion(text);
    loom::ir::verify(*fusion);
    loom::ir::verifyRunnable(*fusion);
  } catch (const loom::Error&) {
    return 0;
  }
  uint64_t h = hashOf(text);
  std::vector<loom::eval::Argument> args;
  for (loom::ir::Val* in : fusion->inputs()) {
    if (auto* tv = in->dynCast<loom::ir::TensorView>()) {
      std::vector<int64_t> shape;
      int64_t numel = 1;
      for (loom::ir::IterDomain* id : loom::ir::TensorDomain::noReductions(tv->logical())) {
        const loom::ir::Scalar* e = id->logicalExtent();
        int64_t n = e->constInt().value_or(int64_t(h % 5));
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        if (n < 0 || n > kMaxElements) return 0;
        numel *= n;
        if (numel > kMaxElements) return 0;
        shape.push_back(n);
      }
      loom::Tensor t = loom::Tensor::empty(shape, tv->dtype());
      loom::fillRandom(t, h);
      args.emplace_back(std::move(t));
    } else {
      auto* s = in->as<loom::ir::Scalar>();
      int64_t v = int64_t(h % 5);
      h = h * 6364136223846793005ull + 1442695040888963407ull;
      if (loom::isFloatingType(s->dtype())) {
        args.emplace_back(double(v) * 0.5);
      } else if (loom::isBooleanType(s->dtype())) {
        args.emplace_back(v % 2 == 1);
      } else {
        args.emplace_back(v);
      }
    }
  }
  try {
    (void)loom::eval::evaluateFusion(*fusion, args);
  } catch (const loom::UserError&) {
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "the reference evaluator failed with a non-user error: %s\n", e.what());
    std::abort();
  }
  return 0;
}
