// SPDX-License-Identifier: Apache-2.0
// LOOM_DUMP output in a Python process: the dump sink (support/dump_sink.h) is a buffer, and the
// Python layer takes what a call wrote when the call returns and writes it to sys.stdout, or
// keeps it for the FusionDefinition that asked to capture it (python/loom/_dumps.py). So
// redirect_stdout, pytest's capture and Jupyter see the dumps.
//
// The buffer is taken by Python, never written to Python from here: dumps are written while the
// GIL is released (a run compiles without it), by whichever thread works, and a thread that
// waited for the GIL there could wait for a thread that holds it and waits for this one.
#include <nanobind/stl/string.h>

#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>

#include "bindings.h"
#include "loom/support/dump_sink.h"

namespace loom::python {

namespace {

/// A streambuf that appends to a string under a lock (dumps may come from several threads).
class LockedBuffer : public std::streambuf {
 public:
  std::string take() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string out;
    out.swap(text_);
    return out;
  }

 protected:
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    std::lock_guard<std::mutex> lock(mutex_);
    text_.push_back(traits_type::to_char_type(ch));
    return ch;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard<std::mutex> lock(mutex_);
    text_.append(s, size_t(n));
    return n;
  }

 private:
  std::mutex mutex_;
  std::string text_;
};

// Leaked on purpose: C++ code may dump while the interpreter shuts down, after module teardown.
LockedBuffer& buffer() {
  static auto* b = new LockedBuffer();
  return *b;
}

std::ostream& bufferStream() {
  static auto* os = new std::ostream(&buffer());
  return *os;
}

}  // namespace

void bindDumps(nb::module_& m) {
  setDumpSink(&bufferStream());
  m.def(
      "_take_dump_output", [] { return buffer().take(); },
      "What Loom's dumps (LOOM_DUMP, execute(_enable_options=...)) wrote since the last call, "
      "and empties the buffer.");
}

}  // namespace loom::python
