// SPDX-License-Identifier: Apache-2.0
// Summary statistics, the JSON writer and the text table of loom_bench.
#include "benchmarks/bench_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "loom/support/error.h"

namespace loom::bench {

Summary summarize(std::span<const double> values) {
  Summary s;
  if (values.empty()) return s;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  s.median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  s.min = sorted.front();
  s.max = sorted.back();
  double total = 0;
  for (double v : sorted) total += v;
  s.mean = total / double(n);
  return s;
}

double tbps(int64_t bytes, double us) { return us > 0 ? double(bytes) / (us * 1e-6) / 1e12 : 0; }

std::string jsonQuote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static const char* hex = "0123456789abcdef";
          out += "\\u00";
          out += hex[(c >> 4) & 0xf];
          out += hex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

void JsonWriter::newline() {
  out_ += '\n';
  out_.append(2 * stack_.size(), ' ');
}

// Emits the comma and indentation a value needs where it is; inside an object the key already did.
void JsonWriter::beforeValue() {
  if (stack_.empty()) {
    LOOM_ASSERT(out_.empty(), "JsonWriter: a second top-level value");
    return;
  }
  Level& top = stack_.back();
  if (top.object) {
    LOOM_ASSERT(top.keyPending, "JsonWriter: a value inside an object needs a key first");
    top.keyPending = false;
    return;
  }
  if (!top.first) out_ += ',';
  top.first = false;
  newline();
}

JsonWriter& JsonWriter::key(std::string_view name) {
  LOOM_ASSERT(!stack_.empty() && stack_.back().object, "JsonWriter: key '", name,
              "' outside an object");
  Level& top = stack_.back();
  LOOM_ASSERT(!top.keyPending, "JsonWriter: key '", name, "' right after another key");
  if (!top.first) out_ += ',';
  top.first = false;
  newline();
  out_ += jsonQuote(name) + ": ";
  top.keyPending = true;
  return *this;
}

JsonWriter& JsonWriter::beginObject() {
  beforeValue();
  out_ += '{';
  stack_.push_back({true});
  return *this;
}

JsonWriter& JsonWriter::beginArray() {
  beforeValue();
  out_ += '[';
  stack_.push_back({false});
  return *this;
}

JsonWriter& JsonWriter::endObject() {
  LOOM_ASSERT(!stack_.empty() && stack_.back().object && !stack_.back().keyPending,
              "JsonWriter: endObject without a matching beginObject or after a dangling key");
  bool empty = stack_.back().first;
  stack_.pop_back();
  if (!empty) newline();
  out_ += '}';
  return *this;
}

JsonWriter& JsonWriter::endArray() {
  LOOM_ASSERT(!stack_.empty() && !stack_.back().object,
              "JsonWriter: endArray without a matching beginArray");
  bool empty = stack_.back().first;
  stack_.pop_back();
  if (!empty) newline();
  out_ += ']';
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  beforeValue();
  out_ += jsonQuote(s);
  return *this;
}

namespace {

// Shortest text that reads back as the same double; JSON has no NaN or infinity.
std::string number(double d) {
  if (!std::isfinite(d)) return "null";
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  LOOM_ASSERT(ec == std::errc(), "to_chars failed");
  return std::string(buf, ptr);
}

}  // namespace

JsonWriter& JsonWriter::value(double d) {
  beforeValue();
  out_ += number(d);
  return *this;
}

JsonWriter& JsonWriter::value(int64_t i) {
  beforeValue();
  out_ += std::to_string(i);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  beforeValue();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  beforeValue();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::array(std::span<const double> values) {
  beforeValue();
  out_ += '[';
  for (size_t i = 0; i < values.size(); ++i) out_ += (i ? ", " : "") + number(values[i]);
  out_ += ']';
  return *this;
}

JsonWriter& JsonWriter::array(std::span<const int64_t> values) {
  beforeValue();
  out_ += '[';
  for (size_t i = 0; i < values.size(); ++i) out_ += (i ? ", " : "") + std::to_string(values[i]);
  out_ += ']';
  return *this;
}

std::string JsonWriter::str() const {
  LOOM_ASSERT(stack_.empty(), "JsonWriter: ", stack_.size(), " unclosed object(s)/array(s)");
  return out_ + "\n";
}

std::string formatTable(const std::vector<std::string>& headers,
                        const std::vector<std::vector<std::string>>& rows, size_t textColumns) {
  std::vector<size_t> widths(headers.size());
  for (size_t c = 0; c < headers.size(); ++c) widths[c] = headers[c].size();
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size() && c < widths.size(); ++c) {
      widths[c] = std::max(widths[c], r[c].size());
    }
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < widths.size(); ++c) {
      std::string cell = c < cells.size() ? cells[c] : "";
      std::string pad(widths[c] - std::min(widths[c], cell.size()), ' ');
      if (c) out += "  ";
      out += c < textColumns ? cell + pad : pad + cell;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::vector<std::string> rule;
  for (size_t w : widths) rule.emplace_back(w, '-');
  std::string out = line(headers) + line(rule);
  for (const auto& r : rows) out += line(r);
  return out;
}

std::string utcTimestamp() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S+00:00", &tm);
  return buf;
}

std::string fixed(double value, int digits) { return fmt::format("{:.{}f}", value, digits); }

}  // namespace loom::bench
