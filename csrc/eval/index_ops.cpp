// SPDX-License-Identifier: Apache-2.0
// Indexing ops of the reference evaluator (index_ops.h) and their out-of-range message.
#include "eval/index_ops.h"

#include "loom/eval/index_check.h"
#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom::eval {

std::string indexOutOfRangeMessage(std::string_view op, std::string_view index, int64_t value,
                                   std::string_view indexed, int64_t dim, int64_t size) {
  return ::loom::detail::concat(op, ": index value ", value, " in ", index,
                                " is out of range for dimension ", dim, " of ", indexed, " (size ",
                                size, "); indices must lie in [0, ", size, ")",
                                value < 0 ? " (negative ones are not wrapped)" : "");
}

namespace detail {
namespace {

std::vector<int64_t> stridesOf(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

// Calls f(linear, coords) for every element of `shape` in row-major order.
template <typename F>
void forEach(const std::vector<int64_t>& shape, F f) {
  const int64_t n = numel(shape);
  std::vector<int64_t> c(shape.size(), 0);
  for (int64_t lin = 0; lin < n; ++lin) {
    f(lin, c);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
  }
}

// The index value at `lin`, checked against the extent of `dim` of `indexed`.
int64_t checkedIndex(const DenseRef& index, int64_t lin, const DenseRef& indexed, int64_t dim,
                     const std::string& op) {
  const auto v = int64_t(index.data[size_t(lin)]);
  const int64_t size = indexed.shape[size_t(dim)];
  LOOM_CHECK(v >= 0 && v < size,
             indexOutOfRangeMessage(op, index.name, v, indexed.name, dim, size));
  return v;
}

// Along the dims other than `dim`, `index` may be no larger than `data` (torch's rule).
void checkFits(const DenseRef& index, const DenseRef& data, int64_t dim, const std::string& op,
               const char* what) {
  LOOM_CHECK(index.shape.size() == data.shape.size(), op, ": the index ", index.name, " has ",
             index.shape.size(), " dims and ", what, " ", data.name, " has ", data.shape.size());
  for (size_t d = 0; d < index.shape.size(); ++d) {
    if (int64_t(d) == dim) continue;
    LOOM_CHECK(index.shape[d] <= data.shape[d], op, ": the index ", index.name, " has size ",
               index.shape[d], " at dimension ", d, " but ", what, " ", data.name, " only ",
               data.shape[d], " (sizes [", join(index.shape), "] and [", join(data.shape), "])");
  }
}

}  // namespace

std::vector<double> indexSelect(const DenseRef& lookup, const DenseRef& index, int64_t dim,
                                const std::vector<int64_t>& out_shape, const std::string& op) {
  // The index has the output's rank, size 1 off its span [dim, dim + r).
  const auto r = int64_t(out_shape.size() + 1 - lookup.shape.size());
  const std::vector<int64_t> ls = stridesOf(lookup.shape);
  const std::vector<int64_t> xs = stridesOf(index.shape);
  std::vector<double> out(size_t(numel(out_shape)));
  forEach(out_shape, [&](int64_t lin, const std::vector<int64_t>& c) {
    int64_t x = 0;
    for (size_t k = 0; k < c.size(); ++k) x += index.shape[k] == 1 ? 0 : c[k] * xs[k];
    int64_t src = checkedIndex(index, x, lookup, dim, op) * ls[size_t(dim)];
    for (size_t d = 0; d < lookup.shape.size(); ++d) {
      if (int64_t(d) < dim) src += c[d] * ls[d];
      if (int64_t(d) > dim) src += c[size_t(int64_t(d) + r - 1)] * ls[d];
    }
    out[size_t(lin)] = lookup.data[size_t(src)];
  });
  return out;
}

std::vector<double> gather(const DenseRef& lookup, const DenseRef& index, int64_t dim,
                           const std::string& op) {
  checkFits(index, lookup, dim, op, "the input");
  const std::vector<int64_t> ls = stridesOf(lookup.shape);
  std::vector<double> out(size_t(numel(index.shape)));
  forEach(index.shape, [&](int64_t lin, const std::vector<int64_t>& c) {
    int64_t src = 0;
    for (size_t d = 0; d < c.size(); ++d) {
      src += (int64_t(d) == dim ? checkedIndex(index, lin, lookup, dim, op) : c[d]) * ls[d];
    }
    out[size_t(lin)] = lookup.data[size_t(src)];
  });
  return out;
}

std::vector<double> scatter(const DenseRef& self, const DenseRef& index, const DenseRef& src,
                            int64_t dim, bool accumulate, const std::string& op) {
  checkFits(index, self, dim, op, "the input");
  LOOM_CHECK(index.shape.size() == src.shape.size(), op, ": the index ", index.name, " has ",
             index.shape.size(), " dims and the source ", src.name, " has ", src.shape.size());
  for (size_t d = 0; d < index.shape.size(); ++d) {
    LOOM_CHECK(index.shape[d] <= src.shape[d], op, ": the index ", index.name, " has size ",
               index.shape[d], " at dimension ", d, " but the source ", src.name, " only ",
               src.shape[d]);
  }
  const std::vector<int64_t> os = stridesOf(self.shape);
  const std::vector<int64_t> ss = stridesOf(src.shape);
  std::vector<double> out = self.data;
  forEach(index.shape, [&](int64_t lin, const std::vector<int64_t>& c) {
    int64_t dst = 0;
    int64_t from = 0;
    for (size_t d = 0; d < c.size(); ++d) {
      dst += (int64_t(d) == dim ? checkedIndex(index, lin, self, dim, op) : c[d]) * os[d];
      from += c[d] * ss[d];
    }
    double& o = out[size_t(dst)];
    o = accumulate ? o + src.data[size_t(from)] : src.data[size_t(from)];
  });
  return out;
}

}  // namespace detail
}  // namespace loom::eval
