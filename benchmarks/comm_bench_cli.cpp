// SPDX-License-Identifier: Apache-2.0
// loom_comm_bench's command line, sizes and bandwidth arithmetic (comm_bench_cli.h).
#include "benchmarks/comm_bench_cli.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <memory>
#include <sstream>

#include "benchmarks/bench_cli.h"  // UsageError, splitList, parseCount

namespace loom::bench::comm {
namespace {

std::string oneOf(const std::string& option, const std::string& value,
                  std::initializer_list<const char*> allowed) {
  std::string names;
  for (const char* a : allowed) {
    if (value == a) return value;
    names += (names.empty() ? "" : ", ") + std::string(a);
  }
  throw UsageError(option + " expects one of " + names + ", got '" + value + "'");
}

}  // namespace

std::string_view collectiveName(Collective c) {
  switch (c) {
    case Collective::Allgather: return "allgather";
    case Collective::Allreduce: return "allreduce";
    case Collective::ReduceScatter: return "reduce_scatter";
  }
  return "?";
}

int64_t parseBytes(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) throw UsageError("a size expects a number of bytes, got '" + text + "'");
  std::string unit = text.substr(digits);
  for (char& ch : unit) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  int64_t scale = 1;
  if (unit.empty() || unit == "B") {
    scale = 1;
  } else if (unit == "K" || unit == "KB" || unit == "KIB") {
    scale = int64_t(1) << 10;
  } else if (unit == "M" || unit == "MB" || unit == "MIB") {
    scale = int64_t(1) << 20;
  } else if (unit == "G" || unit == "GB" || unit == "GIB") {
    scale = int64_t(1) << 30;
  } else {
    throw UsageError("unknown size unit in '" + text + "' (K, M, G: powers of 1024)");
  }
  const int64_t n = parseCount("a size", text.substr(0, digits), 1);
  if (n > (int64_t(1) << 40) / scale) throw UsageError("size '" + text + "' is too large");
  return n * scale;
}

std::string bytesLabel(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  int64_t v = bytes;
  while (u < 3 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + " " + units[u];
}

std::vector<int64_t> sweep(const Options& options, int64_t defaultMax) {
  if (!options.sizes.empty()) return options.sizes;
  const int64_t max = options.maxBytes.value_or(defaultMax);
  std::vector<int64_t> out;
  for (int64_t s = options.minBytes; s <= max; s *= options.factor) out.push_back(s);
  return out;
}

int64_t roundToRanks(int64_t bytes, int64_t ranks, int64_t itemSize) {
  const int64_t unit = ranks * itemSize;
  return std::max(unit, bytes / unit * unit);
}

std::string sizeMeaning() {
  return "bytes is nccl-tests' size, the largest buffer on each rank: allreduce the buffer each "
         "rank reduces in place; allgather the gathered output (each rank contributes bytes/n); "
         "reduce_scatter the input (each rank keeps bytes/n of the sum)";
}

double busFactor(Collective c, int64_t ranks) {
  if (ranks <= 1) return 0;
  const double n = double(ranks);
  return c == Collective::Allreduce ? 2 * (n - 1) / n : (n - 1) / n;
}

double algbwGBps(int64_t bytes, double us) { return us > 0 ? double(bytes) / us / 1e3 : 0; }

namespace {

struct RawOptions {
  std::string sizes, min, max, factor, iters, warmup, batch, backend, transport, collectives;
};

std::unique_ptr<CLI::App> makeApp(Options& o, RawOptions& raw) {
  auto app = std::make_unique<CLI::App>(
      "Times allgather, allreduce (sum) and reduce-scatter (sum) of fp32 data three ways in the\n"
      "same run, interleaved: raw (MPI, or NCCL, called directly), Loom's Communicator, and a\n"
      "sharded Loom fusion run through FusionExecutorCache. Every way's result is checked once\n"
      "per size (exit status 1 on a mismatch). Rank 0 prints the table. benchmarks/README.md\n"
      "says what each column means. Run it as: mpirun -np N loom_comm_bench [OPTIONS]",
      "loom_comm_bench");
  app->set_help_flag();
  app->get_formatter()->column_width(26);
  app->add_flag("-h,--help", o.help, "print this message and exit")->disable_flag_override();
  app->add_option("--backend", raw.backend,
                  "host: CPU ranks, host tensors (default); cuda: GPU ranks")
      ->type_name("host|cuda");
  app->add_option("--cuda-transport", raw.transport,
                  "auto (NCCL with a GPU per rank, staged through the host when ranks share a "
                  "GPU), nccl (also a team of one), staged")
      ->type_name("auto|nccl|staged");
  app->add_option("--sizes", raw.sizes, "sizes in bytes, e.g. 1K,1M,64M (K, M, G: powers of 1024)")
      ->type_name("LIST");
  app->add_option("--min", raw.min, "smallest size of the sweep (default 1K)")->type_name("SIZE");
  app->add_option("--max", raw.max,
                  "largest (default 64M on the host, 1G on GPUs; lowered when memory would not "
                  "hold it)")
      ->type_name("SIZE");
  app->add_option("--factor", raw.factor, "the sweep's step, 2 or 4 (default 2)")->type_name("F");
  app->add_option("--iters", raw.iters, "timed repetitions per way and size (default 20)")
      ->type_name("N");
  app->add_option("--warmup", raw.warmup, "untimed calls per way and size (default 5)")
      ->type_name("N");
  app->add_option("--batch", raw.batch,
                  "calls per repetition (default: picked per size so that a repetition of the "
                  "raw way lasts about 2 ms, 1 to 1000)")
      ->type_name("N");
  app->add_option("--collectives", raw.collectives,
                  "allgather,allreduce,reduce_scatter (default: all three)")
      ->type_name("LIST");
  app->add_option("--csv", o.csvPath, "every figure, one row per collective and size")
      ->type_name("FILE");
  app->add_flag("--corrupt-for-test", o.corruptForTest,
                "corrupt one element of Loom's output (checks the checker)")
      ->disable_flag_override();
  return app;
}

}  // namespace

std::string usage() {
  Options o;
  RawOptions raw;
  return makeApp(o, raw)->help();
}

Options parseArgs(const std::vector<std::string>& args) {
  Options o;
  RawOptions raw;
  std::unique_ptr<CLI::App> app = makeApp(o, raw);
  parseCommandLine(*app, args);
  if (app->count("--sizes") > 0) {
    for (const std::string& s : splitList(raw.sizes)) o.sizes.push_back(parseBytes(s));
    if (o.sizes.empty()) throw UsageError("--sizes expects at least one size");
  }
  if (app->count("--min") > 0) o.minBytes = parseBytes(raw.min);
  if (app->count("--max") > 0) o.maxBytes = parseBytes(raw.max);
  if (app->count("--factor") > 0) {
    o.factor = parseCount("--factor", raw.factor, 2);
    if (o.factor != 2 && o.factor != 4) throw UsageError("--factor expects 2 or 4");
  }
  if (app->count("--iters") > 0) o.iters = parseCount("--iters", raw.iters, 1);
  if (app->count("--warmup") > 0) o.warmup = parseCount("--warmup", raw.warmup, 0);
  if (app->count("--batch") > 0) o.batch = parseCount("--batch", raw.batch, 1);
  if (app->count("--backend") > 0) o.backend = oneOf("--backend", raw.backend, {"host", "cuda"});
  if (app->count("--cuda-transport") > 0) {
    o.cudaTransport = oneOf("--cuda-transport", raw.transport, {"auto", "nccl", "staged"});
  }
  if (app->count("--collectives") > 0) {
    o.collectives.clear();
    for (const std::string& name : splitList(raw.collectives)) {
      const std::string n =
          oneOf("--collectives", name, {"allgather", "allreduce", "reduce_scatter"});
      o.collectives.push_back(n == "allgather"   ? Collective::Allgather
                              : n == "allreduce" ? Collective::Allreduce
                                                 : Collective::ReduceScatter);
    }
    if (o.collectives.empty()) throw UsageError("--collectives expects at least one name");
  }
  if (o.maxBytes && *o.maxBytes < o.minBytes) {
    throw UsageError("--max (" + std::to_string(*o.maxBytes) + ") is below --min (" +
                     std::to_string(o.minBytes) + ")");
  }
  if (o.cudaTransport != "auto" && o.backend != "cuda") {
    throw UsageError("--cuda-transport needs --backend cuda");
  }
  return o;
}

}  // namespace loom::bench::comm
