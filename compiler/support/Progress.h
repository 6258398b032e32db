//===- Progress.h - What a long compile is doing, on the terminal ---------===//
//
// A compile that runs for more than a second shows one status line on
// stderr ("mlcc: [6/9] fuse-ops", "mlcc: code generation 40/71 functions"),
// rewritten in place and erased at the end, when stderr is a terminal.
// Nothing is printed when it is not (logs, CI), unless asked for
// (`--progress always` prints every step as its own line, at once).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace mlcc {

class Progress {
public:
  enum class Mode { Auto, Always, Never };

  explicit Progress(Mode mode = Mode::Never);
  ~Progress();
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  /// The current step; `done`/`total` add a counter when total > 0.
  void step(const std::string &what, size_t done = 0, size_t total = 0);
  /// Erases the status line (the destructor does too).
  void finish();

private:
  bool Enabled = false, Terminal = false, Shown = false;
  std::chrono::steady_clock::time_point Start, LastDraw;
  std::chrono::milliseconds Delay{1000};
  std::string Last;
};

} // namespace mlcc
