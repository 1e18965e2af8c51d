// SPDX-License-Identifier: Apache-2.0
// File stamps, PATH lookup and the remembered tool probes (support/tool_identity.h).
#include "loom/support/tool_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include "loom/support/options.h"
#include "loom/support/private_dir.h"
#include "loom/support/private_file.h"
#include "loom/support/sha256.h"

namespace loom {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kTag = "loom tool probe 1\n";
constexpr size_t kDigestHex = 64;

}  // namespace

std::optional<std::string> fileStamp(const fs::path& file) {
  std::error_code ec;
  const fs::path real = fs::canonical(file, ec);
  if (ec) return std::nullopt;
  struct stat st {};
  if (::stat(real.c_str(), &st) != 0) return std::nullopt;
  const int64_t mtime = int64_t(st.st_mtim.tv_sec) * 1000000000 + int64_t(st.st_mtim.tv_nsec);
  return real.string() + " " + std::to_string(st.st_size) + " " + std::to_string(mtime) + " " +
         std::to_string(st.st_ino);
}

std::optional<fs::path> findExecutable(std::string_view name) {
  if (name.empty()) return std::nullopt;
  auto executable = [](const fs::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string_view::npos) {
    fs::path p(name);
    if (!executable(p)) return std::nullopt;
    return p;
  }
  const std::string path = getEnv("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find(':', begin);
    if (end == std::string::npos) end = path.size();
    // An empty entry is the working directory, as for execvp.
    const fs::path dir = end == begin ? fs::path(".") : fs::path(path.substr(begin, end - begin));
    const fs::path candidate = dir / std::string(name);
    if (executable(candidate)) return candidate;
    begin = end + 1;
  }
  return std::nullopt;
}

std::string rememberedProbe(const fs::path& dir, std::string_view what, const std::string& identity,
                            const std::function<std::string()>& probe, bool* probed,
                            const std::function<bool(const std::string&)>& valid) {
  if (probed != nullptr) *probed = false;
  const std::string header = std::string(what) + "\n" + identity + "\n";
  const fs::path file = dir / (std::string(what) + "-" + sha256Hex(header).substr(0, 32));
  std::string bytes;
  // File layout: the tag, the SHA-256 of the rest, the kind and identity lines, the answer.
  if (!readPrivateFile(file, bytes).has_value() && !privateDirectoryProblem(dir).has_value()) {
    std::string_view rest(bytes);
    if (rest.substr(0, kTag.size()) == kTag) {
      rest.remove_prefix(kTag.size());
      if (rest.size() >= kDigestHex &&
          rest.substr(0, kDigestHex) == sha256Hex(rest.substr(kDigestHex))) {
        rest.remove_prefix(kDigestHex);
        if (rest.substr(0, header.size()) == header) {
          std::string answer(rest.substr(header.size()));
          if (!valid || valid(answer)) return answer;
        }
      }
    }
  }
  std::string answer = probe();
  if (probed != nullptr) *probed = true;
  if (!createPrivateDirectories(dir).has_value() && !privateDirectoryProblem(dir).has_value()) {
    const std::string body = header + answer;
    (void)writeFileAtomically(file, std::string(kTag) + sha256Hex(body) + body);
  }
  return answer;
}

}  // namespace loom
