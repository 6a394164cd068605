// The windows of a language-model data set; see internal/window_split.h.
#include "models/torch/internal/window_split.h"

#include <algorithm>
#include <cmath>

#include "common/errors.h"

namespace slowpipe::models {

WindowSplit split_windows(int64_t n_units, const DataConfig& cfg, int64_t seq_len,
                          const std::function<std::string(int64_t, int64_t)>& too_few) {
  if (!(cfg.begin >= 0.0 && cfg.begin < cfg.end && cfg.end <= 1.0)) {
    throw UsageError("data.begin=" + std::to_string(cfg.begin) + " and data.end=" +
                     std::to_string(cfg.end) + " must satisfy 0 <= begin < end <= 1");
  }
  const auto lo = static_cast<int64_t>(std::floor(cfg.begin * static_cast<double>(n_units)));
  const auto hi = static_cast<int64_t>(std::floor(cfg.end * static_cast<double>(n_units)));
  const int64_t w = seq_len + 1;
  const int64_t n = (hi - lo) / w;
  int64_t n_val = static_cast<int64_t>(std::floor(static_cast<double>(n) * cfg.val_fraction));
  if (cfg.val_fraction > 0 && n_val == 0 && n >= 2) n_val = 1;
  const int64_t n_train_all = n - n_val;
  if (n_train_all < 1) throw UsageError(too_few(hi - lo, w));
  WindowSplit s;
  s.first = lo;
  s.n_train = cfg.limit > 0 ? std::min(cfg.limit, n_train_all) : n_train_all;
  s.n_val = cfg.val_limit > 0 ? std::min(cfg.val_limit, n_val) : n_val;
  s.val_first_window = n_train_all;
  return s;
}

}  // namespace slowpipe::models
