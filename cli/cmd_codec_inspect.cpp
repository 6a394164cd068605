// `slowpipe codec --spec SPEC`: inspect one spec on a synthetic tensor (libtorch;
// the registry listing `slowpipe codecs` is in cmd_codec_list.cpp, torch-free).
#include <boost/program_options.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/config_args.h"
#include "common/errors.h"
#include "common/options.h"
#include "compressors/channels/inspect.h"

namespace po = boost::program_options;

namespace slowpipe::cli {

int cmd_codec(const Args& args) {
  po::options_description desc(
      "usage: slowpipe codec --spec SPEC [--shape B,T,C] [--dist normal|laplace] [--seed N]\n"
      "                      [--against SPEC2] [--repeat N]\n\n"
      "Encodes a synthetic tensor with SPEC and prints bytes, compression ratio against\n"
      "fp32, relative error and encode/decode throughput (the fastest of N runs). With\n"
      "--against, SPEC2 runs on the same tensor, interleaved, and SPEC's times are also\n"
      "given as multiples of SPEC2's. Options");
  std::string spec, shape_text = "16,64,128", dist = "normal";
  int64_t seed = 1;
  compressors::InspectOptions options;
  desc.add_options()("help,h", "this help")("spec", po::value(&spec), "channel spec, e.g. q4")(
      "shape", po::value(&shape_text)->default_value(shape_text), "tensor shape, comma separated")(
      "dist", po::value(&dist)->default_value(dist), "value distribution: normal|laplace")(
      "seed", po::value(&seed)->default_value(seed), "seed of the synthetic tensor")(
      "against", po::value(&options.against), "a baseline spec timed in the same runs, e.g. q4")(
      "repeat", po::value(&options.repeat)->default_value(options.repeat),
      "runs of each codec (1..1000); the fastest is reported");
  const po::variables_map vm = parse_command_line(args, desc);
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  if (spec.empty()) throw UsageError("--spec is required (e.g. slowpipe codec --spec q4)");
  const std::vector<int64_t> shape = parse_int_list("--shape", shape_text);
  compressors::check_inspection_shape(shape);  // before anything is allocated
  if (dist != "normal" && dist != "laplace") {
    throw UsageError("--dist: '" + dist +
                     "' (expected normal or laplace; from-run is not implemented)");
  }
  compressors::run_codec_inspection(spec, shape, dist, static_cast<uint64_t>(seed), std::cout,
                                    options);
  return 0;
}

}  // namespace slowpipe::cli
