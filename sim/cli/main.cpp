// `slowpipe`: the command-line entry point. Dispatches to a subcommand and maps
// errors to exit codes: 2 usage (bad key, value, spec, missing file), 3 data
// (corrupt input file), 4 a diverged training run (cmd_train), 1 anything else.
// No libtorch backtrace reaches the user: c10 errors print their message alone.
#include <c10/util/Exception.h>

#include <boost/program_options/errors.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "common/errors.h"
#include "common/version.h"
#include "sim/cli/commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const slowpipe::cli::Args&);
};

const Command kCommands[] = {
    {"train", "train a model cut into pipeline stages; log to HDF5", slowpipe::cli::cmd_train},
    {"launch", "run `train` as one process per stage and replica on this host (c10d)",
     slowpipe::cli::cmd_launch},
    {"sweep", "run a sweep file's grid of training runs, resumably, in parallel",
     slowpipe::cli::cmd_sweep},
    {"summary", "one table row per run (or per seed group) of run logs or a sweep folder",
     slowpipe::cli::cmd_summary},
    {"plot", "comparison plots (gnuplot PNGs) of run logs or a sweep folder",
     slowpipe::cli::cmd_plot},
    {"verdict", "decide a reproduction's claim from its runs: reproduced or not (report)",
     slowpipe::cli::cmd_verdict},
    {"export", "write a table of a run log as TSV", slowpipe::cli::cmd_export},
    {"codecs", "list codecs and feedback schemes", slowpipe::cli::cmd_codecs},
    {"codec", "inspect one channel spec: bytes, ratio, error, speed", slowpipe::cli::cmd_codec},
    {"timing", "what-if step time of a model shape over a sweep of networks",
     slowpipe::cli::cmd_timing},
    {"netsim", "run a generic network scenario (JSON) and print flow times",
     slowpipe::cli::cmd_netsim},
};

void usage(std::FILE* out) {
  std::fprintf(out,
               "slowpipe %s: pipeline-parallel training over slow networks with compressed "
               "communication\n\nusage: slowpipe COMMAND [options]   (slowpipe COMMAND --help)\n\n"
               "commands:\n",
               slowpipe::kVersion);
  for (const auto& c : kCommands) std::fprintf(out, "  %-8s %s\n", c.name, c.summary);
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
    const slowpipe::cli::Args args(argv + 2, argv + argc);
    try {
      return c.run(args);
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
    } catch (const c10::Error& e) {
      std::fprintf(stderr, "slowpipe %s: failed: %s\n", c.name, e.what_without_backtrace());
      return 1;
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
  std::fprintf(stderr, "slowpipe: unknown command '%s'\n\n", name.c_str());
  usage(stderr);
  return 2;
}
