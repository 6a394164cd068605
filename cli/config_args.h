// Shared by the subcommands: command-line parsing with the checks every command
// needs, and the configuration layering of the commands that take
// configuration (train, timing): INI files in order, then the --set KEY=VALUE
// overrides and the command's shortcut flags (each the --set form of one key)
// in the order they are given, so that the last one of a key wins
// (docs/command-line.md, "Order").
#pragma once

#include <boost/program_options.hpp>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "common/options.h"

namespace slowpipe::cli {

// Parses `args` against `desc` (and `positional`, the command's positional
// arguments, if it takes any) into a variables_map, then notifies. UsageError
// (exit 2) for an argument no option or positional slot takes (`slowpipe train
// foo`), and for a value-taking option given an empty value (`--fw ''`): a flag
// that is given means something, so empty is never "not given".
inline boost::program_options::variables_map parse_command_line(
    const std::vector<std::string>& args, const boost::program_options::options_description& desc,
    const boost::program_options::positional_options_description& positional = {}) {
  namespace po = boost::program_options;
  // First without positional slots, to find every free argument by itself.
  const po::parsed_options bare = po::command_line_parser(args).options(desc).run();
  const std::vector<std::string> free =
      po::collect_unrecognized(bare.options, po::include_positional);
  if (free.size() > positional.max_total_count()) {
    const std::string& stray = free[positional.max_total_count()];
    throw UsageError("unexpected argument '" + stray + "'" +
                     (positional.max_total_count() == 0
                          ? std::string(" (this command takes no positional arguments)")
                          : " (this command takes at most " +
                                std::to_string(positional.max_total_count()) +
                                " positional argument(s))"));
  }
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(positional).run(), vm);
  po::notify(vm);
  for (const auto& [name, value] : vm) {
    if (value.defaulted()) continue;
    const po::option_description* option = desc.find_nothrow(name, /*approx=*/false);
    if (option == nullptr || option->semantic()->max_tokens() == 0) continue;  // a switch
    const auto* one = boost::any_cast<std::string>(&value.value());
    const auto* many = boost::any_cast<std::vector<std::string>>(&value.value());
    bool empty = one != nullptr && one->empty();
    if (many != nullptr) {
      for (const auto& v : *many) empty = empty || v.empty();
    }
    if (empty) {
      throw UsageError("empty value for --" + name +
                       " (leave the option out to keep its default or config value)");
    }
  }
  return vm;
}

// A shortcut flag and the key it sets: --fw X is --set compress.fw=X.
struct Shortcut {
  const char* flag;
  const char* key;
};

// The commands whose positional arguments are run logs or folders (summary,
// plot, retime): every positional goes to the option `runs`. Returns false
// when --help was asked (the help is printed on stdout: exit 0), true else.
inline bool parse_runs_command(const std::vector<std::string>& args,
                               const boost::program_options::options_description& desc,
                               boost::program_options::variables_map& vm) {
  boost::program_options::positional_options_description pos;
  pos.add("runs", -1);
  vm = parse_command_line(args, desc, pos);
  if (vm.count("help") == 0) return true;
  std::cout << desc;
  return false;
}

// The --set assignments and shortcut flags of `args` as KEY=VALUE, in the
// order given (after parse_command_line has checked them against `desc`).
inline std::vector<std::string> ordered_assignments(
    const std::vector<std::string>& args, const boost::program_options::options_description& desc,
    const std::vector<Shortcut>& shortcuts) {
  namespace po = boost::program_options;
  std::vector<std::string> out;
  for (const po::option& o : po::command_line_parser(args).options(desc).run().options) {
    if (o.string_key == "set") {
      out.insert(out.end(), o.value.begin(), o.value.end());
      continue;
    }
    for (const auto& sc : shortcuts) {
      if (o.string_key != sc.flag) continue;
      for (const auto& v : o.value) out.push_back(std::string(sc.key) + "=" + v);
    }
  }
  return out;
}

// INI files in order, then `assignments` (ordered_assignments) in order.
inline void apply_config_args(OptionSet& options, const std::vector<std::string>& configs,
                              const std::vector<std::string>& assignments) {
  for (const auto& f : configs) options.load_ini(f);
  for (const auto& a : assignments) options.set_assignment(a);
}

}  // namespace slowpipe::cli
