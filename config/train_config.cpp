// Gathers every module's configuration keys for `slowpipe train`; the keys a
// resumed run may change.
#include "config/train_config.h"

namespace slowpipe::config {

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

bool resume_key_may_differ(const std::string& key) {
  // run.out: the same log may be named by another path when resuming; the
  // dist.* keys but the world size and the backend (its collectives may sum
  // in another order) say where and how a resumed run's ranks meet.
  return key == "run.progress" || key == "run.flush_every" ||
         key.rfind("run.checkpoint_", 0) == 0 || key == "run.out" || key == "run.overwrite" ||
         key == "dist.rank" || key == "dist.master_addr" || key == "dist.master_port" ||
         key == "dist.timeout" || key == "dist.verbose";
}

netmodel::NetConfig timed_net(const TrainConfig& cfg) {
  netmodel::NetConfig net = cfg.net;
  if (net.compute.model == "shaped" && net.compute.dtype.empty()) {
    // The run's own dtype: bf16 trains under autocast with fp32 weights
    // (docs/compute-clock.md, "Autocast").
    net.compute.dtype = cfg.run.dtype;
    if (cfg.run.dtype == "bf16" && net.compute.autocast.empty()) net.compute.autocast = "on";
  }
  return net;
}

}  // namespace slowpipe::config
