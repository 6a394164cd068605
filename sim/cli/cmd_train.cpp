// `slowpipe train`: config files, --set overrides and shortcuts -> one run.
#include <boost/program_options.hpp>
#include <iostream>

#include "common/errors.h"
#include "sim/cli/commands.h"
#include "sim/cli/config_args.h"
#include "sim/trainer.h"

namespace po = boost::program_options;

namespace slowpipe::cli {

int cmd_train(const Args& args) {
  po::options_description desc(
      "usage: slowpipe train [--config FILE]... [--set KEY=VALUE]... [shortcuts]\n\n"
      "Config files (INI) are read in order, then --set overrides; shortcuts are\n"
      "--set forms of the most used keys. Options");
  std::vector<std::string> configs, sets;
  std::string fw, bw, grad, net, out, steps, seed, stages;
  desc.add_options()("help,h", "this help, with every configuration key")(
      "config,c", po::value(&configs), "INI config file (repeatable)")(
      "set,s", po::value(&sets), "KEY=VALUE override (repeatable)")(
      "fw", po::value(&fw), "compress.fw: forward (activation) channel spec")(
      "bw", po::value(&bw), "compress.bw: backward (activation-gradient) channel spec")(
      "grad", po::value(&grad), "compress.grad: data-parallel gradient channel spec")(
      "net", po::value(&net), "net.preset: simulated network preset")(
      "steps", po::value(&steps), "run.steps")("seed", po::value(&seed), "run.seed")(
      "stages", po::value(&stages), "pipeline.stages")("out,o", po::value(&out), "run.out");
  const po::variables_map vm = parse_command_line(args, desc);

  sim::TrainConfig config;
  OptionSet options;
  sim::describe_options(config, options);
  if (vm.count("help")) {
    std::cout << desc
              << "\nConfiguration keys (also valid in INI files as [section] key = value):\n"
              << options.help_text();
    return 0;
  }
  apply_config_args(options, configs, sets,
                    {{"compress.fw", &fw},
                     {"compress.bw", &bw},
                     {"compress.grad", &grad},
                     {"net.preset", &net},
                     {"run.out", &out},
                     {"run.steps", &steps},
                     {"run.seed", &seed},
                     {"pipeline.stages", &stages}});
  const sim::TrainSummary s = sim::train(config, options.resolved());
  std::printf(
      "%s: %lld steps, final loss %.4f, eval loss %.4f, simulated time %.2f s, wall %.1f s%s\n",
      s.out.c_str(), static_cast<long long>(s.steps), s.final_loss, s.final_eval_loss, s.sim_time_s,
      s.wall_time_s, s.interrupted ? " (interrupted)" : "");
  return s.interrupted ? 130 : 0;
}

}  // namespace slowpipe::cli
