// SPDX-License-Identifier: Apache-2.0
// loom_fuzz: the command-line driver of the differential fuzzer (runs seeds, isolates each in a
// child process, summarizes failures by class). Usage: loom_fuzz --help.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_runner.h"

#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#endif

namespace {

using loom::fuzz::RunnerOptions;
using loom::fuzz::SeedResult;
using loom::fuzz::Verdict;
using loom::fuzz::verdictName;

constexpr int kExitSkipped = 77;

const char* kUsage = R"(loom_fuzz: differential fuzzer of Loom's automatic path

Generates random fusions with the ops API, runs each through FusionExecutorCache (outputs
poisoned) and compares every output with the reference evaluator.

  loom_fuzz --seed S [--count N] [options]   run seeds S..S+N-1 (default: --seed 1 --count 1)
  loom_fuzz --seed S --dump                  print the generated case without running it
  loom_fuzz --seeds S1,S2,... [options]      run the listed seeds (e.g. a report's failures)

Options:
  --jobs J           run J seeds at a time (each in its own child process)
  --keep-going       do not stop at the first failure
  --backend B        host (default) or cuda; cuda exits with 77 ("skipped") without a GPU
  --timeout SEC      per-seed time limit when seeds run in child processes (default 300)
  --no-fork          run seeds in this process (default for a single seed): a crash ends the run
  --report FILE      write a markdown report (summary, 3 smallest failures of each class)
  --min-steps N, --max-steps N   op-family applications per fusion (default 1 and 25)
  --family NAME=W    weight of an op family (0 disables it); repeatable
  --no-extra-runs    only the first run (no cached rerun, no resized run)
  --no-hand-schedules  no hand-edited schedules (by default a third of the one-kernel seeds
                     also run their kernel with intermediates moved to other memory types)
  --no-text-mutations  no text mutations (by default every passing seed's printed fusion is
                     mutated in its dtypes and IterTypes: the parser must reject each mismatch at
                     its line, and a retyped cast must run and match the reference exactly)
  --list-families    print the op families and their weights
  --verbose          print the full report of every failure (default: first of each class)
  --quiet            no progress lines
  --known-failures S1,S2,...   seeds of known, tracked bugs (docs/testing.md): their failures
                     are listed but do not fail the run; one that passes fails it (take it off)
Exit status: 0 all passed, 1 some seed failed, 2 bad usage, 77 skipped.
)";

struct Options {
  uint64_t seed = 1;
  uint64_t count = 1;
  std::vector<uint64_t> seeds;  // the seeds to run: seed..seed+count-1, or --seeds
  std::vector<uint64_t> knownFailures;  // --known-failures
  int jobs = 1;
  bool keepGoing = false;
  bool dump = false;
  bool noFork = false;
  bool verbose = false;
  bool quiet = false;
  double timeout = 300;
  std::string report;
  std::string backendName = "host";
  RunnerOptions runner;
  std::vector<std::string> reproArgs;  // options that change what a seed generates or runs
};

[[noreturn]] void usageError(const std::string& msg) {
  std::cerr << "loom_fuzz: " << msg << "\n(loom_fuzz --help lists the options)\n";
  std::exit(2);
}

uint64_t parseUnsigned(const std::string& s, const char* what) {
  try {
    size_t pos = 0;
    unsigned long long v = std::stoull(s, &pos, 0);
    if (pos != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    usageError(std::string("bad value for ") + what + ": '" + s + "'");
  }
}

Options parseArgs(int argc, char** argv) {
  Options o;
  bool count_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a == "--seed") {
      o.seed = parseUnsigned(value(), "--seed");
    } else if (a == "--seeds") {
      std::stringstream list(value());
      std::string item;
      while (std::getline(list, item, ',')) {
        if (!item.empty()) o.seeds.push_back(parseUnsigned(item, "--seeds"));
      }
      if (o.seeds.empty()) usageError("--seeds needs at least one seed");
    } else if (a == "--count") {
      o.count = parseUnsigned(value(), "--count");
      count_given = true;
    } else if (a == "--jobs" || a == "-j") {
      o.jobs = int(std::max<uint64_t>(1, parseUnsigned(value(), "--jobs")));
    } else if (a == "--known-failures") {
      std::stringstream list(value());
      std::string item;
      while (std::getline(list, item, ',')) {
        if (!item.empty()) o.knownFailures.push_back(parseUnsigned(item, "--known-failures"));
      }
    } else if (a == "--keep-going") {
      o.keepGoing = true;
    } else if (a == "--dump") {
      o.dump = true;
    } else if (a == "--backend") {
      o.backendName = value();
      if (o.backendName == "host") {
        o.runner.backend = loom::exec::Backend::Host;
      } else if (o.backendName == "cuda") {
        o.runner.backend = loom::exec::Backend::Cuda;
        o.reproArgs.push_back("--backend cuda");
      } else {
        usageError("--backend must be host or cuda");
      }
    } else if (a == "--timeout") {
      o.timeout = double(parseUnsigned(value(), "--timeout"));
    } else if (a == "--no-fork") {
      o.noFork = true;
    } else if (a == "--report") {
      o.report = value();
    } else if (a == "--min-steps") {
      std::string v = value();
      o.runner.generator.minSteps = int64_t(parseUnsigned(v, "--min-steps"));
      o.reproArgs.push_back("--min-steps " + v);
    } else if (a == "--max-steps") {
      std::string v = value();
      o.runner.generator.maxSteps = int64_t(parseUnsigned(v, "--max-steps"));
      o.reproArgs.push_back("--max-steps " + v);
    } else if (a == "--family") {
      std::string v = value();
      auto eq = v.find('=');
      if (eq == std::string::npos) usageError("--family takes NAME=WEIGHT");
      std::string name = v.substr(0, eq);
      bool known = false;
      for (const auto& f : loom::fuzz::opFamilies()) known = known || f.name == name;
      if (!known) usageError("unknown op family '" + name + "' (see --list-families)");
      try {
        o.runner.generator.familyWeights[name] = std::stod(v.substr(eq + 1));
      } catch (const std::exception&) {
        usageError("bad weight in --family " + v);
      }
      o.reproArgs.push_back("--family " + v);
    } else if (a == "--no-text-mutations") {
      o.runner.textMutations = false;
      o.reproArgs.push_back("--no-text-mutations");
    } else if (a == "--no-hand-schedules") {
      o.runner.handSchedules = false;
      o.reproArgs.push_back("--no-hand-schedules");
    } else if (a == "--no-extra-runs") {
      o.runner.extraRuns = false;
      o.reproArgs.push_back("--no-extra-runs");
    } else if (a == "--list-families") {
      for (const auto& f : loom::fuzz::opFamilies()) {
        std::printf("%-18s weight %4g  %s%s\n", std::string(f.name).c_str(), f.weight,
                    f.implemented ? "" : "[not implemented] ", std::string(f.covers).c_str());
      }
      std::exit(0);
    } else if (a == "--verbose" || a == "-v") {
      o.verbose = true;
    } else if (a == "--quiet" || a == "-q") {
      o.quiet = true;
    } else {
      usageError("unknown argument '" + a + "'");
    }
  }
  if (o.runner.generator.minSteps > o.runner.generator.maxSteps || o.runner.generator.maxSteps < 1) {
    usageError("--min-steps must be at most --max-steps, and --max-steps at least 1");
  }
  if (!count_given) o.count = 1;
  if (o.count == 0) usageError("--count must be at least 1");
  if (o.seeds.empty()) {
    for (uint64_t s = o.seed; s < o.seed + o.count; ++s) o.seeds.push_back(s);
  } else if (count_given) {
    usageError("--seeds and --count do not go together");
  }
  o.count = o.seeds.size();
  return o;
}

std::string reproCommand(const Options& o, const char* argv0, uint64_t seed) {
  std::string cmd = std::string(argv0) + " --seed " + std::to_string(seed);
  for (const std::string& a : o.reproArgs) cmd += " " + a;
  return cmd;
}

// ---- Results through a pipe ----------------------------------------------------------------

void putU64(std::string& b, uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); }
void putStr(std::string& b, const std::string& s) {
  putU64(b, s.size());
  b += s;
}

std::string encode(const SeedResult& r) {
  std::string b;
  putU64(b, r.seed);
  putU64(b, uint64_t(r.verdict));
  putU64(b, uint64_t(r.numExprs));
  putU64(b, uint64_t(r.kernels));
  uint64_t secs;
  std::memcpy(&secs, &r.seconds, 8);
  putU64(b, secs);
  putStr(b, r.failureClass);
  putStr(b, r.error);
  putStr(b, r.report);
  putStr(b, r.schedulers);
  putU64(b, r.features.size());
  for (const std::string& f : r.features) putStr(b, f);
  return b;
}

bool decode(const std::string& b, SeedResult& r) {
  size_t pos = 0;
  auto u64 = [&](uint64_t& v) {
    if (pos + 8 > b.size()) return false;
    std::memcpy(&v, b.data() + pos, 8);
    pos += 8;
    return true;
  };
  auto str = [&](std::string& s) {
    uint64_t n;
    if (!u64(n) || pos + n > b.size()) return false;
    s.assign(b, pos, n);
    pos += n;
    return true;
  };
  uint64_t verdict, exprs, kernels, secs, nfeat;
  if (!u64(r.seed) || !u64(verdict) || !u64(exprs) || !u64(kernels) || !u64(secs)) return false;
  r.verdict = Verdict(verdict);
  r.numExprs = int64_t(exprs);
  r.kernels = int64_t(kernels);
  std::memcpy(&r.seconds, &secs, 8);
  if (!str(r.failureClass) || !str(r.error) || !str(r.report) || !str(r.schedulers)) return false;
  if (!u64(nfeat)) return false;
  r.features.resize(nfeat);
  for (std::string& f : r.features) {
    if (!str(f)) return false;
  }
  return pos == b.size();
}

void writeAll(int fd, const std::string& b) {
  size_t done = 0;
  while (done < b.size()) {
    ssize_t n = ::write(fd, b.data() + done, b.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += size_t(n);
  }
}

// ---- Running seeds -------------------------------------------------------------------------

SeedResult runGuarded(uint64_t seed, const RunnerOptions& opts) {
  try {
    return loom::fuzz::runSeed(seed, opts);
  } catch (const std::exception& e) {
    SeedResult r;
    r.seed = seed;
    r.verdict = Verdict::LoomError;
    r.failureClass = "runner: " + loom::fuzz::classifyException(e);
    r.error = e.what();
    return r;
  }
}

struct Worker {
  pid_t pid;
  int fd;
  uint64_t seed;
  std::string buf;
  std::chrono::steady_clock::time_point start;
  bool killed = false;
};

class Batch {
 public:
  Batch(const Options& o, const char* argv0) : o_(o), argv0_(argv0) {}

  int run();

 private:
  void spawn(uint64_t seed);
  void finished(Worker& w, int status);
  void record(SeedResult r);
  void progress(bool force);
  void summary();
  void writeReport();
  std::string seedRange() const {
    const auto& s = o_.seeds;
    bool consecutive = true;
    for (size_t i = 1; i < s.size(); ++i) consecutive = consecutive && s[i] == s[i - 1] + 1;
    if (consecutive) return std::to_string(s.front()) + ".." + std::to_string(s.back());
    return std::to_string(s.size()) + " listed seeds";
  }

  const Options& o_;
  const char* argv0_;
  std::vector<Worker> workers_;
  std::vector<SeedResult> failures_;
  std::vector<uint64_t> known_failed_;  // --known-failures seeds that failed
  std::vector<uint64_t> fixed_known_;   // --known-failures seeds that passed
  std::map<std::string, int64_t> feature_counts_;
  std::map<std::string, int64_t> scheduler_counts_;
  uint64_t done_ = 0;
  uint64_t passed_ = 0;
  bool stop_ = false;
  std::map<std::string, int64_t> shown_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_progress_ = start_;
  double seed_seconds_ = 0;
};

void Batch::spawn(uint64_t seed) {
  int fds[2];
  if (::pipe(fds) != 0) {
    std::perror("loom_fuzz: pipe");
    std::exit(2);
  }
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("loom_fuzz: fork");
    std::exit(2);
  }
  if (pid == 0) {
    ::close(fds[0]);
    SeedResult r = runGuarded(seed, o_.runner);
    writeAll(fds[1], encode(r));
    ::close(fds[1]);
    std::cout.flush();
    std::cerr.flush();
    ::_exit(0);
  }
  ::close(fds[1]);
  workers_.push_back({pid, fds[0], seed, {}, std::chrono::steady_clock::now()});
}

void Batch::finished(Worker& w, int status) {
  SeedResult r;
  if (!w.killed && WIFEXITED(status) && WEXITSTATUS(status) == 0 && decode(w.buf, r)) {
    record(std::move(r));
    return;
  }
  r = SeedResult{};
  r.seed = w.seed;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - w.start).count();
  if (w.killed) {
    r.verdict = Verdict::Timeout;
    r.failureClass = "timeout (over " + std::to_string(int(o_.timeout)) + " s)";
  } else if (WIFSIGNALED(status)) {
    r.verdict = Verdict::Crash;
    r.failureClass = std::string("crash: signal ") + std::to_string(WTERMSIG(status)) + " (" +
                     strsignal(WTERMSIG(status)) + ")";
  } else {
    r.verdict = Verdict::Crash;
    r.failureClass = "crash: worker exited with status " +
                     std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  r.error = r.failureClass;
  r.report = "rerun the seed alone (it then runs in-process) to see where it fails\n";
  record(std::move(r));
}

void Batch::record(SeedResult r) {
  ++done_;
  seed_seconds_ += r.seconds;
  for (const std::string& f : r.features) ++feature_counts_[f];
  if (!r.schedulers.empty()) ++scheduler_counts_[r.schedulers];
  const bool known = std::find(o_.knownFailures.begin(), o_.knownFailures.end(), r.seed) !=
                     o_.knownFailures.end();
  if (r.verdict == Verdict::Pass && known) fixed_known_.push_back(r.seed);
  if (r.verdict != Verdict::Pass && known) {
    std::cout << "seed " << r.seed << ": known failure: " << r.failureClass << "\n";
    known_failed_.push_back(r.seed);
    progress(false);
    return;
  }
  if (r.verdict == Verdict::Pass) {
    ++passed_;
    if (o_.verbose) {
      std::cout << "seed " << r.seed << ": pass (" << r.numExprs << " exprs, " << r.kernels
                << " kernels: " << r.schedulers << ", " << r.seconds << " s)\n";
    }
    progress(false);
    return;
  }
  const bool first_of_class = shown_[r.failureClass]++ == 0;
  if (o_.verbose || first_of_class || o_.count == 1) {
    std::cout << "\n==== seed " << r.seed << " (" << verdictName(r.verdict)
              << "): " << r.failureClass << "\n"
              << r.error << (r.error.empty() || r.error.back() == '\n' ? "" : "\n") << r.report
              << "reproduce: " << reproCommand(o_, argv0_, r.seed) << "\n";
  } else {
    std::cout << "seed " << r.seed << ": " << r.failureClass << "\n";
  }
  std::cout.flush();
  failures_.push_back(std::move(r));
  if (!o_.keepGoing) stop_ = true;
  progress(false);
}

void Batch::progress(bool force) {
  if (o_.quiet || o_.count == 1) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && std::chrono::duration<double>(now - last_progress_).count() < 30) return;
  last_progress_ = now;
  std::cerr << "[" << done_ << "/" << o_.count << "] " << failures_.size() << " failed, "
            << int(std::chrono::duration<double>(now - start_).count()) << " s\n";
}

int Batch::run() {
  size_t next = 0;
  const size_t end = o_.seeds.size();
  const bool fork_mode = !o_.noFork && o_.count > 1;
  if (!fork_mode) {
    for (; next < end && !stop_; ++next) record(runGuarded(o_.seeds[next], o_.runner));
  } else {
    while ((!stop_ && next < end) || !workers_.empty()) {
      while (!stop_ && next < end && int(workers_.size()) < o_.jobs) spawn(o_.seeds[next++]);
      std::vector<pollfd> pfds;
      for (const Worker& w : workers_) pfds.push_back({w.fd, POLLIN, 0});
      ::poll(pfds.data(), pfds.size(), 200);
      for (size_t i = 0; i < workers_.size();) {
        Worker& w = workers_[i];
        bool eof = false;
        if (pfds.size() > i && (pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
          char chunk[65536];
          ssize_t n = ::read(w.fd, chunk, sizeof chunk);
          if (n > 0) {
            w.buf.append(chunk, size_t(n));
          } else if (n == 0 || errno != EINTR) {
            eof = true;
          }
        }
        if (!eof && !w.killed &&
            std::chrono::duration<double>(std::chrono::steady_clock::now() - w.start).count() >
                o_.timeout) {
          ::kill(w.pid, SIGKILL);
          w.killed = true;
        }
        if (eof) {
          int status = 0;
          while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
          }
          ::close(w.fd);
          Worker done = std::move(w);
          workers_.erase(workers_.begin() + long(i));
          pfds.erase(pfds.begin() + long(i));
          finished(done, status);
          continue;
        }
        ++i;
      }
    }
  }
  progress(true);
  summary();
  if (!known_failed_.empty()) {
    std::cout << "known failures (tracked bugs, docs/testing.md), still failing:";
    for (uint64_t s : known_failed_) std::cout << " " << s;
    std::cout << "\n";
  }
  if (!fixed_known_.empty()) {
    std::cout << "known failures that now pass (take them off --known-failures):";
    for (uint64_t s : fixed_known_) std::cout << " " << s;
    std::cout << "\n";
  }
  if (!o_.report.empty()) writeReport();
  return failures_.empty() && fixed_known_.empty() ? 0 : 1;
}

// Failures of one class, smallest fusions first.
std::map<std::string, std::vector<const SeedResult*>> byClass(const std::vector<SeedResult>& f) {
  std::map<std::string, std::vector<const SeedResult*>> out;
  for (const SeedResult& r : f) out[r.failureClass].push_back(&r);
  for (auto& [cls, v] : out) {
    std::stable_sort(v.begin(), v.end(), [](const SeedResult* a, const SeedResult* b) {
      return a->numExprs < b->numExprs;
    });
  }
  return out;
}

void Batch::summary() {
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  int64_t generator_bugs = 0;
  for (const SeedResult& r : failures_) generator_bugs += r.verdict == Verdict::GeneratorBug;
  std::cout << "\nloom_fuzz: " << done_ << " of " << o_.count << " seeds run (" << seedRange()
            << ", backend " << o_.backendName << "): " << passed_
            << " passed, " << failures_.size() << " failed (" << generator_bugs
            << " generator bugs) in " << int(wall) << " s wall, " << int(seed_seconds_)
            << " s in seeds\n";
  if (!failures_.empty()) {
    auto classes = byClass(failures_);
    std::vector<std::pair<std::string, std::vector<const SeedResult*>>> sorted(classes.begin(),
                                                                               classes.end());
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
    std::cout << "failures by class (smallest seeds first):\n";
    for (const auto& [cls, v] : sorted) {
      std::cout << "  " << v.size() << "  " << cls << "\n     seeds:";
      for (size_t i = 0; i < v.size() && i < 8; ++i) {
        std::cout << " " << v[i]->seed << " (" << v[i]->numExprs << " exprs)";
      }
      if (v.size() > 8) std::cout << " ...";
      std::cout << "\n";
    }
    std::cout << "reproduce one: " << reproCommand(o_, argv0_, sorted.front().second.front()->seed)
              << "\n";
  }
  if (o_.count > 1 && !o_.quiet) {
    std::cout << "covered:";
    for (const auto& [f, n] : feature_counts_) std::cout << " " << f << " " << n << ";";
    std::cout << "\nschedulers (first run):";
    for (const auto& [s, n] : scheduler_counts_) std::cout << " " << s << " " << n << ";";
    std::cout << "\n";
  }
}

void Batch::writeReport() {
  std::ofstream out(o_.report);
  if (!out) {
    std::cerr << "loom_fuzz: cannot write " << o_.report << "\n";
    return;
  }
  out << "# loom_fuzz report\n\n"
      << "Seeds " << seedRange() << " (" << done_ << " run), backend "
      << o_.backendName << ": " << passed_ << " passed, " << failures_.size() << " failed.\n\n";
  auto classes = byClass(failures_);
  std::vector<std::pair<std::string, std::vector<const SeedResult*>>> sorted(classes.begin(),
                                                                             classes.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  out << "| count | class | smallest seeds |\n|---|---|---|\n";
  for (const auto& [cls, v] : sorted) {
    out << "| " << v.size() << " | `" << cls << "` |";
    for (size_t i = 0; i < v.size() && i < 3; ++i) out << " " << v[i]->seed;
    out << " |\n";
  }
  for (const auto& [cls, v] : sorted) {
    out << "\n## " << cls << " (" << v.size() << ")\n\nAll seeds:";
    for (const SeedResult* r : v) out << " " << r->seed;
    out << "\n";
    for (size_t i = 0; i < v.size() && i < 3; ++i) {
      const SeedResult& r = *v[i];
      out << "\n### seed " << r.seed << " (" << r.numExprs << " exprs)\n\n`"
          << reproCommand(o_, argv0_, r.seed) << "`\n\n```\n"
          << r.error << (r.error.empty() || r.error.back() == '\n' ? "" : "\n") << r.report
          << "```\n";
    }
  }
}

// Whether CUDA works, asked in a child process so that this one never initializes the driver
// (children forked after that could not use it).
bool probeCuda(std::string& reason) {
#ifdef LOOM_HAVE_CUDA_BACKEND
  int fds[2];
  if (::pipe(fds) != 0) return false;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string r = loom::cuda::cudaAvailable() ? "" : loom::cuda::unavailableReason();
    writeAll(fds[1], r.empty() ? std::string("ok") : r);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char chunk[4096];
  ssize_t n;
  while ((n = ::read(fds[0], chunk, sizeof chunk)) > 0) out.append(chunk, size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (out == "ok") return true;
  reason = out.empty() ? "the CUDA probe failed" : out;
  return false;
#else
  reason = "built without the CUDA backend";
  return false;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parseArgs(argc, argv);
  if (o.dump) {
    for (uint64_t s : o.seeds) {
      try {
        std::cout << loom::fuzz::dumpSeed(s, o.runner) << "\n";
      } catch (const std::exception& e) {
        std::cout << "seed " << s << ": the generator failed: " << e.what() << "\n";
        return 1;
      }
    }
    return 0;
  }
  if (o.runner.backend == loom::exec::Backend::Cuda) {
    std::string reason;
    if (!probeCuda(reason)) {
      std::cout << "loom_fuzz: skipped: no GPU for the cuda backend: " << reason << "\n";
      return kExitSkipped;
    }
  }
  Batch batch(o, argv[0]);
  return batch.run();
}
