// SPDX-License-Identifier: Apache-2.0
// What loom_bench reports: summary statistics, a small JSON writer and a text table.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom::bench {

/// Median, min, mean and max of a sample; all zero for an empty one.
struct Summary {
  double median = 0;
  double min = 0;
  double mean = 0;
  double max = 0;
};
Summary summarize(std::span<const double> values);

/// Achieved bandwidth in TB/s (10^12 bytes per second) of moving `bytes` in `us` microseconds.
double tbps(int64_t bytes, double us);

/// Writes JSON text with commas and nesting handled; misuse (a value where a key is due, an
/// unbalanced end) is a LOOM_ASSERT failure. Non-finite numbers are written as null.
class JsonWriter {
 public:
  JsonWriter& beginObject();
  JsonWriter& endObject();
  JsonWriter& beginArray();
  JsonWriter& endArray();
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(double d);
  JsonWriter& value(int64_t i);
  JsonWriter& value(int i) { return value(int64_t(i)); }
  JsonWriter& value(bool b);
  JsonWriter& null();
  /// An array of numbers on one line.
  JsonWriter& array(std::span<const double> values);
  JsonWriter& array(std::span<const int64_t> values);

  /// The text; every object and array must be closed.
  std::string str() const;

 private:
  struct Level {
    bool object;
    bool first = true;
    bool keyPending = false;
  };
  void beforeValue();
  void newline();

  std::string out_;
  std::vector<Level> stack_;
};

/// "a \"b\"\n" -> "\"a \\\"b\\\"\\n\"".
std::string jsonQuote(std::string_view s);

/// Aligned text table: the first `textColumns` columns left-aligned, the rest right-aligned.
std::string formatTable(const std::vector<std::string>& headers,
                        const std::vector<std::vector<std::string>>& rows, size_t textColumns = 2);

/// "2026-12-02T10:00:00+00:00" for now.
std::string utcTimestamp();

/// printf-style "%.<digits>f" of a number.
std::string fixed(double value, int digits);

}  // namespace loom::bench
