// The part of `slowpipe train` that needs no libtorch: its flags, config
// files, --set assignments, --resume and torchrun's environment applied to
// one configuration. slowpipe-torch runs it before training; the light front
// runs it, then the preflight's torch-free checks, before it hands a run over,
// so that a mistake is refused in milliseconds instead of after libtorch has
// loaded (docs/cli-startup.md, "Checks before the hand-off").
#pragma once

#include <string>

#include "cli/commands.h"
#include "common/options.h"
#include "config/train_config.h"

namespace slowpipe::cli {

enum class TrainSetup {
  kHelp,             // --help: printed
  kNothingToResume,  // --resume of a complete run: said on stdout
  kHandOff,          // the front's pass met --help or --resume: nothing done
  kRun,              // config holds the run
};

// Parses `args` and applies them to `options`, described over `config`
// (config::describe_options). `resume`: the --resume log, empty if none.
// `front`: the front's pass, which prints nothing and reads no log (kHandOff
// instead). Throws UsageError (or DataError for an unreadable log) naming
// what is wrong.
TrainSetup setup_train(const Args& args, config::TrainConfig& config, OptionSet& options,
                       std::string& resume, bool front = false);

// The front's checks of `slowpipe train ARGS` before the hand-off:
// setup_train and config::preflight without its two libtorch checks. Runs
// only where they come first in slowpipe-torch too, so that a refusal is the
// same message and exit code either way: not for --help or --resume, a rank
// of a distributed run (WORLD_SIZE set), a device other than the CPU or
// run.kernels = portable (those load libtorch's checks, or re-execute,
// first). Throws what slowpipe-torch would; returns where the run may go on.
void preflight_train(const Args& args);

}  // namespace slowpipe::cli
