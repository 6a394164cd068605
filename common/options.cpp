// Implementation of OptionSet: typed binders, INI reading, help and resolved dumps.
#include "common/options.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "common/errors.h"

namespace slowpipe {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string format_double(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  std::string s = os.str();
  // Prefer the shortest text that reads back to the same double.
  for (int p = 1; p < 17; ++p) {
    std::ostringstream o2;
    o2.precision(p);
    o2 << v;
    if (std::strtod(o2.str().c_str(), nullptr) == v) return o2.str();
  }
  return s;
}

// Levenshtein distance, for "did you mean" hints on unknown keys.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

int64_t parse_int(const std::string& key, const std::string& text) {
  const std::string t = trim(text);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || *end != '\0' || errno == ERANGE) {
    throw UsageError("bad value for '" + key + "': '" + text + "' is not an integer");
  }
  return v;
}

double parse_float(const std::string& key, const std::string& text) {
  const std::string t = trim(text);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) {
    throw UsageError("bad value for '" + key + "': '" + text + "' is not a finite number");
  }
  return v;
}

bool parse_bool(const std::string& key, const std::string& text) {
  std::string t = trim(text);
  std::transform(t.begin(), t.end(), t.begin(), ::tolower);
  if (t == "1" || t == "true" || t == "yes" || t == "on") return true;
  if (t == "0" || t == "false" || t == "no" || t == "off") return false;
  throw UsageError("bad value for '" + key + "': '" + text + "' is not a boolean (true/false)");
}

std::vector<int64_t> parse_int_list(const std::string& key, const std::string& text) {
  std::vector<int64_t> out;
  const std::string t = trim(text);
  if (t.empty()) return out;
  std::stringstream ss(t);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse_int(key, item));
  return out;
}

namespace {

OptionSet::Option make_option(const std::string& key, const std::string& help,
                              const std::string& type, std::function<void(const std::string&)> set,
                              std::function<std::string()> get, bool allow_empty) {
  OptionSet::Option o;
  o.key = key;
  o.help = help;
  o.type = type;
  o.set = std::move(set);
  o.get = std::move(get);
  o.allow_empty = allow_empty;
  return o;
}

}  // namespace

void OptionSet::add_option(Option opt) {
  if (find(opt.key) != nullptr) throw std::logic_error("option declared twice: " + opt.key);
  options_.push_back(std::move(opt));
}

namespace {

// Parses an integer in [min, max] for `key`.
int64_t parse_int_in(const std::string& key, const std::string& v, int64_t min, int64_t max) {
  const int64_t x = parse_int(key, v);
  if (x < min || x > max) {
    throw UsageError("bad value for '" + key + "': " + v + " is outside [" + std::to_string(min) +
                     ", " + std::to_string(max) + "]");
  }
  return x;
}

}  // namespace

void OptionSet::add(const std::string& key, int& field, const std::string& help, int64_t min,
                    int64_t max) {
  add_option(make_option(
      key, help, "int",
      [&field, key, min, max](const std::string& v) {
        field = static_cast<int>(parse_int_in(key, v, min, max));
      },
      [&field] { return std::to_string(field); }, /*allow_empty=*/false));
}

void OptionSet::add(const std::string& key, int64_t& field, const std::string& help, int64_t min,
                    int64_t max) {
  add_option(make_option(
      key, help, "int",
      [&field, key, min, max](const std::string& v) { field = parse_int_in(key, v, min, max); },
      [&field] { return std::to_string(field); }, /*allow_empty=*/false));
}

void OptionSet::add(const std::string& key, double& field, const std::string& help, double min,
                    double max) {
  add_option(make_option(
      key, help, "float",
      [&field, key, min, max](const std::string& v) {
        const double x = parse_float(key, v);
        if (x < min || x > max) {
          throw UsageError("bad value for '" + key + "': " + v + " is outside [" +
                           format_double(min) + ", " + format_double(max) + "]");
        }
        field = x;
      },
      [&field] { return format_double(field); }, /*allow_empty=*/false));
}

void OptionSet::add(const std::string& key, bool& field, const std::string& help) {
  add_option(make_option(
      key, help, "bool", [&field, key](const std::string& v) { field = parse_bool(key, v); },
      [&field] { return std::string(field ? "true" : "false"); }, /*allow_empty=*/false));
}

void OptionSet::add(const std::string& key, std::string& field, const std::string& help) {
  add_option(make_option(
      key, help, "string", [&field](const std::string& v) { field = trim(v); },
      [&field] { return field; }, /*allow_empty=*/true));
}

void OptionSet::add_nonempty(const std::string& key, std::string& field, const std::string& help) {
  add_option(make_option(
      key, help, "string", [&field](const std::string& v) { field = trim(v); },
      [&field] { return field; }, /*allow_empty=*/false));
}

void OptionSet::add_path(const std::string& key, std::string& field, const std::string& help) {
  Option o = make_option(
      key, help, "path", [&field](const std::string& v) { field = trim(v); },
      [&field] { return field; }, /*allow_empty=*/true);
  o.is_path = true;
  add_option(std::move(o));
}

void OptionSet::add_choice(const std::string& key, std::string& field,
                           std::vector<std::string> choices, const std::string& help) {
  add_choice(
      key, std::move(choices), help, [&field](const std::string& v) { field = v; },
      [&field] { return field; });
}

void OptionSet::add_choice(const std::string& key, std::vector<std::string> choices,
                           const std::string& help, std::function<void(const std::string&)> set,
                           std::function<std::string()> show) {
  std::string joined;
  for (const auto& c : choices) joined += (joined.empty() ? "" : "|") + c;
  const bool empty_is_a_choice = std::find(choices.begin(), choices.end(), "") != choices.end();
  add_option(make_option(
      key, help, joined,
      [set = std::move(set), key, choices, joined](const std::string& v) {
        const std::string t = trim(v);
        if (std::find(choices.begin(), choices.end(), t) == choices.end()) {
          throw UsageError("bad value for '" + key + "': '" + v + "' (expected one of " + joined +
                           ")");
        }
        set(t);
      },
      std::move(show), empty_is_a_choice));
}

void OptionSet::add_custom(const std::string& key, const std::string& type, const std::string& help,
                           std::function<void(const std::string&)> parse,
                           std::function<std::string()> show) {
  // The parser sees "" too and decides whether it means anything.
  add_option(make_option(key, help, type, std::move(parse), std::move(show), /*allow_empty=*/true));
}

const OptionSet::Option* OptionSet::find(const std::string& key) const {
  for (const auto& o : options_) {
    if (o.key == key) return &o;
  }
  return nullptr;
}

bool OptionSet::has(const std::string& key) const {
  return find(key) != nullptr;
}

std::string OptionSet::get(const std::string& key) const {
  const Option* o = find(key);
  if (o == nullptr) throw UsageError("unknown key '" + key + "'");
  return o->get();
}

void OptionSet::set(const std::string& key, const std::string& value) {
  set_value(key, value, /*base_dir=*/"");
}

void OptionSet::set_value(const std::string& key, const std::string& value,
                          const std::string& base_dir) {
  const std::string k = trim(key);
  const Option* o = find(k);
  if (o == nullptr) {
    std::string best;
    size_t best_d = 4;
    for (const auto& c : options_) {
      const size_t d = edit_distance(k, c.key);
      if (d < best_d) {
        best_d = d;
        best = c.key;
      }
    }
    throw UsageError("unknown key '" + k + "'" +
                     (best.empty() ? " (slowpipe " + help_command_ + " --help lists the keys)"
                                   : " (did you mean '" + best + "'?)"));
  }
  std::string v = trim(value);
  if (v.empty() && !o->allow_empty) {
    throw UsageError("empty value for '" + k + "' (expected " + o->type + ")");
  }
  if (o->is_path && !v.empty() && !base_dir.empty()) {
    const std::filesystem::path p(v);
    if (p.is_relative()) v = (std::filesystem::path(base_dir) / p).lexically_normal().string();
  }
  o->set(v);
}

void OptionSet::set_assignment(const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw UsageError("bad --set '" + assignment + "': expected key=value");
  }
  set(assignment.substr(0, eq), assignment.substr(eq + 1));
}

namespace {

// The whole of a config file, refusing what is not a small regular file.
std::string read_config_file(const std::string& path) {
  if (path.empty()) throw UsageError("config file name is empty");
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    throw UsageError("cannot open config file '" + path + "': " + std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw UsageError("cannot read config file '" + path + "': " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    throw UsageError("config file '" + path + "' is " + kind + ", not a regular file");
  }
  const auto too_big = [&] {
    return UsageError("config file '" + path + "' is larger than " +
                      std::to_string(OptionSet::kMaxIniBytes >> 20) + " MiB");
  };
  if (st.st_size > OptionSet::kMaxIniBytes) throw too_big();
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw UsageError("cannot read config file '" + path + "': " + std::strerror(errno));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (static_cast<int64_t>(text.size()) > OptionSet::kMaxIniBytes) throw too_big();
  }
  return text;
}

}  // namespace

void OptionSet::load_ini(const std::string& path) {
  const std::string text = read_config_file(path);
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  load_ini_text(text, path, ec ? std::string() : absolute.parent_path().string());
}

void OptionSet::load_ini_text(const std::string& text, const std::string& name,
                              const std::string& base_dir) {
  const auto where = [&name](int line) { return name + ":" + std::to_string(line) + ": "; };
  const size_t nul = text.find('\0');
  if (nul != std::string::npos) {
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + nul, '\n'));
    throw UsageError(where(line) + "NUL byte (binary data in a config file)");
  }
  std::istringstream in(text);
  std::string line, section;
  std::map<std::string, int> first_line;  // key -> line that set it
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (lineno == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 BOM
    const auto hash = line.find_first_of("#;");
    std::string t = trim(hash == std::string::npos ? line : line.substr(0, hash));
    if (t.empty()) continue;
    if (t.front() == '[') {
      if (t.back() != ']') throw UsageError(where(lineno) + "unterminated section header");
      section = trim(t.substr(1, t.size() - 2));
      continue;
    }
    const auto eq = t.find('=');
    if (eq == std::string::npos) throw UsageError(where(lineno) + "expected 'key = value'");
    const std::string key = trim(t.substr(0, eq));
    const std::string full = section.empty() ? key : section + "." + key;
    const auto [it, fresh] = first_line.emplace(full, lineno);
    if (!fresh) {
      throw UsageError(where(lineno) + "duplicate key '" + full + "' (already set on line " +
                       std::to_string(it->second) + ")");
    }
    try {
      set_value(full, t.substr(eq + 1), base_dir);
    } catch (const UsageError& e) {
      throw UsageError(where(lineno) + e.what());
    }
  }
}

std::vector<std::pair<std::string, std::string>> OptionSet::resolved() const {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(options_.size());
  for (const auto& o : options_) out.emplace_back(o.key, o.get());
  std::sort(out.begin(), out.end());
  return out;
}

std::string OptionSet::help_text() const {
  std::vector<const Option*> sorted;
  for (const auto& o : options_) sorted.push_back(&o);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->key < b->key; });
  std::ostringstream os;
  for (const Option* o : sorted) {
    os << "  " << o->key << " (" << o->type << ", default " << o->get() << ")\n      " << o->help
       << "\n";
  }
  return os.str();
}

}  // namespace slowpipe
