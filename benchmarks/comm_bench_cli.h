// SPDX-License-Identifier: Apache-2.0
// loom_comm_bench's command line and the arithmetic of its report (sizes, bandwidths), kept free
// of MPI and CUDA so that the parts that decide what a figure means are plain functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom::bench::comm {

enum class Collective { Allgather, Allreduce, ReduceScatter };

/// "allgather", "allreduce", "reduce_scatter" (the names of --collectives and of the rows).
std::string_view collectiveName(Collective c);

struct Options {
  /// --sizes: explicit sizes in bytes (the per-rank size defined in sizeMeaning()); when empty the
  /// sweep runs from minBytes to maxBytes by `factor`.
  std::vector<int64_t> sizes;
  int64_t minBytes = 1024;             ///< --min
  std::optional<int64_t> maxBytes;     ///< --max; unset: 64 MiB on the host, 1 GiB on GPUs
  int64_t factor = 2;                  ///< --factor: 2 or 4
  int64_t iters = 20;                  ///< --iters: timed repetitions per way and size
  int64_t warmup = 5;                  ///< --warmup: untimed calls per way and size
  int64_t batch = 0;                   ///< --batch: calls per repetition; 0 picks it per size
  std::string backend = "host";        ///< --backend host|cuda
  std::string cudaTransport = "auto";  ///< --cuda-transport auto|nccl|staged
  std::string csvPath;                 ///< --csv FILE (rank 0 writes it)
  std::vector<Collective> collectives = {Collective::Allgather, Collective::Allreduce,
                                         Collective::ReduceScatter};
  /// --corrupt-for-test: flips one element of Loom's output before the check, so the self-test
  /// can see that a wrong result fails the run.
  bool corruptForTest = false;
  bool help = false;
};

/// Parses argv[1..] ("--opt VALUE" or "--opt=VALUE"); throws bench::UsageError.
Options parseArgs(const std::vector<std::string>& args);
std::string usage();

/// "64K", "64KiB", "1M", "1MiB", "1G" or plain bytes.
int64_t parseBytes(const std::string& text);
/// 1024 -> "1 KiB", 1536 -> "1536 B", 67108864 -> "64 MiB".
std::string bytesLabel(int64_t bytes);

/// The sizes to run: --sizes, else min, min * factor, ... up to max (included when reached).
std::vector<int64_t> sweep(const Options& options, int64_t defaultMax);

/// A size rounded down so that every rank's block is a whole number of `itemSize`-byte elements
/// (at least one per rank).
int64_t roundToRanks(int64_t bytes, int64_t ranks, int64_t itemSize);

/// What "bytes" means for each collective (nccl-tests' "size"), for the report's header.
std::string sizeMeaning();

/// nccl-tests' bus-bandwidth factor: (n-1)/n for allgather and reduce-scatter, 2(n-1)/n for
/// allreduce; 0 for one rank.
double busFactor(Collective c, int64_t ranks);
/// Algorithm bandwidth in GB/s (10^9 bytes per second) of `bytes` in `us` microseconds.
double algbwGBps(int64_t bytes, double us);

}  // namespace loom::bench::comm
