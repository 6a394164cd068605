// Module-owned configuration: each module keeps a plain config struct with
// defaults and one `describe_options(Config&, OptionSet&)` function that binds
// its fields to dotted keys ("model.layers") with help text. `main` gathers the
// sets, reads INI files and `--set key=value` overrides through them, and
// records the resolved values in the run log. Core code never sees a parser.
//
// Values are parsed and validated when set; a bad value or an unknown key throws
// UsageError with a message that names the key (exit code 2 at the CLI).
//
// Paths: keys bound with add_path() name input files or folders. A relative
// value read from an INI file is resolved against that file's folder (made
// absolute), so a preset finds its inputs from any working directory; a value
// given with --set (set(), set_assignment()) stays as given, relative to the
// working directory. Output paths (run.out, run.save, ...) are plain strings:
// they always stay relative to the working directory.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace slowpipe {

class OptionSet {
 public:
  struct Option {
    std::string key;
    std::string help;
    std::string type;  // "int", "float", "bool", "string", "path", "choice", or a unit
    std::function<void(const std::string&)> set;
    std::function<std::string()> get;
    bool is_path = false;     // relative INI values resolve against the INI's folder
    bool allow_empty = true;  // false: an empty value is a UsageError naming the key
  };

  // Largest INI file load_ini() reads; larger ones are refused.
  static constexpr int64_t kMaxIniBytes = int64_t{16} << 20;

  // Binders. The field's current value is its default.
  void add(const std::string& key, int& field, const std::string& help, int64_t min = INT32_MIN,
           int64_t max = INT32_MAX);
  void add(const std::string& key, int64_t& field, const std::string& help, int64_t min = INT64_MIN,
           int64_t max = INT64_MAX);
  void add(const std::string& key, double& field, const std::string& help, double min = -1e300,
           double max = 1e300);
  void add(const std::string& key, bool& field, const std::string& help);
  // A free string; empty is allowed.
  void add(const std::string& key, std::string& field, const std::string& help);
  // A string that must not be empty (e.g. an output file name).
  void add_nonempty(const std::string& key, std::string& field, const std::string& help);
  // An input file or folder; empty = not given. Relative values from an INI file
  // resolve against the file's folder (see the top of this header).
  void add_path(const std::string& key, std::string& field, const std::string& help);
  // A string restricted to `choices`.
  void add_choice(const std::string& key, std::string& field, std::vector<std::string> choices,
                  const std::string& help);
  // The same for a field of another type (an enum): `set` receives a value
  // already checked against `choices`; `show` prints the field's name.
  void add_choice(const std::string& key, std::vector<std::string> choices, const std::string& help,
                  std::function<void(const std::string&)> set, std::function<std::string()> show);
  // A custom parser: `parse` throws UsageError on a bad value; `show` prints it.
  void add_custom(const std::string& key, const std::string& type, const std::string& help,
                  std::function<void(const std::string&)> parse, std::function<std::string()> show);

  // Sets one key; throws UsageError for an unknown key or a bad value.
  void set(const std::string& key, const std::string& value);
  // Parses "key=value" (the --set form).
  void set_assignment(const std::string& assignment);
  // Reads an INI file: "[section]" prefixes keys with "section."; '#' and ';'
  // start comments. Errors name the file and line. Refused with UsageError: a
  // file that cannot be opened or read, is not a regular file (a folder, a FIFO,
  // a device), is larger than kMaxIniBytes, or holds a NUL byte; a key set twice
  // in the same file (both lines named). Across files a later one overrides.
  void load_ini(const std::string& path);
  // The INI parser on text already in memory (load_ini's second half): `name`
  // names the source in messages, `base_dir` is the folder relative path values
  // resolve against ("" = leave them as written).
  void load_ini_text(const std::string& text, const std::string& name, const std::string& base_dir);

  bool has(const std::string& key) const;
  std::string get(const std::string& key) const;
  // Every key with its current value, sorted by key: the resolved config.
  std::vector<std::pair<std::string, std::string>> resolved() const;
  // A help table: key, type, default (current value), help.
  std::string help_text() const;
  const std::vector<Option>& options() const { return options_; }
  // The command whose --help lists these keys, named by the unknown-key message
  // ("slowpipe timing --help lists the keys"); "train" unless a command says.
  void set_help_command(std::string command) { help_command_ = std::move(command); }

 private:
  void add_option(Option opt);
  const Option* find(const std::string& key) const;
  // set() with `base_dir` for path keys ("" = as given).
  void set_value(const std::string& key, const std::string& value, const std::string& base_dir);
  std::vector<Option> options_;
  std::string help_command_ = "train";
};

// Parsing helpers, shared by binders and custom parsers. They throw UsageError
// naming `key` when `text` is not a valid value.
int64_t parse_int(const std::string& key, const std::string& text);
double parse_float(const std::string& key, const std::string& text);
bool parse_bool(const std::string& key, const std::string& text);
// "1,2,3" -> {1,2,3}; empty text -> {}.
std::vector<int64_t> parse_int_list(const std::string& key, const std::string& text);

}  // namespace slowpipe
