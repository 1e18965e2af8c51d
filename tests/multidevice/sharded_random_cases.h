// SPDX-License-Identifier: Apache-2.0
// The sharded cases of random numbers and iota (part of shardedCases, sharded_cases.h): each
// device draws its block of the unsharded draw, so its shard equals the matching slice of the
// reference's whole result (same seed and offset): sharded on an outer and an inner dim, on one
// and two mesh axes, in nvFuser's other block forms, fp32 and bf16, and through the consumers
// that use them (x * mask, dropout in a sequence-parallel block, bernoulli).
#pragma once

#include <string>
#include <vector>

#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "multidevice/shard_annotation.h"

namespace loom::multidevice::test {

/// Appends the random-number and iota cases over `d` devices (d divides 12 and 8) to `out`;
/// `Case` and `input` are sharded_cases.h's.
template <typename Case, typename InputFn>
void appendShardedRandomCases(std::vector<Case>& out, int64_t d, InputFn input) {
  using ir::DeviceMesh;
  using ir::Fusion;
  using ir::ParallelType;
  using ir::TensorView;
  const DeviceMesh mesh = DeviceMesh::arange(d);
  for (DataType dt : {DataType::Float32, DataType::BFloat16}) {
    const std::string suffix = dt == DataType::Float32 ? "Fp32" : "Bf16";
    for (int64_t dim : {0, 1}) {
      const std::string where = dim == 0 ? "Outer" : "Inner";
      // rand_like, randn_like, uniform and normal sharded like x, and a pointwise consumer.
      out.push_back({"RandomShardedOn" + where + suffix,
                     [=](Fusion& f) {
                       TensorView* x = input(f, {-1, -1}, dt);
                       shard(x, dim, mesh);
                       TensorView* r = ops::randLike(x, 11, 3);
                       TensorView* n = ops::randnLike(x, 11, 4);
                       TensorView* u = ops::uniform({8, 12}, -2.0, 3.0, 12, 0, dt);
                       TensorView* z = ops::normal({8, 12}, 1.0, 0.5, 12, 1, dt);
                       for (TensorView* t : {r, n, u, z}) shard(t, dim, mesh);
                       f.addOutput(r);
                       f.addOutput(n);
                       f.addOutput(u);
                       f.addOutput(z);
                       f.addOutput(ops::mul(x, r));
                     },
                     {{8, 12}}});
    }
    // Sequence parallelism: dropout of [b, s, e] sharded on s; the draw takes the sharding
    // from its consumers (propagate_shardings), symbolic extents.
    out.push_back({"DropoutSequenceParallel" + suffix,
                   [=](Fusion& f) {
                     TensorView* x = input(f, {-1, -1, -1}, dt);
                     shard(x, 1, mesh);
                     ops::DropoutResult r = ops::dropout(x, 0.25, 1234, 8);
                     f.addOutput(r.output);
                     f.addOutput(r.mask);
                   },
                   {{2, 24, 12}}});
  }
  // bernoulli of sharded probabilities: the draw is sharded by propagation.
  out.push_back({"BernoulliSharded",
                 [=](Fusion& f) {
                   TensorView* p = input(f, {-1, -1}, DataType::Float32);
                   shard(p, 1, mesh);
                   f.addOutput(ops::bernoulli(p, 5, 6));
                 },
                 {{4, 12}}});
  // Both mesh axes on one draw: rows on DIDy, columns on DIDx.
  out.push_back({"RandomOnTwoMeshAxes",
                 [=](Fusion& f) {
                   TensorView* x = input(f, {4, 12}, DataType::Float32);
                   const DeviceMesh m = d % 2 == 0
                                            ? DeviceMesh(mesh.devices(), {2, d / 2})
                                            : DeviceMesh(mesh.devices(), {1, d});
                   shard(x, 1, m, ParallelType::DIDx);
                   shard(x, 0, m, ParallelType::DIDy);
                   TensorView* r = ops::randLike(x, 21, 0);
                   f.addOutput(r);
                   f.addOutput(ops::add(x, r));
                 },
                 {{4, 12}}});
  // nvFuser's other block forms on the draw itself: an inner split whose outer piece is on the
  // mesh (3 rows per device, symbolic extent), and a logical dim of the mesh's extent on it.
  out.push_back({"RandomInnerSplitForm",
                 [=](Fusion& f) {
                   TensorView* x = input(f, {-1, 5}, DataType::Float32);
                   shard(x, 0, mesh);
                   TensorView* r = ops::randLike(x, 31, 2);
                   r->setDeviceMesh(mesh);
                   r->split(0, 3);  // [n/3, 3], n = 3 * d
                   r->axis(0)->parallelize(ParallelType::DIDx);
                   f.addOutput(r);
                   f.addOutput(ops::mul(x, r));
                 },
                 {{3 * d, 5}}});
  out.push_back({"RandomLogicalDimOnTheMesh",
                 [=](Fusion& f) {
                   TensorView* x = input(f, {d, 7}, DataType::BFloat16);
                   x->setDeviceMesh(mesh);
                   x->axis(0)->parallelize(ParallelType::DIDx);
                   TensorView* r = ops::randnLike(x, 32, 0);
                   r->setDeviceMesh(mesh);
                   r->axis(0)->parallelize(ParallelType::DIDx);
                   f.addOutput(r);
                 },
                 {{d, 7}}});
  // iota along a sharded dim: each device's shard continues where the previous one ends.
  for (DataType dt : {DataType::Float32, DataType::Int64}) {
    out.push_back({std::string("IotaSharded") + (dt == DataType::Float32 ? "Fp32" : "Int64"),
                   [=](Fusion& f) {
                     TensorView* x = input(f, {12}, dt);
                     shard(x, 0, mesh);
                     TensorView* io = dt == DataType::Float32
                                          ? ops::iota(12, 0.5, 2.0, dt)
                                          : ops::iota(12, int64_t(3), int64_t(5), dt);
                     shard(io, 0, mesh);
                     f.addOutput(io);
                     f.addOutput(ops::add(x, io));
                   },
                   {{12}}});
  }
}

}  // namespace loom::multidevice::test
