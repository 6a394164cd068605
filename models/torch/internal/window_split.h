// How a language-model data set cuts its stream (bytes or tokens) into
// windows of seq_len + 1 units and splits them: the range [data.begin,
// data.end) of the stream, windows laid end to end from its start, the last
// data.val_fraction of them (at least one when there are two or more) for
// validation, then data.limit and data.val_limit applied. Shared by the byte
// text (text_dataset.cpp) and the token shards (token_dataset.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "models/facts/data_config.h"

namespace slowpipe::models {

struct WindowSplit {
  int64_t first = 0;             // the unit where window 0 starts
  int64_t n_train = 0;           // training windows kept (data.limit applied)
  int64_t n_val = 0;             // validation windows kept (data.val_limit applied)
  int64_t val_first_window = 0;  // index of the first validation window
};

// `too_few(units, window)`: the message when the range's `units` hold no
// training window of `window` units (a UsageError); bad data.begin/data.end
// are refused too.
WindowSplit split_windows(int64_t n_units, const DataConfig& cfg, int64_t seq_len,
                          const std::function<std::string(int64_t, int64_t)>& too_few);

}  // namespace slowpipe::models
