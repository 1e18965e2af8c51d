// SPDX-License-Identifier: Apache-2.0
// posix_spawnp + waitpid, with the output redirected by file actions (no shell, no quoting).
#include "backend/host/process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "loom/support/error.h"

extern char** environ;

namespace loom::backend::host {

std::vector<std::string> splitWords(std::string_view text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::strchr(" \t\r\n", text[i]) != nullptr) ++i;
    const size_t start = i;
    while (i < text.size() && std::strchr(" \t\r\n", text[i]) == nullptr) ++i;
    if (i > start) words.emplace_back(text.substr(start, i - start));
  }
  return words;
}

std::string ProcessResult::describe() const {
  if (!startError.empty()) return startError;
  if (WIFEXITED(waitStatus)) return detail::concat("exit status ", WEXITSTATUS(waitStatus));
  if (WIFSIGNALED(waitStatus)) {
    return detail::concat("killed by signal ", WTERMSIG(waitStatus), " (",
                          strsignal(WTERMSIG(waitStatus)), ")");
  }
  return detail::concat("wait status ", waitStatus);
}

namespace {

/// Owns posix_spawn_file_actions_t.
struct FileActions {
  posix_spawn_file_actions_t actions;
  FileActions() { posix_spawn_file_actions_init(&actions); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions); }
};

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

ProcessResult runProcess(const std::vector<std::string>& argv, const std::filesystem::path& workDir,
                         const std::filesystem::path& logPath, std::string* output) {
  LOOM_ASSERT(!argv.empty(), "runProcess needs a program");
  ProcessResult result;
  // Every descriptor opened here is close-on-exec, so processes other threads start at the same
  // time do not inherit them; dup2 in the child clears the flag on the copies it makes.
  int outFd = -1, readFd = -1;
  if (!logPath.empty()) {
    outFd = ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (outFd < 0) {
      result.startError =
          detail::concat("cannot create ", logPath.string(), ": ", std::strerror(errno));
      return result;
    }
  } else {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      result.startError = detail::concat("cannot create a pipe: ", std::strerror(errno));
      return result;
    }
    readFd = fds[0];
    outFd = fds[1];
  }
  FileActions fa;
  posix_spawn_file_actions_addopen(&fa.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa.actions, outFd, 1);
  if (!logPath.empty()) {
    posix_spawn_file_actions_adddup2(&fa.actions, outFd, 2);
  } else {
    posix_spawn_file_actions_addopen(&fa.actions, 2, "/dev/null", O_WRONLY, 0);
  }
  if (!workDir.empty()) posix_spawn_file_actions_addchdir_np(&fa.actions, workDir.c_str());

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &fa.actions, nullptr, args.data(), environ);
  closeFd(outFd);
  if (rc != 0) {
    closeFd(readFd);
    result.startError = detail::concat("cannot start '", argv[0], "': ", std::strerror(rc));
    return result;
  }
  if (readFd >= 0) {
    char buf[4096];
    while (true) {
      const ssize_t n = ::read(readFd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (output) output->append(buf, size_t(n));
    }
    closeFd(readFd);
  }
  while (::waitpid(pid, &result.waitStatus, 0) < 0) {
    if (errno != EINTR) {
      result.startError =
          detail::concat("waiting for '", argv[0], "' failed: ", std::strerror(errno));
      break;
    }
  }
  return result;
}

std::string displayCommand(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789-_=+./,:@%") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace loom::backend::host
