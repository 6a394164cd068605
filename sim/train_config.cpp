// Gathers every module's configuration keys for `slowpipe train`.
#include "sim/train_config.h"

namespace slowpipe::sim {

void describe_options(TrainConfig& c, OptionSet& o) {
  describe_options(c.run, o);
  describe_options(c.dist, o);
  describe_options(c.pipeline, o);
  describe_options(c.optim, o);
  describe_options(c.eval, o);
  models::describe_options(c.model, o);
  models::describe_options(c.data, o);
  compressors::describe_options(c.compress, o);
  netmodel::describe_options(c.net, o);
}

}  // namespace slowpipe::sim
