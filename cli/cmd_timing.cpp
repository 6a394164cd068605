// `slowpipe timing`: what-if step time without training, a thin CLI layer over
// whatif/what_if.h with the spec checks of compressors/ (torch-free, run by
// the light front). The generic network scenario, `slowpipe netsim`, is in
// cmd_netsim.cpp.
#include <boost/program_options.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/config_args.h"
#include "common/errors.h"
#include "compressors/codecs/channel_spec.h"
#include "compressors/codecs/config.h"
#include "netmodel/net_config.h"
#include "whatif/what_if.h"

namespace po = boost::program_options;

namespace slowpipe::cli {
namespace {

namespace cx = compressors;

// Parses timing.fw/bw/grad once (what_if.specs) and checks them as training
// would; the gradient spec becomes the one training sends.
void checked_specs(whatif::WhatIfConfig& what_if) {
  const whatif::SpecTexts& specs = what_if.spec_texts;
  what_if.specs = whatif::parse_specs(specs);
  const cx::ChannelSpec& fw_spec = what_if.specs.forward;
  const cx::ChannelSpec& bw_spec = what_if.specs.backward;
  const cx::ChannelSpec grad_given = what_if.specs.gradient;
  // Roles, as training checks them: the boundary's pairing (topk:shared needs a
  // sparsifying forward), checked as make_boundary does without building the
  // channels; AQ-SGD cannot carry gradients.
  try {
    cx::validate_boundary(fw_spec, bw_spec);
  } catch (const UsageError& e) {
    throw UsageError("timing.fw = " + specs.forward + ", timing.bw = " + specs.backward + ": " +
                     e.what());
  }
  if (cx::uses_aq(grad_given))
    throw UsageError("timing.grad = " + specs.gradient +
                     ": AQ-SGD cannot carry parameter gradients");
  cx::validate_role("timing.grad", grad_given, cx::ChannelRole::kGradient);
  // Gradients are sized as training sends them: compressors::GradientSpec gives
  // a q<b> codec without a scale granularity grouped scales (docs/codec-spec.md).
  const cx::ChannelSpec grad_spec = cx::GradientSpec(grad_given).resolved();
  what_if.specs.gradient = grad_spec;
}

}  // namespace

int cmd_timing(const Args& args) {
  po::options_description desc(
      "usage: slowpipe timing [--preset " + whatif::timing_presets().known("|") +
      "] [--model gpt2-xl]\n"
      "                       [--fw SPEC] [--bw SPEC] [--grad SPEC] [--baseline fp32|fp16|both]\n"
      "                       [--epochs N] [--steps N] [--bandwidth 10Gbps,1Gbps,...]\n"
      "                       [--set KEY=VALUE]...\n"
      "                       [--tsv]\n\n"
      "Prints the assumptions, then step time, throughput and speed-up over an uncompressed\n"
      "baseline per step and over a whole run (warm-up epochs included) of a model shape on\n"
      "a sweep of bandwidths, from analytic compute and exact message sizes. Options");
  std::vector<std::string> sets, configs;
  std::string preset, model, fw, bw, grad, bandwidth, schedule, replicas, net, device, baseline,
      epochs, steps;
  desc.add_options()("help,h", "this help, with every key")("config,c", po::value(&configs),
                                                            "INI config file (repeatable)")(
      "set,s", po::value(&sets), "KEY=VALUE override (timing.* and net.* keys)")(
      "preset", po::value(&preset), "timing.preset: published set-up")(
      "model", po::value(&model), "timing.model: shape preset")("fw", po::value(&fw), "timing.fw")(
      "bw", po::value(&bw), "timing.bw")("grad", po::value(&grad), "timing.grad")(
      "baseline", po::value(&baseline), "timing.baseline: fp32, fp16 or both")(
      "epochs", po::value(&epochs), "timing.epochs: epochs of the whole run")(
      "steps", po::value(&steps), "timing.steps: also print T = steps x step time")(
      "bandwidth", po::value(&bandwidth), "timing.bandwidth: comma list")(
      "schedule", po::value(&schedule), "timing.schedule")("replicas", po::value(&replicas),
                                                           "timing.replicas")(
      "device", po::value(&device), "timing.device")("net", po::value(&net), "net.preset")(
      "tsv", "one TSV line per bandwidth (columns: docs/netmodel.md), no assumptions");
  const po::variables_map vm = parse_command_line(args, desc);

  whatif::WhatIfConfig what_if;
  netmodel::NetConfig net_config;
  OptionSet options;
  options.set_help_command("timing");  // an unknown key points to timing's key table
  whatif::describe_options(what_if, options);
  netmodel::describe_options(net_config, options);
  if (vm.count("help")) {
    std::cout << desc << "\nKeys:\n" << options.help_text();
    return 0;
  }
  apply_config_args(options, configs,
                    ordered_assignments(args, desc,
                                        {{"preset", "timing.preset"},
                                         {"model", "timing.model"},
                                         {"fw", "timing.fw"},
                                         {"bw", "timing.bw"},
                                         {"grad", "timing.grad"},
                                         {"bandwidth", "timing.bandwidth"},
                                         {"schedule", "timing.schedule"},
                                         {"replicas", "timing.replicas"},
                                         {"device", "timing.device"},
                                         {"baseline", "timing.baseline"},
                                         {"epochs", "timing.epochs"},
                                         {"steps", "timing.steps"},
                                         {"net", "net.preset"}}));
  whatif::apply_preset_defaults(what_if, net_config);  // keys given above win
  checked_specs(what_if);
  whatif::run_timing(what_if, net_config, std::cout, vm.count("tsv") > 0);
  return 0;
}

}  // namespace slowpipe::cli
