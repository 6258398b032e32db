#include "compiler/support/Progress.h"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace mlcc {

namespace {
// A compile shorter than Delay shows nothing ($MLCC_PROGRESS_DELAY_MS, 1000
// by default: tests of the status line set 0); a redraw at most this often.
constexpr auto Redraw = std::chrono::milliseconds(50);

std::chrono::milliseconds delay() {
  const char *ms = std::getenv("MLCC_PROGRESS_DELAY_MS");
  char *end = nullptr;
  long v = ms && *ms ? std::strtol(ms, &end, 10) : -1;
  return std::chrono::milliseconds(v >= 0 && end && !*end ? v : 1000);
}
} // namespace

Progress::Progress(Mode mode) : Start(std::chrono::steady_clock::now()) {
  Terminal = isatty(STDERR_FILENO) == 1;
  Enabled = mode == Mode::Always || (mode == Mode::Auto && Terminal);
  Delay = mode == Mode::Always ? std::chrono::milliseconds(0) : delay();
}

Progress::~Progress() { finish(); }

void Progress::step(const std::string &what, size_t done, size_t total) {
  if (!Enabled)
    return;
  std::string line = what;
  if (total > 0)
    line += " " + std::to_string(done) + "/" + std::to_string(total);
  auto now = std::chrono::steady_clock::now();
  if (now - Start < Delay || line == Last)
    return;
  // On a terminal one line is rewritten; repaint a counter only now and then
  // (but always its first and last value).
  bool counterStep = total > 0 && done > 0 && done < total;
  if (Terminal && Shown && counterStep && now - LastDraw < Redraw)
    return;
  if (Terminal)
    std::fprintf(stderr, "\r\033[Kmlcc: %s", line.c_str());
  else
    std::fprintf(stderr, "mlcc: %s\n", line.c_str());
  std::fflush(stderr);
  Shown = true;
  LastDraw = now;
  Last = std::move(line);
}

void Progress::finish() {
  if (Enabled && Terminal && Shown) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  Shown = false;
  Enabled = false;
}

} // namespace mlcc
