// Sweep file parsing and point expansion (see sweep_file.h, docs/sweep.md).
#include "study/sweeps/sweep_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/errors.h"
#include "common/options.h"

namespace slowpipe::study {
namespace {

namespace fs = std::filesystem;

// A sweep name becomes a folder name: letters, digits, '.', '_', '-'.
void check_name(const std::string& name, const std::string& where) {
  const bool ok =
      !name.empty() && name != "." && name != ".." &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
      });
  if (!ok) {
    throw UsageError(where + "sweep name '" + name +
                     "' is not a safe folder name (letters, digits, '.', '_', '-')");
  }
}

// "key=value" or "key!=value".
SweepTerm parse_term(const std::string& text, const std::string& where) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw UsageError(where + "condition term '" + text + "' is not KEY=VALUE or KEY!=VALUE");
  }
  SweepTerm t;
  t.equal = text[eq - 1] != '!';
  t.key = trim(text.substr(0, t.equal ? eq : eq - 1));
  t.value = trim(text.substr(eq + 1));
  if (t.key.empty()) throw UsageError(where + "condition term '" + text + "' names no key");
  return t;
}

std::vector<SweepCondition> parse_conditions(const std::string& value, const std::string& where,
                                             int line) {
  std::vector<SweepCondition> out;
  for (const auto& text : split_trim(value, kSweepSeparator)) {
    if (text.empty()) throw UsageError(where + "empty condition (between two '|' or at an end)");
    SweepCondition c;
    c.text = text;
    c.line = line;
    for (const auto& term : split_trim(text, '&')) {
      if (term.empty()) throw UsageError(where + "empty term in condition '" + text + "'");
      c.terms.push_back(parse_term(term, where));
    }
    out.push_back(std::move(c));
  }
  return out;
}

struct RawLine {
  std::string key, value;
  int line;
};

// Checks every condition names a listed key and one of its values.
void check_conditions(const SweepFile& s, const std::vector<SweepCondition>& conds,
                      const char* what) {
  for (const auto& c : conds) {
    const std::string where = s.path + ":" + std::to_string(c.line) + ": " + what + ": ";
    for (const auto& t : c.terms) {
      const auto k = std::find_if(s.keys.begin(), s.keys.end(),
                                  [&t](const SweepKey& sk) { return sk.key == t.key; });
      if (k == s.keys.end()) {
        throw UsageError(where + "'" + t.key + "' is not a key listed in [sweep]");
      }
      if (std::find(k->values.begin(), k->values.end(), t.value) == k->values.end()) {
        std::string listed;
        for (const auto& v : k->values) listed += (listed.empty() ? "" : " | ") + v;
        throw UsageError(where + t.key + " never takes the value '" + t.value +
                         "' (listed: " + listed + ")");
      }
    }
  }
}

void build_zips(SweepFile& s, const RawLine& zip) {
  const std::string where = s.path + ":" + std::to_string(zip.line) + ": zip: ";
  std::set<size_t> seen;
  for (const auto& group : split_trim(zip.value, kSweepSeparator)) {
    std::vector<size_t> idx;
    for (const auto& key : split_trim(group, ',')) {
      const auto k = std::find_if(s.keys.begin(), s.keys.end(),
                                  [&key](const SweepKey& sk) { return sk.key == key; });
      if (key.empty()) throw UsageError(where + "empty key name in group '" + group + "'");
      if (k == s.keys.end())
        throw UsageError(where + "'" + key + "' is not a key listed in [sweep]");
      const size_t i = static_cast<size_t>(k - s.keys.begin());
      if (!seen.insert(i).second)
        throw UsageError(where + "'" + key + "' is in more than one group");
      idx.push_back(i);
    }
    if (idx.size() < 2) {
      throw UsageError(where + "group '" + group + "' needs at least two keys (KEY, KEY, ...)");
    }
    for (size_t i : idx) {
      if (s.keys[i].values.size() != s.keys[idx[0]].values.size()) {
        throw UsageError(where +
                         "keys of one group must list equally many values: " + s.keys[idx[0]].key +
                         " lists " + std::to_string(s.keys[idx[0]].values.size()) + " (line " +
                         std::to_string(s.keys[idx[0]].line) + "), " + s.keys[i].key + " lists " +
                         std::to_string(s.keys[i].values.size()) + " (line " +
                         std::to_string(s.keys[i].line) + ")");
      }
    }
    s.zips.push_back(std::move(idx));
  }
}

// Splits the [sweep] and [claim] sections off `text`: their lines are
// returned, and blanked in `base` so the rest keeps its line numbers.
struct Sections {
  std::vector<RawLine> sweep;
  std::vector<IniLine> claim;
  bool has_sweep = false, has_claim = false;
};
Sections take_own_sections(const std::string& text, const std::string& path, std::string& base) {
  Sections out;
  std::istringstream in(text);
  std::string line;
  enum class In { kBase, kSweep, kClaim } inside = In::kBase;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = path + ":" + std::to_string(lineno) + ": ";
    std::string t = trim(line.substr(0, line.find_first_of("#;")));
    if (!t.empty() && t.front() == '[' && t.back() == ']') {
      const std::string section = trim(t.substr(1, t.size() - 2));
      bool& seen = section == "sweep" ? out.has_sweep : out.has_claim;
      if ((section == "sweep" || section == "claim") && seen) {
        throw UsageError(where + "a second [" + section + "] section");
      }
      inside = section == "sweep" ? In::kSweep : section == "claim" ? In::kClaim : In::kBase;
      if (inside != In::kBase) seen = true;
      base += inside != In::kBase ? "\n" : line + "\n";
      continue;
    }
    if (inside == In::kBase) {
      base += line + "\n";
      continue;
    }
    base += "\n";
    const auto hash = line.find('#');
    const std::string body = hash == std::string::npos ? line : line.substr(0, hash);
    if (inside == In::kSweep && body.find(';') != std::string::npos) {
      throw UsageError(where +
                       "';' in [sweep]: separate values with '|' (and start comments "
                       "with '#'; ';' would cut the line as an INI comment)");
    }
    t = trim(body);
    if (t.empty()) continue;
    const auto eq = t.find('=');
    if (eq == std::string::npos) {
      throw UsageError(where + (inside == In::kSweep ? "expected 'key = value | value ...'"
                                                     : "expected 'key = value' in [claim]"));
    }
    if (inside == In::kSweep) {
      out.sweep.push_back({trim(t.substr(0, eq)), trim(t.substr(eq + 1)), lineno});
    } else {
      out.claim.push_back({trim(t.substr(0, eq)), trim(t.substr(eq + 1)), lineno});
    }
  }
  return out;
}

}  // namespace

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split_trim(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    out.push_back(trim(s.substr(start, at == std::string::npos ? std::string::npos : at - start)));
    if (at == std::string::npos) break;
    start = at + 1;
  }
  return out;
}

const std::string& SweepPoint::value(const std::string& key) const {
  for (const auto& [k, v] : values) {
    if (k == key) return v;
  }
  throw UsageError("no swept key '" + key + "'");
}

SweepFile read_sweep_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw UsageError("cannot open sweep file " + path);
  if (!S_ISREG(st.st_mode)) throw UsageError("sweep file " + path + " is not a regular file");
  if (st.st_size > OptionSet::kMaxIniBytes) {
    throw UsageError("sweep file " + path + " is larger than " +
                     std::to_string(OptionSet::kMaxIniBytes >> 20) + " MiB");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot open sweep file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw UsageError("cannot read sweep file " + path);
  return parse_sweep_text(text.str(), path, fs::absolute(path).parent_path().string());
}

SweepFile parse_sweep_text(const std::string& text, const std::string& path,
                           const std::string& base_dir) {
  SweepFile s;
  s.path = path;
  s.base_dir = base_dir;
  s.name = fs::path(path).stem().string();
  Sections sections = take_own_sections(text, path, s.base_text);
  const std::vector<RawLine>& lines = sections.sweep;
  s.has_claim = sections.has_claim;
  s.claim = std::move(sections.claim);
  if (!sections.has_sweep)
    throw UsageError(path + ": no [sweep] section (it lists the values to sweep)");
  std::map<std::string, int> seen;
  const RawLine* zip = nullptr;
  for (const auto& l : lines) {
    const std::string where = path + ":" + std::to_string(l.line) + ": ";
    const auto [it, fresh] = seen.emplace(l.key, l.line);
    if (!fresh) {
      throw UsageError(where + "'" + l.key + "' listed twice in [sweep] (first on line " +
                       std::to_string(it->second) + ")");
    }
    if (l.value.empty()) throw UsageError(where + "'" + l.key + "' has an empty list");
    if (l.key == "name") {
      check_name(l.value, where);
      s.name = l.value;
    } else if (l.key == "config") {
      for (const auto& f : split_trim(l.value, kSweepSeparator)) {
        if (f.empty()) throw UsageError(where + "config: empty file name in the list");
        s.configs.push_back((fs::path(base_dir) / f).lexically_normal().string());
      }
    } else if (l.key == "zip") {
      zip = &l;
    } else if (l.key == "exclude" || l.key == "only") {
      auto conds = parse_conditions(l.value, where + l.key + ": ", l.line);
      auto& into = l.key == "exclude" ? s.exclude : s.only;
      into.insert(into.end(), conds.begin(), conds.end());
    } else if (l.key.find('.') == std::string::npos) {
      throw UsageError(where + "unknown [sweep] key '" + l.key +
                       "' (train keys are dotted, e.g. compress.fw; the sweep's own keys are "
                       "name, config, zip, exclude, only)");
    } else {
      SweepKey k{l.key, split_trim(l.value, kSweepSeparator), l.line, {}};
      for (auto& v : k.values) {
        if (v.empty()) {
          throw UsageError(where + l.key +
                           ": empty value in the list (between two '|' or at an end; write \"\" "
                           "for an empty value)");
        }
        if (v == "\"\"") v.clear();  // "": the empty value, e.g. no model.init_from
      }
      s.keys.push_back(std::move(k));
    }
  }
  check_name(s.name, path + ": ");
  if (s.keys.empty()) throw UsageError(path + ": [sweep] lists no key to sweep");
  if (zip != nullptr) build_zips(s, *zip);
  check_conditions(s, s.exclude, "exclude");
  check_conditions(s, s.only, "only");
  return s;
}

namespace {

// Value `r` of `k` as the duplicate check compares it.
const std::string& compared(const SweepKey& k, size_t r) {
  return k.canonical.empty() ? k.values[r] : k.canonical[r];
}

// "key=value, key=value": row `r` of an axis, as written or as compared.
std::string row_text(const SweepFile& s, const std::vector<size_t>& axis, size_t r,
                     bool as_compared) {
  std::string what;
  for (size_t n = 0; n < axis.size(); ++n) {
    const SweepKey& k = s.keys[axis[n]];
    what += (n ? ", " : "") + k.key + "=" + (as_compared ? compared(k, r) : k.values[r]);
  }
  return what;
}

// Every axis must offer distinct combinations, or two points would be the
// same run: listed twice, or spelled two ways (both spellings named).
void check_distinct(const SweepFile& s, const std::vector<std::vector<size_t>>& axes) {
  for (const auto& axis : axes) {
    std::map<std::vector<std::string>, size_t> first;
    for (size_t r = 0; r < s.keys[axis[0]].values.size(); ++r) {
      std::vector<std::string> combo;
      for (size_t i : axis) combo.push_back(compared(s.keys[i], r));
      const auto [it, fresh] = first.emplace(combo, r);
      if (fresh) continue;
      const std::string where = s.path + ":" + std::to_string(s.keys[axis[0]].line) + ": ";
      const std::string was = row_text(s, axis, it->second, false),
                        now = row_text(s, axis, r, false);
      if (was == now) {
        throw UsageError(where + now + " is listed twice (two points would be the same run)");
      }
      throw UsageError(where + was + " and " + now + " are one run spelled two ways (both mean " +
                       row_text(s, axis, r, true) + "): list it once");
    }
  }
}

bool holds(const SweepCondition& c, const SweepPoint& p) {
  for (const auto& t : c.terms) {
    if ((p.value(t.key) == t.value) != t.equal) return false;
  }
  return true;
}

}  // namespace

std::vector<SweepPoint> expand_points(const SweepFile& s) {
  // Axes: a zip group at the place of its first key, every other key alone.
  std::vector<std::vector<size_t>> axes;
  std::vector<bool> zipped(s.keys.size(), false);
  for (const auto& z : s.zips) {
    for (size_t i : z) zipped[i] = true;
  }
  for (size_t i = 0; i < s.keys.size(); ++i) {
    if (!zipped[i]) {
      axes.push_back({i});
      continue;
    }
    for (const auto& z : s.zips) {
      if (std::find(z.begin(), z.end(), i) != z.end() &&
          *std::min_element(z.begin(), z.end()) == i) {
        axes.push_back(z);
      }
    }
  }
  check_distinct(s, axes);
  std::vector<SweepPoint> points;
  std::vector<size_t> at(axes.size(), 0);
  while (true) {
    SweepPoint p;
    for (const auto& k : s.keys) p.values.emplace_back(k.key, "");
    for (size_t a = 0; a < axes.size(); ++a) {
      for (size_t i : axes[a]) p.values[i].second = s.keys[i].values[at[a]];
    }
    bool keep = std::none_of(s.exclude.begin(), s.exclude.end(),
                             [&p](const SweepCondition& c) { return holds(c, p); });
    if (!s.only.empty()) {
      keep = keep && std::any_of(s.only.begin(), s.only.end(),
                                 [&p](const SweepCondition& c) { return holds(c, p); });
    }
    if (keep) points.push_back(std::move(p));
    // Next combination: the last axis turns fastest.
    size_t a = axes.size();
    while (a > 0 && ++at[a - 1] == s.keys[axes[a - 1][0]].values.size()) at[--a] = 0;
    if (a == 0) break;
  }
  if (points.empty()) throw UsageError(s.path + ": exclude/only leave no point to run");
  return points;
}

}  // namespace slowpipe::study
