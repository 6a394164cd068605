// `slowpipe codec`'s options without libtorch; see codec_args.h.
#include "cli/codec_args.h"

#include <boost/program_options.hpp>

#include "cli/config_args.h"
#include "common/errors.h"
#include "common/options.h"
#include "compressors/codecs/channel_spec.h"
#include "compressors/codecs/inspection_shape.h"

namespace po = boost::program_options;

namespace slowpipe::cli {

std::optional<CodecRequest> parse_codec_request(const Args& args, std::ostream* help) {
  po::options_description desc(
      "usage: slowpipe codec --spec SPEC [--shape B,T,C] [--dist normal|laplace] [--seed N]\n"
      "                      [--against SPEC2] [--repeat N]\n\n"
      "Encodes a synthetic tensor with SPEC and prints bytes, compression ratio against\n"
      "fp32, relative error and encode/decode throughput (the fastest of N runs). With\n"
      "--against, SPEC2 runs on the same tensor, interleaved, and SPEC's times are also\n"
      "given as multiples of SPEC2's. Options");
  CodecRequest r;
  std::string shape_text = "16,64,128";
  desc.add_options()("help,h", "this help")("spec", po::value(&r.spec), "channel spec, e.g. q4")(
      "shape", po::value(&shape_text)->default_value(shape_text), "tensor shape, comma separated")(
      "dist", po::value(&r.dist)->default_value(r.dist), "value distribution: normal|laplace")(
      "seed", po::value(&r.seed)->default_value(r.seed), "seed of the synthetic tensor")(
      "against", po::value(&r.against), "a baseline spec timed in the same runs, e.g. q4")(
      "repeat", po::value(&r.repeat)->default_value(r.repeat),
      "runs of each codec (1..1000); the fastest is reported");
  const po::variables_map vm = parse_command_line(args, desc);
  if (vm.count("help")) {
    if (help != nullptr) *help << desc;
    return std::nullopt;
  }
  if (r.spec.empty()) throw UsageError("--spec is required (e.g. slowpipe codec --spec q4)");
  r.shape = parse_int_list("--shape", shape_text);
  compressors::check_inspection_shape(r.shape);  // before anything is allocated
  if (r.dist != "normal" && r.dist != "laplace") {
    throw UsageError("--dist: '" + r.dist +
                     "' (expected normal or laplace; from-run is not implemented)");
  }
  if (r.repeat < 1 || r.repeat > 1000)
    throw UsageError("--repeat: expected a count of runs in 1..1000, got " +
                     std::to_string(r.repeat));
  compressors::ChannelSpec::parse(r.spec, /*backward=*/false);
  if (!r.against.empty()) compressors::ChannelSpec::parse(r.against, /*backward=*/false);
  return r;
}

int cmd_codec_preflight(const Args& args) {
  parse_codec_request(args, nullptr);
  return 0;
}

}  // namespace slowpipe::cli
