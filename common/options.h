// Module-owned configuration: each module keeps a plain config struct with
// defaults and one `describe_options(Config&, OptionSet&)` function that binds
// its fields to dotted keys ("model.layers") with help text. `main` gathers the
// sets, reads INI files and `--set key=value` overrides through them, and
// records the resolved values in the run log. Core code never sees a parser.
//
// Values are parsed and validated when set; a bad value or an unknown key throws
// UsageError with a message that names the key (exit code 2 at the CLI).
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
    std::string type;  // "int", "float", "bool", "string", "choice", or a unit
    std::function<void(const std::string&)> set;
    std::function<std::string()> get;
  };

  // Binders. The field's current value is its default.
  void add(const std::string& key, int& field, const std::string& help, int64_t min = INT32_MIN,
           int64_t max = INT32_MAX);
  void add(const std::string& key, int64_t& field, const std::string& help, int64_t min = INT64_MIN,
           int64_t max = INT64_MAX);
  void add(const std::string& key, double& field, const std::string& help, double min = -1e300,
           double max = 1e300);
  void add(const std::string& key, bool& field, const std::string& help);
  void add(const std::string& key, std::string& field, const std::string& help);
  // A string restricted to `choices`.
  void add_choice(const std::string& key, std::string& field, std::vector<std::string> choices,
                  const std::string& help);
  // A custom parser: `parse` throws UsageError on a bad value; `show` prints it.
  void add_custom(const std::string& key, const std::string& type, const std::string& help,
                  std::function<void(const std::string&)> parse, std::function<std::string()> show);

  // Sets one key; throws UsageError for an unknown key or a bad value.
  void set(const std::string& key, const std::string& value);
  // Parses "key=value" (the --set form).
  void set_assignment(const std::string& assignment);
  // Reads an INI file: "[section]" prefixes keys with "section."; '#' and ';'
  // start comments. Errors name the file and line.
  void load_ini(const std::string& path);

  bool has(const std::string& key) const;
  std::string get(const std::string& key) const;
  // Every key with its current value, sorted by key: the resolved config.
  std::vector<std::pair<std::string, std::string>> resolved() const;
  // A help table: key, type, default (current value), help.
  std::string help_text() const;
  const std::vector<Option>& options() const { return options_; }

 private:
  void add_option(Option opt);
  const Option* find(const std::string& key) const;
  std::vector<Option> options_;
};

// Parsing helpers, shared by binders and custom parsers. They throw UsageError
// naming `key` when `text` is not a valid value.
int64_t parse_int(const std::string& key, const std::string& text);
double parse_float(const std::string& key, const std::string& text);
bool parse_bool(const std::string& key, const std::string& text);
// "1,2,3" -> {1,2,3}; empty text -> {}.
std::vector<int64_t> parse_int_list(const std::string& key, const std::string& text);

}  // namespace slowpipe
