// Parsing the [claim] section and its checks (verdict_claim.h, docs/reproduce.md).
#include "study/sweeps/verdict_claim.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "common/errors.h"
#include "study/summary/summary_columns.h"
#include "study/summary/summary_group.h"
#include "study/summary/summary_target.h"

namespace slowpipe::study {
namespace {

// Position of the first character of `chars` in `s` outside [...], or npos.
size_t find_outside_brackets(const std::string& s, const std::string& chars, size_t from = 0) {
  int depth = 0;
  for (size_t i = from; i < s.size(); ++i) {
    if (s[i] == '[') ++depth;
    if (s[i] == ']') --depth;
    if (depth == 0 && chars.find(s[i]) != std::string::npos) return i;
  }
  return std::string::npos;
}

// Position of the word `word` (surrounded by spaces) outside [...], or npos.
size_t find_word_outside(const std::string& s, const std::string& word) {
  const std::string padded = " " + word + " ";
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '[') ++depth;
    if (s[i] == ']') --depth;
    if (depth == 0 && s.compare(i, padded.size(), padded) == 0) return i;
  }
  return std::string::npos;
}

bool parse_number(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  return errno == 0 && end == text.c_str() + text.size() && std::isfinite(out);
}

bool is_plain_name(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

VerdictTerm parse_term_text(const std::string& raw) {
  VerdictTerm t;
  t.text = trim(raw);
  if (t.text.empty()) throw UsageError("an empty term");
  if (parse_number(t.text, t.number)) {
    t.is_number = true;
    return t;
  }
  const size_t open = t.text.find('[');
  if (open == std::string::npos || t.text.back() != ']') {
    throw UsageError("'" + t.text +
                     "' is neither a number nor COLUMN[KEY=VALUE & ...] (a row selection in "
                     "square brackets)");
  }
  std::string head = trim(t.text.substr(0, open));
  const size_t colon = head.find(':');
  if (colon != std::string::npos) {
    t.table = trim(head.substr(0, colon));
    head = trim(head.substr(colon + 1));
    if (!is_plain_name(t.table)) {
      throw UsageError("'" + t.text + "': table name '" + t.table +
                       "' is not a plain name (letters, digits, '_')");
    }
  }
  t.column = head;
  if (!is_plain_name(t.column)) {
    throw UsageError("'" + t.text + "': column '" + t.column +
                     "' is not a plain name (letters, digits, '_')");
  }
  const std::string inside = t.text.substr(open + 1, t.text.size() - open - 2);
  for (const auto& part : split_trim(inside, '&')) {
    if (part.empty()) throw UsageError("'" + t.text + "': an empty condition between '&'");
    const auto eq = part.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError("'" + t.text + "': condition '" + part + "' is not KEY=VALUE or KEY!=VALUE");
    }
    SweepTerm c;
    c.equal = part[eq - 1] != '!';
    c.key = trim(part.substr(0, c.equal ? eq : eq - 1));
    c.value = trim(part.substr(eq + 1));
    if (c.key.empty()) throw UsageError("'" + t.text + "': condition '" + part + "' names no key");
    t.where.push_back(std::move(c));
  }
  return t;
}

VerdictSide parse_side(const std::string& raw) {
  VerdictSide side;
  side.text = trim(raw);
  const size_t slash = find_outside_brackets(side.text, "/");
  if (slash == std::string::npos) {
    side.num = parse_term_text(side.text);
    return side;
  }
  if (find_outside_brackets(side.text, "/", slash + 1) != std::string::npos) {
    throw UsageError("'" + side.text + "': at most one '/' (a ratio of two terms)");
  }
  side.ratio = true;
  side.num = parse_term_text(side.text.substr(0, slash));
  side.den = parse_term_text(side.text.substr(slash + 1));
  return side;
}

VerdictTolerance parse_tolerance(const std::string& raw) {
  VerdictTolerance tol;
  tol.text = trim(raw);
  std::string rest = " " + tol.text + " ";
  std::vector<std::string> parts;
  for (size_t at; (at = rest.find(" or ")) != std::string::npos;) {
    parts.push_back(trim(rest.substr(0, at)));
    rest = " " + rest.substr(at + 4);
  }
  parts.push_back(trim(rest));
  for (const auto& p : parts) {
    double v = 0;
    const bool spreads = p.size() > 7 && (p.substr(p.size() - 7) == " spread" ||
                                          (p.size() > 8 && p.substr(p.size() - 8) == " spreads"));
    if (spreads) {
      const std::string n = trim(p.substr(0, p.rfind(' ')));
      if (!parse_number(n, v) || v < 0) throw UsageError("'" + p + "': K spreads needs K >= 0");
      tol.spreads = std::max(tol.spreads, v);
    } else if (!p.empty() && p.back() == '%') {
      if (!parse_number(trim(p.substr(0, p.size() - 1)), v) || v < 0)
        throw UsageError("'" + p + "': a percentage needs a number >= 0 before '%'");
      tol.percent = std::max(tol.percent, v);
    } else if (parse_number(p, v) && v >= 0) {
      tol.absolute = std::max(tol.absolute, v);
    } else {
      throw UsageError("tolerance part '" + p +
                       "' is not 'K spreads', 'P%' or an amount >= 0 (parts joined by 'or')");
    }
  }
  return tol;
}

const std::set<std::string> kSingleKeys = {"id",       "title",  "source",    "claim",
                                           "workload", "target", "target_on", "scale"};

}  // namespace

VerdictCheck parse_check(const std::string& text) {
  VerdictCheck c;
  c.text = trim(text);
  const size_t op = find_outside_brackets(c.text, "<>~");
  if (op == std::string::npos) {
    throw UsageError(
        "no comparison: a check is 'A < B [by T]', 'A > B [by T]' or 'A ~ B within T'");
  }
  c.op = c.text[op] == '<'   ? VerdictOp::kLess
         : c.text[op] == '>' ? VerdictOp::kGreater
                             : VerdictOp::kSimilar;
  if (find_outside_brackets(c.text, "<>~", op + 1) != std::string::npos) {
    throw UsageError("more than one comparison in one check");
  }
  c.lhs = parse_side(c.text.substr(0, op));
  std::string right = " " + c.text.substr(op + 1) + " ";
  const size_t by = find_word_outside(right, "by");
  const size_t within = find_word_outside(right, "within");
  if (c.op == VerdictOp::kSimilar) {
    if (within == std::string::npos)
      throw UsageError("'~' needs a tolerance: 'A ~ B within T' (T: K spreads, P% or an amount)");
    if (by != std::string::npos) throw UsageError("'~' takes 'within', not 'by'");
    c.tolerance = parse_tolerance(right.substr(within + 8));
    right = right.substr(0, within);
  } else {
    if (within != std::string::npos)
      throw UsageError("'<' and '>' take 'by T' (a margin), not 'within'");
    if (by != std::string::npos) {
      c.tolerance = parse_tolerance(right.substr(by + 4));
      right = right.substr(0, by);
    }
  }
  c.rhs = parse_side(right);
  if (c.lhs.num.is_number && !c.lhs.ratio && c.rhs.num.is_number && !c.rhs.ratio) {
    throw UsageError("both sides are numbers: a check compares a measured value");
  }
  return c;
}

std::vector<std::string> split_command(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  bool have = false;
  char quote = 0;
  for (const char ch : text) {
    if (quote != 0) {
      if (ch == quote) {
        quote = 0;
      } else {
        cur += ch;
      }
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      have = true;
    } else if (std::isspace(static_cast<unsigned char>(ch))) {
      if (have) out.push_back(cur);
      cur.clear();
      have = false;
    } else {
      cur += ch;
      have = true;
    }
  }
  if (quote != 0) throw UsageError("unbalanced quote in '" + text + "'");
  if (have) out.push_back(cur);
  return out;
}

namespace {

// A table.NAME line: a plain name, defined once, naming a command.
void add_table(Claim& claim, const IniLine& l) {
  Claim::Table t{l.key.substr(6), split_command(l.value), l.line};
  if (!is_plain_name(t.name)) {
    throw UsageError("table name '" + t.name + "' is not a plain name (letters, digits, '_')");
  }
  for (const auto& other : claim.tables) {
    if (other.name == t.name) throw UsageError("table." + t.name + " given twice");
  }
  if (t.args.empty()) throw UsageError("table." + t.name + " names no command");
  claim.tables.push_back(std::move(t));
}

// Sets what line `l` of [claim] says; throws a UsageError without the
// line's place for a bad value or an unknown key.
void apply_claim_line(Claim& claim, const IniLine& l) {
  if (l.key == "id") {
    claim.id = l.value;
  } else if (l.key == "title") {
    claim.title = l.value;
  } else if (l.key == "source") {
    claim.source = l.value;
  } else if (l.key == "claim") {
    claim.claim = l.value;
  } else if (l.key == "workload") {
    claim.workload = l.value;
  } else if (l.key == "note") {
    claim.notes.push_back(l.value);
  } else if (l.key == "target") {
    if (!parse_number(l.value, claim.target)) throw UsageError("target is not a number");
    claim.has_target = true;
  } else if (l.key == "target_on") {
    claim.target_on = target_rule_name(parse_target_rule(l.value, "target_on ="));
  } else if (l.key == "scale") {
    for (const auto& k : split_trim(l.value, ',')) {
      if (k.empty() || k.find('.') == std::string::npos)
        throw UsageError("scale lists dotted train keys separated by ',' (got '" + k + "')");
      claim.scale_keys.push_back(k);
    }
  } else if (l.key.rfind("table.", 0) == 0) {
    add_table(claim, l);
  } else if (l.key == "check" || l.key.rfind("check.", 0) == 0) {
    VerdictCheck c = parse_check(l.value);
    c.line = l.line;
    c.finding = l.key == "check" ? "" : l.key.substr(6);
    if (l.key != "check" && !is_plain_name(c.finding)) {
      throw UsageError("finding name '" + c.finding + "' is not a plain name");
    }
    claim.checks.push_back(std::move(c));
  } else {
    throw UsageError("unknown key '" + l.key +
                     "' (keys: id, title, source, claim, workload, note, target, target_on, "
                     "scale, table.NAME, check, check.FINDING)");
  }
}

// Every term of every check names a summary column (target set where one
// needs it) or a table the claim defines.
void check_claim_terms(const Claim& claim, const SweepFile& sweep) {
  std::set<std::string> columns;
  for (const auto& c : summary_columns()) columns.insert(c.id);
  for (const auto& c : claim.checks) {
    const std::string where = sweep.path + ":" + std::to_string(c.line) + ": check: ";
    for (const VerdictTerm* t : {&c.lhs.num, &c.lhs.den, &c.rhs.num, &c.rhs.den}) {
      if (t->is_number || t->column.empty()) continue;
      if (t->table.empty()) {
        if (columns.count(t->column) == 0) {
          throw UsageError(where + "'" + t->column +
                           "' is not a summary column (docs/summary.md lists them)");
        }
        if (is_target_column(t->column) && !claim.has_target) {
          throw UsageError(where + "'" + t->column + "' needs 'target = LOSS' in [claim]");
        }
        continue;
      }
      const bool defined = std::any_of(claim.tables.begin(), claim.tables.end(),
                                       [t](const Claim::Table& x) { return x.name == t->table; });
      if (!defined) {
        throw UsageError(where + "table '" + t->table + "' is not defined (table." + t->table +
                         " = COMMAND ...)");
      }
    }
  }
}

}  // namespace

Claim parse_claim(const SweepFile& sweep) {
  Claim claim;
  std::map<std::string, int> seen;
  for (const auto& l : sweep.claim) {
    const std::string where = sweep.path + ":" + std::to_string(l.line) + ": [claim] ";
    if (kSingleKeys.count(l.key) != 0) {
      const auto [it, fresh] = seen.emplace(l.key, l.line);
      if (!fresh) {
        throw UsageError(where + "'" + l.key + "' given twice (first on line " +
                         std::to_string(it->second) + ")");
      }
    }
    if (l.value.empty()) throw UsageError(where + "'" + l.key + "' is empty");
    try {
      apply_claim_line(claim, l);
    } catch (const UsageError& e) {
      if (std::string(e.what()).rfind(sweep.path, 0) == 0) throw;
      throw UsageError(where + l.key + ": " + e.what());
    }
  }
  const std::string file = sweep.path + ": [claim] ";
  for (const char* key : {"id", "title", "claim"}) {
    if (seen.count(key) == 0) throw UsageError(file + "needs '" + key + " = ...'");
  }
  if (claim.checks.empty()) throw UsageError(file + "needs at least one 'check = ...'");
  for (auto& c : claim.checks) {
    if (c.finding.empty()) c.finding = claim.id;
  }
  check_claim_terms(claim, sweep);
  return claim;
}

void check_claim_points(const Claim& claim, const SweepFile& sweep, const ResolvedSweep& points) {
  const auto& ignored = non_computational_keys();
  for (const auto& c : claim.checks) {
    const std::string where = sweep.path + ":" + std::to_string(c.line) + ": check: ";
    for (const VerdictTerm* t : {&c.lhs.num, &c.lhs.den, &c.rhs.num, &c.rhs.den}) {
      if (t->is_number || t->column.empty() || !t->table.empty()) continue;
      std::vector<const ResolvedPoint*> match;
      for (const auto& p : points.points) {
        bool all = true;
        for (const auto& w : t->where) {
          const auto kv = std::find_if(p.resolved.begin(), p.resolved.end(),
                                       [&w](const auto& x) { return x.first == w.key; });
          if (kv == p.resolved.end()) {
            throw UsageError(where + "'" + t->text + "': '" + w.key + "' is not a train key");
          }
          all = all && ((kv->second == w.value) == w.equal);
        }
        if (all) match.push_back(&p);
      }
      if (match.empty())
        throw UsageError(where + "'" + t->text + "' selects no point of the sweep");
      for (const ResolvedPoint* p : match) {
        for (size_t k = 0; k < p->resolved.size(); ++k) {
          const auto& [key, value] = p->resolved[k];
          if (key == "run.seed" || ignored.count(key) != 0) continue;
          if (match[0]->resolved[k].second != value) {
            throw UsageError(where + "'" + t->text + "' selects points that differ in " + key +
                             " (" + match[0]->name + ", " + p->name +
                             "): add a condition so that it selects one seed group");
          }
        }
      }
    }
  }
}

}  // namespace slowpipe::study
