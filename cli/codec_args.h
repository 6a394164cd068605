// `slowpipe codec`'s options, parsed and checked without libtorch: the light
// front runs these checks before it hands the command to slowpipe-torch, so a
// mistake costs milliseconds instead of a start of libtorch, and
// slowpipe-torch runs the same function before it inspects (one set of
// messages and exit codes; docs/cli-startup.md, "Checks before the hand-off").
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace slowpipe::cli {

struct CodecRequest {
  std::string spec;
  std::vector<int64_t> shape;
  std::string dist = "normal";
  int64_t seed = 1;
  std::string against;  // empty: no baseline
  int repeat = 5;       // 1..1000
};

// The request, every check done in slowpipe-torch's order: the options, --spec
// given, --shape (check_inspection_shape), --dist, --repeat, then SPEC and
// SPEC2 parsed. UsageError (or a program_options error) on the first mistake.
// nullopt for --help, which is written to `help` when it is not null.
std::optional<CodecRequest> parse_codec_request(const Args& args, std::ostream* help);

// The front's checks of `slowpipe codec` before the hand-off: 0, or the
// exception parse_codec_request throws (--help passes: slowpipe-torch prints it).
int cmd_codec_preflight(const Args& args);

}  // namespace slowpipe::cli
