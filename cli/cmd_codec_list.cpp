// `slowpipe codecs`: the codec and feedback-scheme registries, one line each.
// Torch-free (slowpipe::codecs): run by the light front. Inspecting one spec
// on a tensor, `slowpipe codec`, is in cmd_codec_inspect.cpp.
#include <iostream>

#include "cli/commands.h"
#include "common/errors.h"
#include "compressors/codecs/channel_spec.h"

namespace slowpipe::cli {

int cmd_codecs(const Args& args) {
  if (!args.empty() && args[0] != "--help" && args[0] != "-h") {
    throw UsageError("'slowpipe codecs' takes no arguments");
  }
  compressors::print_registry(std::cout);
  std::cout << "\nThe spec grammar is documented in docs/codec-spec.md.\n";
  return 0;
}

}  // namespace slowpipe::cli
