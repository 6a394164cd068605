// The `data.*` option descriptions. Choices for data.name come from the
// data sets' facts (data_facts.h: every registered data set, no libtorch).
#include "models/facts/data_config.h"

#include "common/options.h"
#include "models/facts/data_facts.h"

namespace slowpipe::models {

void describe_options(DataConfig& cfg, slowpipe::OptionSet& opts) {
  opts.add_choice("data.name", cfg.name, dataset_facts_registry().names(),
                  "data set (see `docs/models.md`)");
  opts.add_path("data.path", cfg.path,
                "data file overriding the default (fashion-mnist: a directory); required for text");
  opts.add("data.val_fraction", cfg.val_fraction,
           "text: fraction of the windows held out for validation (the last ones)", 0.0, 0.9);
  opts.add("data.begin", cfg.begin, "first fraction of the corpus to use", 0.0, 1.0);
  opts.add("data.end", cfg.end, "end fraction of the corpus to use (exclusive)", 0.0, 1.0);
  opts.add("data.limit", cfg.limit, "max training samples (0 = all)", 0, INT64_MAX);
  opts.add("data.val_limit", cfg.val_limit, "max validation samples (0 = all)", 0, INT64_MAX);
}

}  // namespace slowpipe::models
