// Sweep files: a normal INI config plus a [sweep] section that lists values for
// keys, and the points (one training run each) they describe. The grammar is in
// docs/sweep.md; in short:
//
//   [model]                      any train keys, as in a config file
//   name = gpt
//   [sweep]
//   config  = base.ini | more.ini          base configs, relative to this file
//   compress.fw = none | q4 | aq(q2)       values of a key, separated by '|'
//   model.init_from = "" | pretrain.pt     "" is the empty value
//   run.label   = fp32 | direct q4 | AQ-SGD
//   run.seed    = 1 | 2
//   zip     = compress.fw, run.label       keys that vary together (a group per
//                                          '|'); the lists must be equally long
//   exclude = compress.fw=none & run.seed=2 | ...   drop matching points
//   only    = compress.fw!=q4 | ...                  keep matching points only
//   name    = act-bits                     sweep name (default: the file's stem)
//
// '|' separates list items because channel specs contain ',', ':' and '()';
// ';' would start an INI comment, so it is refused inside [sweep]. An optional
// [claim] section (docs/reproduce.md: the finding a reproduction tests and its
// criterion) is taken off the base configuration as well and kept as raw
// lines for study/sweeps/verdict_claim.h. The points
// are the cross product of the keys (and zip groups) in the order written,
// the first outermost, minus what exclude/only drop. This header is pure
// parsing: keys are checked against the train options by sweep_points.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace slowpipe::study {

// The list separator of [sweep] values.
constexpr char kSweepSeparator = '|';

// One swept key: its values in the order written.
struct SweepKey {
  std::string key;
  std::vector<std::string> values;
  int line = 0;  // line of the sweep file that lists it
  // What each value means where two spellings can mean one run (a channel
  // spec's canonical form: q4:nearest is q4), filled by sweep_points.h; the
  // duplicate check compares these. Empty: the values as written.
  std::vector<std::string> canonical;
};

// A term of an exclude/only condition: key=value or key!=value.
struct SweepTerm {
  std::string key;
  std::string value;
  bool equal = true;
};
// A condition: its terms joined by '&' (all must hold).
struct SweepCondition {
  std::vector<SweepTerm> terms;
  std::string text;  // as written, for messages
  int line = 0;
};

// A raw `key = value` line of a section slowpipe parses itself ([claim]).
struct IniLine {
  std::string key, value;
  int line = 0;
};

struct SweepFile {
  std::string path;      // as given
  std::string name;      // `name =` or the file's stem
  std::string base_dir;  // the file's folder (absolute): relative paths resolve here
  // The file's text with the [sweep] section blanked (line numbers kept): the
  // base configuration it sets, for OptionSet::load_ini_text.
  std::string base_text;
  std::vector<std::string> configs;  // `config =` files, made absolute
  std::vector<SweepKey> keys;        // in the order written
  // Zip groups: indices into `keys`; a key in no group is its own axis.
  std::vector<std::vector<size_t>> zips;
  std::vector<SweepCondition> exclude, only;
  bool has_claim = false;      // a [claim] section is present
  std::vector<IniLine> claim;  // its lines in order (keys may repeat: check = ...)
};

// One point: a value for every swept key, in the order of SweepFile::keys.
struct SweepPoint {
  std::vector<std::pair<std::string, std::string>> values;
  const std::string& value(const std::string& key) const;
};

// Reads and parses a sweep file; UsageError naming the file and line for a
// file that cannot be read, a missing or empty [sweep] section, an empty list
// or list item, ';' in [sweep], a key listed twice, a zip naming an unlisted
// key (or one key twice), zip lists of unequal length, a condition on an
// unlisted key or a value that key does not list, a bad sweep name.
SweepFile read_sweep_file(const std::string& path);
// The parser on text in memory: `path` names it in messages and gives the
// default name; `base_dir` is where relative `config =` files resolve.
SweepFile parse_sweep_text(const std::string& text, const std::string& path,
                           const std::string& base_dir);

// The points in order: cross product over the axes, then exclude/only.
// UsageError when no point is left, or when two points would be equal: a key
// (or a zip group) listing the same value (combination) twice, or two
// spellings of one (SweepKey::canonical), both named.
std::vector<SweepPoint> expand_points(const SweepFile& sweep);

// Text helpers, shared with the rest of the sweep code.
std::string trim(const std::string& s);
// Splits at `sep`, trimming each part.
std::vector<std::string> split_trim(const std::string& s, char sep);

}  // namespace slowpipe::study
