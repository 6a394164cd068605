// DataConfig: the `data.*` keys (module-owned configuration, see common/options.h).
//
// data.begin / data.end select a contiguous fraction of the corpus (text: of
// its bytes; tokens: of the shards' tokens; fashion-mnist: of its training
// images), so that one run can pretrain on GCIDE [0, 0.8) and another
// fine-tune on [0.9, 1.0), a distinct text.
#pragma once

#include <cstdint>
#include <string>

namespace slowpipe {
class OptionSet;
}

namespace slowpipe::models {

struct DataConfig {
  std::string name = "gcide";  // registry name: gcide | fashion-mnist | text | tokens
  // Overrides the default file (directory for fashion-mnist); required for
  // text; a glob of shards for tokens.
  std::string path;
  // text, tokens: last fraction of the windows held out (fashion-mnist: t10k file)
  double val_fraction = 0.1;
  double begin = 0.0;     // first fraction of the corpus used
  double end = 1.0;       // end fraction of the corpus used (exclusive)
  int64_t limit = 0;      // max training samples, 0 = all
  int64_t val_limit = 0;  // max validation samples, 0 = all
};

// Binds data.name, data.path, data.val_fraction, data.begin, data.end,
// data.limit, data.val_limit.
void describe_options(DataConfig& cfg, slowpipe::OptionSet& opts);

}  // namespace slowpipe::models
