// `slowpipe` and `slowpipe-torch`: the command-line entry points, both built
// from this file and its one command table. Dispatches to a subcommand and
// maps errors to exit codes: 2 usage (bad key, value, spec, missing file), 3
// data (corrupt input file), 4 a diverged training run (cmd_train), 1 anything
// else.
//
// slowpipe (the front) links no libtorch, so it starts in milliseconds: it runs
// the light commands itself and hands those marked SLOWPIPE_NEEDS_TORCH to
// slowpipe-torch, built beside it, by execv (handoff.h). slowpipe-torch
// (SLOWPIPE_CLI_TORCH=1) runs every command and is usable alone. In it no
// libtorch backtrace reaches the user: c10 errors print their message alone.
// docs/cli-startup.md.
#if SLOWPIPE_CLI_TORCH
#include <c10/util/Exception.h>
#endif

#include <boost/program_options/errors.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "cli/codec_args.h"
#include "cli/commands.h"
#include "cli/handoff.h"
#include "common/errors.h"
#include "common/version.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const slowpipe::cli::Args&);  // null in the front: run by slowpipe-torch
  // The front's torch-free checks before a hand-off (0: go on), where it has some.
  int (*preflight)(const slowpipe::cli::Args&) = nullptr;
};

// A command that needs libtorch: its function in slowpipe-torch, the hand-off in the front.
#if SLOWPIPE_CLI_TORCH
#define SLOWPIPE_NEEDS_TORCH(fn) fn
#else
#define SLOWPIPE_NEEDS_TORCH(fn) nullptr
#endif

namespace cli = slowpipe::cli;

const Command kCommands[] = {
    {"train", "train a model cut into pipeline stages; log to HDF5",
     SLOWPIPE_NEEDS_TORCH(cli::cmd_train), cli::cmd_train_preflight},
    {"launch", "run `train` as one process per stage and replica on this host (c10d)",
     cli::cmd_launch},
    {"sweep", "run a sweep file's grid of training runs, resumably, in parallel", cli::cmd_sweep},
    {"summary", "one table row per run (or per seed group) of run logs or a sweep folder",
     cli::cmd_summary},
    {"plot", "comparison plots (gnuplot PNGs) of run logs or a sweep folder", cli::cmd_plot},
    {"verdict", "decide a reproduction's claim from its runs: reproduced or not (report)",
     cli::cmd_verdict},
    {"export", "write a table of a run log as TSV", cli::cmd_export},
    {"codecs", "list codecs and feedback schemes", cli::cmd_codecs},
    {"codec", "inspect one channel spec: bytes, ratio, error, speed",
     SLOWPIPE_NEEDS_TORCH(cli::cmd_codec), cli::cmd_codec_preflight},
    {"timing", "what-if step time of a model shape over a sweep of networks", cli::cmd_timing},
    {"clock", "the compute clock against published training throughput (tokens/s per GPU)",
     cli::cmd_clock},
    {"netsim", "run a generic network scenario (JSON) and print flow times", cli::cmd_netsim},
    {"retime", "replay finished runs at other network settings, without training",
     SLOWPIPE_NEEDS_TORCH(cli::cmd_retime)},
};

void usage(std::FILE* out) {
  std::fprintf(out,
               "slowpipe %s: pipeline-parallel training over slow networks with compressed "
               "communication\n\nusage: slowpipe COMMAND [options]   (slowpipe COMMAND --help)\n\n"
               "commands:\n",
               slowpipe::kVersion);
  for (const auto& c : kCommands) std::fprintf(out, "  %-8s %s\n", c.name, c.summary);
}

// Runs one command with the exit-code mapping of the file comment.
int run_command(const Command& c, const slowpipe::cli::Args& args,
                int (*run)(const slowpipe::cli::Args&)) {
  try {
    return run(args);
  } catch (const slowpipe::UsageError& e) {
    std::fprintf(stderr, "slowpipe %s: error: %s\n", c.name, e.what());
    return 2;
  } catch (const boost::program_options::error& e) {
    std::fprintf(stderr, "slowpipe %s: error: %s (see slowpipe %s --help)\n", c.name, e.what(),
                 c.name);
    return 2;
  } catch (const slowpipe::DataError& e) {
    std::fprintf(stderr, "slowpipe %s: data error: %s\n", c.name, e.what());
    return 3;
#if SLOWPIPE_CLI_TORCH
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "slowpipe %s: failed: %s\n", c.name, e.what_without_backtrace());
    return 1;
#endif
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "slowpipe %s: failed: out of memory (reduce the batch, the model or the data)\n",
                 c.name);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "slowpipe %s: failed: %s\n", c.name, e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return 0;
  }
  if (name == "--version") {
    const bool dirty = std::string(slowpipe::git_dirty()) == "true";
    std::printf("slowpipe %s (%s%s, %s, %s)\n", slowpipe::kVersion, slowpipe::git_commit(),
                dirty ? "-dirty" : "", slowpipe::kBuildType, slowpipe::kCompiler);
    return 0;
  }
  for (const auto& c : kCommands) {
    if (name != c.name) continue;
    if (c.run == nullptr) {
      if (c.preflight != nullptr) {  // checks that need no libtorch, before loading it
        const int rc = run_command(c, slowpipe::cli::Args(argv + 2, argv + argc), c.preflight);
        if (rc != 0) return rc;
      }
      return slowpipe::cli::hand_off(c.name, argv);
    }
    return run_command(c, slowpipe::cli::Args(argv + 2, argv + argc), c.run);
  }
  std::fprintf(stderr, "slowpipe: unknown command '%s'\n\n", name.c_str());
  usage(stderr);
  return 2;
}
