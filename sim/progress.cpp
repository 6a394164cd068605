// Progress display: an updating terminal line, or periodic plain lines.
#include "sim/internal/progress.h"

#include <unistd.h>

#include <cstdio>

namespace slowpipe::sim {

Progress::Progress(const std::string& mode, int64_t total_steps, double plain_every_s)
    : total_(total_steps), plain_every_s_(plain_every_s) {
  quiet_ = mode == "none";
  line_ = mode == "line" || (mode == "auto" && isatty(fileno(stderr)));
  start_ = last_print_ = std::chrono::steady_clock::now();
}

std::string Progress::render(int64_t step, int epoch, double loss, const std::string& extra) const {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(step) / elapsed : 0.0;
  const double eta = rate > 0 ? static_cast<double>(total_ - step) / rate : 0.0;
  char buf[256];
  std::snprintf(buf, sizeof buf, "step %lld/%lld  epoch %d  loss %.4f  %.2f steps/s  ETA %.0fs",
                static_cast<long long>(step), static_cast<long long>(total_), epoch, loss, rate,
                eta);
  std::string s = buf;
  if (!extra.empty()) s += "  " + extra;
  return s;
}

void Progress::update(int64_t step, int epoch, double loss, const std::string& extra) {
  if (quiet_) return;
  const auto now = std::chrono::steady_clock::now();
  if (line_) {
    if (std::chrono::duration<double>(now - last_print_).count() < 0.2 && step != total_) return;
    std::fprintf(stderr, "\r\033[K%s", render(step, epoch, loss, extra).c_str());
    std::fflush(stderr);
    dirty_ = true;
    last_print_ = now;
    return;
  }
  if (std::chrono::duration<double>(now - last_print_).count() >= plain_every_s_ ||
      step == total_ || step == 1) {
    std::fprintf(stderr, "%s\n", render(step, epoch, loss, extra).c_str());
    last_print_ = now;
  }
}

void Progress::message(const std::string& text) {
  if (quiet_) return;
  if (dirty_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s\n", text.c_str());
  dirty_ = false;
}

void Progress::finish() {
  if (dirty_) std::fprintf(stderr, "\n");
  dirty_ = false;
}

}  // namespace slowpipe::sim
