// SPDX-License-Identifier: Apache-2.0
// The hand-written kernels the CUDA backend tests compile; every file in kernels/ is on the list
// that the "compiles for sm_90 without spills" test checks.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "loom/support/private_dir.h"

namespace loom::cuda::test {

inline std::filesystem::path kernelDir() { return LOOM_CUDA_TEST_KERNEL_DIR; }

/// Every kernel source used by the tests, sorted by name.
inline std::vector<std::filesystem::path> allKernels() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(kernelDir())) {
    if (e.path().extension() == ".cu") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string readKernel(const std::string& name) { return readFile(kernelDir() / name); }

/// A fresh, empty folder removed when the object goes.
class TempDir {
 public:
  TempDir()
      : path_(*makePrivateTempDirectory(std::filesystem::temp_directory_path(), "loom-cuda-test-")) {}
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace loom::cuda::test
