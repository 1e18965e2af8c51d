// SPDX-License-Identifier: Apache-2.0
// loom_comm_bench's command line, sizes and bandwidth arithmetic (comm_bench_cli.h).
#include "benchmarks/comm_bench_cli.h"

#include <algorithm>
#include <cctype>
#include <charconv>
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

std::string usage() {
  return "usage: mpirun -np N loom_comm_bench [--backend host|cuda] [--cuda-transport "
         "auto|nccl|staged]\n"
         "                 [--sizes LIST | --min SIZE --max SIZE --factor 2|4] [--iters N]\n"
         "                 [--warmup N] [--batch N] [--collectives LIST] [--csv FILE]\n"
         "\n"
         "Times allgather, allreduce (sum) and reduce-scatter (sum) of fp32 data three ways in\n"
         "the same run, interleaved: raw (MPI, or NCCL, called directly), Loom's Communicator,\n"
         "and a sharded Loom fusion run through FusionExecutorCache. Every way's result is\n"
         "checked once per size (exit status 1 on a mismatch). Rank 0 prints the table.\n"
         "benchmarks/README.md says what each column means.\n"
         "\n"
         "  --backend B          host: CPU ranks, host tensors (default); cuda: GPU ranks\n"
         "  --cuda-transport T   auto (NCCL with a GPU per rank, staged through the host when\n"
         "                       ranks share a GPU), nccl (also a team of one), staged\n"
         "  --sizes LIST         sizes in bytes, e.g. 1K,1M,64M (K, M, G: powers of 1024)\n"
         "  --min SIZE           smallest size of the sweep (default 1K)\n"
         "  --max SIZE           largest (default 64M on the host, 1G on GPUs; lowered when\n"
         "                       memory would not hold it)\n"
         "  --factor F           the sweep's step, 2 or 4 (default 2)\n"
         "  --iters N            timed repetitions per way and size (default 20)\n"
         "  --warmup N           untimed calls per way and size (default 5)\n"
         "  --batch N            calls per repetition (default: picked per size so that a\n"
         "                       repetition of the raw way lasts about 2 ms, 1 to 1000)\n"
         "  --collectives LIST   allgather,allreduce,reduce_scatter (default: all three)\n"
         "  --csv FILE           every figure, one row per collective and size\n"
         "  --corrupt-for-test   corrupt one element of Loom's output (checks the checker)\n";
}

Options parseArgs(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    bool inlineValue = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      inlineValue = true;
    }
    auto next = [&]() -> std::string {
      if (inlineValue) return value;
      if (i + 1 >= args.size()) throw UsageError(arg + " expects a value");
      return args[++i];
    };
    if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else if (arg == "--sizes") {
      o.sizes.clear();
      for (const std::string& s : splitList(next())) o.sizes.push_back(parseBytes(s));
      if (o.sizes.empty()) throw UsageError("--sizes expects at least one size");
    } else if (arg == "--min") {
      o.minBytes = parseBytes(next());
    } else if (arg == "--max") {
      o.maxBytes = parseBytes(next());
    } else if (arg == "--factor") {
      o.factor = parseCount(arg, next(), 2);
      if (o.factor != 2 && o.factor != 4) throw UsageError("--factor expects 2 or 4");
    } else if (arg == "--iters") {
      o.iters = parseCount(arg, next(), 1);
    } else if (arg == "--warmup") {
      o.warmup = parseCount(arg, next(), 0);
    } else if (arg == "--batch") {
      o.batch = parseCount(arg, next(), 1);
    } else if (arg == "--backend") {
      o.backend = oneOf(arg, next(), {"host", "cuda"});
    } else if (arg == "--cuda-transport") {
      o.cudaTransport = oneOf(arg, next(), {"auto", "nccl", "staged"});
    } else if (arg == "--csv") {
      o.csvPath = next();
    } else if (arg == "--collectives") {
      o.collectives.clear();
      for (const std::string& name : splitList(next())) {
        const std::string n = oneOf(arg, name, {"allgather", "allreduce", "reduce_scatter"});
        o.collectives.push_back(n == "allgather"   ? Collective::Allgather
                                : n == "allreduce" ? Collective::Allreduce
                                                   : Collective::ReduceScatter);
      }
      if (o.collectives.empty()) throw UsageError("--collectives expects at least one name");
    } else if (arg == "--corrupt-for-test") {
      o.corruptForTest = true;
    } else {
      throw UsageError("unknown argument '" + args[i] + "' (--help lists the options)");
    }
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
