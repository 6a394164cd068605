// `slowpipe codec --spec SPEC`: inspect one spec on a synthetic tensor (libtorch;
// the registry listing `slowpipe codecs` is in cmd_codec_list.cpp, and the
// options, checked in the front too, in codec_args.cpp: both torch-free).
#include <iostream>

#include "cli/codec_args.h"
#include "cli/commands.h"
#include "compressors/channels/inspect.h"

namespace slowpipe::cli {

int cmd_codec(const Args& args) {
  const std::optional<CodecRequest> r = parse_codec_request(args, &std::cout);
  if (!r) return 0;  // --help
  compressors::InspectOptions options;
  options.against = r->against;
  options.repeat = r->repeat;
  compressors::run_codec_inspection(r->spec, r->shape, r->dist, static_cast<uint64_t>(r->seed),
                                    std::cout, options);
  return 0;
}

}  // namespace slowpipe::cli
