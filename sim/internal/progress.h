// Progress of a long run. On a terminal: one line rewritten in place (step,
// epoch, loss, steps/s, ETA). Otherwise (logs, CI): a plain line every
// `plain_every_s` seconds and at the end. Writes to stderr so stdout stays clean.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace slowpipe::sim {

class Progress {
 public:
  // mode: auto|line|plain|none
  Progress(const std::string& mode, int64_t total_steps, double plain_every_s = 10.0);
  // `extra` is appended (e.g. "sim 12.3s").
  void update(int64_t step, int epoch, double loss, const std::string& extra = "");
  void message(const std::string& text);  // a whole line, e.g. an eval result
  void finish();

 private:
  std::string render(int64_t step, int epoch, double loss, const std::string& extra) const;
  bool line_ = false;
  bool quiet_ = false;
  int64_t total_;
  double plain_every_s_;
  bool dirty_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
};

}  // namespace slowpipe::sim
