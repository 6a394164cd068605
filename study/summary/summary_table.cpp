// Building and printing the summary table (see summary_table.h).
#include "study/summary/summary_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/errors.h"
#include "netmodel/compute_model.h"
#include "study/summary/key_names.h"
#include "study/summary/summary_target.h"

namespace slowpipe::study {
namespace {

const char* const kMissing = "\u2013";  // en dash
const char* const kPlusMinus = " \u00b1 ";

std::string printf_string(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

// Display width of UTF-8 text: code points (every character here is one column).
size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string tsv_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return printf_string("%.0f", v);
  return printf_string("%.10g", v);
}

struct Row {
  std::vector<std::string> cells;
};

// The simulated devices of the runs (netmodel::compute_device_label of their
// net.compute; a log without it is left out), e.g. {"RTX4090"}.
std::set<std::string> simulated_devices(const SummaryTable& table) {
  std::set<std::string> out;
  for (const auto& group : table.groups) {
    for (const RunStats* run : group.runs) {
      const auto it = run->config.find("net.compute");
      if (it != run->config.end()) out.insert(netmodel::compute_device_label(it->second));
    }
  }
  return out;
}

// "sim time [s]" -> "sim time on RTX4090 [s]" when every run simulated one device.
std::string with_device(const std::string& title, const std::set<std::string>& devices) {
  const std::string tag = "sim time";
  if (devices.size() != 1 || title.rfind(tag, 0) != 0) return title;
  return tag + " on " + *devices.begin() + title.substr(tag.size());
}

bool ranked(const SummaryTable& table) {
  return !table.rank_by.empty();
}

// Text cells of the rank and front columns; TSV ones when `tsv`.
std::string rank_cell(const SummaryTable& table, size_t g, bool tsv) {
  const size_t rank = table.ranks[g];
  return rank > 0 ? std::to_string(rank) : (tsv ? "nan" : kMissing);
}
std::string front_cell(FrontMark mark, bool tsv) {
  switch (mark) {
    case FrontMark::kOn:
      return tsv ? "1" : "yes";
    case FrontMark::kOff:
      return tsv ? "0" : "no";
    case FrontMark::kNone:
      break;
  }
  return tsv ? "nan" : kMissing;
}

// Header and rows of the text and Markdown forms; `numeric[c]`: right-aligned;
// `ids[c]`: "rank", "key", "n", "run", "status", "front_bytes", "front_time" or
// a statistic column id. `narrow`: keys by their short names, no device in titles.
struct TextTable {
  std::vector<std::string> header, ids;
  std::vector<bool> numeric;
  std::vector<Row> rows;
  void add(const std::string& title, const std::string& id, bool right) {
    header.push_back(title), ids.push_back(id), numeric.push_back(right);
  }
};

TextTable text_rows(const SummaryTable& table, bool narrow) {
  TextTable t;
  if (ranked(table)) t.add("rank", "rank", true);
  const std::vector<std::string> short_keys = short_key_names(table.keys);
  for (size_t k = 0; k < table.keys.size(); ++k)
    t.add(narrow ? short_keys[k] : table.keys[k], "key", false);
  t.add(table.grouped ? "n" : "run", table.grouped ? "n" : "run", table.grouped);
  t.add("status", "status", false);
  if (ranked(table)) {
    t.add(narrow ? "front/bytes" : "front loss/bytes", "front_bytes", false);
    t.add(narrow ? "front/time" : "front loss/time", "front_time", false);
  }
  const std::set<std::string> devices = narrow ? std::set<std::string>{} : simulated_devices(table);
  for (const auto& col : table.columns) {
    const std::string title = is_target_column(col.id)
                                  ? target_column_title(col.title, table.options.target_loss)
                                  : col.title;
    t.add(with_device(title, devices), col.id, true);
  }
  for (size_t g = 0; g < table.groups.size(); ++g) {
    const RunGroup& group = table.groups[g];
    Row row;
    if (ranked(table)) row.cells.push_back(rank_cell(table, g, false));
    for (const auto& key : table.keys) row.cells.push_back(group_key_value(group, key));
    row.cells.push_back(table.grouped
                            ? std::to_string(group.runs.size())
                            : std::filesystem::path(group.runs.front()->path).stem().string());
    row.cells.push_back(group_status(group, narrow));
    if (ranked(table)) {
      row.cells.push_back(front_cell(table.front_bytes[g], false));
      row.cells.push_back(front_cell(table.front_time[g], false));
    }
    for (const auto& col : table.columns)
      row.cells.push_back(format_cell(col, aggregate(group, col.id)));
    t.rows.push_back(std::move(row));
  }
  return t;
}

// The notes on the to-target columns the table shows (none without a target).
std::vector<std::string> target_notes(const SummaryTable& table) {
  const SummaryOptions& o = table.options;
  if (!o.has_target) return {};
  std::ostringstream s, counts;
  if (o.target_on == TargetRule::kTrain) {
    s << "sim time to loss \u2264 " << o.target_loss
      << ": simulated time at the first step whose train loss, averaged over the last "
      << o.smooth_window << " steps, is at or below it.";
  } else {
    s << "sim time to eval loss \u2264 " << o.target_loss
      << ": simulated time at the earliest evaluation (every eval.every steps) whose validation "
         "loss is at or below it.";
  }
  std::vector<std::string> out = {s.str()};
  const bool counted = std::any_of(table.columns.begin(), table.columns.end(), [](const auto& c) {
    return is_target_column(c.id) && c.format == CellFormat::kCount;
  });
  if (counted) {
    counts << "steps, samples, tokens to " << (o.target_on == TargetRule::kEval ? "eval " : "")
           << "loss \u2264 " << o.target_loss
           << ": at that step; samples seen by it (global batch), tokens = samples x "
              "model.seq_len (language models). not reached: never at or below it.";
    out.push_back(counts.str());
  }
  return out;
}

std::vector<std::string> notes(const SummaryTable& table, bool narrow) {
  std::vector<std::string> out = {
      "train loss: mean over the last 10% of logged steps (at least 1). eval: the last "
      "evaluation; best: lowest loss and bits/byte, highest accuracy over all evaluations; "
      "(c): with the forward codecs applied.",
      "fw/bw/grad: bytes on the wire per step, averaged over the run; vs fp32: what fp32 "
      "would send divided by what was sent.",
  };
  const std::vector<std::string> target = target_notes(table);
  out.insert(out.end(), target.begin(), target.end());
  const std::set<std::string> devices = simulated_devices(table);
  if (devices.size() > 1) {
    std::string list;
    for (const auto& d : devices) list += (list.empty() ? "" : ", ") + d;
    out.push_back("sim time: the runs simulate different devices (" + list +
                  "; net.compute): their times do not compare.");
  }
  if (ranked(table)) {
    out.push_back(
        "rank: by " + table.rank_by + ", " +
        (column_higher_is_better(table.rank_by) ? "highest" : "lowest") +
        " first (ties share a rank; a diverged group counts as the worst value; "
        "\u2013: no value). " +
        std::string(narrow ? "front/bytes, front/time" : "front loss/bytes, front loss/time") +
        ": on the Pareto front of "
        "(train loss, wire/step = fw + bw + grad bytes per step) and of (train loss, "
        "sim time): no other row is at least as good in both and better in one.");
  }
  if (table.grouped) {
    out.push_back(
        "runs that differ only in run.seed form one row: mean \u00b1 sample standard "
        "deviation (n\u22121); (k/n): only k of the n runs have the value.");
  }
  return out;
}

// The order in which kText keeps columns (summary_table.h); ids not listed come last.
std::vector<std::string> keep_order(const SummaryTable& table) {
  return {"rank",
          "key",
          "n",
          "run",
          "status",
          "train_loss",
          table.rank_by,
          "front_bytes",
          "front_time",
          "accuracy",
          "bits_per_byte",
          "sim_time_s",
          "time_to_target_s",
          "eval_time_to_target_s",
          "fp32_ratio",
          "wire_bytes",
          "fw_bytes",
          "bw_bytes",
          "grad_bytes",
          "state_bytes",
          "eval_loss",
          "steps"};
}

// Which columns of `t` (with display widths `width`) kText shows: the always-kept
// ones, then the others in keep_order while the line stays within kTextWidth.
// Whether there are key columns and their cells tell every row apart.
bool keys_tell_rows_apart(const TextTable& t) {
  std::set<std::vector<std::string>> seen;
  for (const auto& row : t.rows) {
    std::vector<std::string> keys;
    for (size_t c = 0; c < t.ids.size(); ++c)
      if (t.ids[c] == "key") keys.push_back(row.cells[c]);
    if (keys.empty() || !seen.insert(keys).second) return false;
  }
  return true;
}

std::vector<bool> fit_columns(const SummaryTable& table, const TextTable& t,
                              const std::vector<size_t>& width) {
  std::vector<bool> keep(t.ids.size(), false);
  const bool drop_run = keys_tell_rows_apart(t);  // --no-group: the log names repeat the keys
  const bool all_complete = std::all_of(t.rows.begin(), t.rows.end(), [&](const Row& r) {
    const auto it = std::find(t.ids.begin(), t.ids.end(), "status");
    return r.cells[static_cast<size_t>(it - t.ids.begin())] == "complete";
  });
  size_t used = 0;
  auto try_keep = [&](size_t c, bool always) {
    if (keep[c] || (t.ids[c] == "status" && all_complete && !t.rows.empty())) return;
    if (t.ids[c] == "run" && drop_run) return;
    const size_t need = width[c] + (used ? 2 : 0);
    if (!always && used + need > kTextWidth) return;
    keep[c] = true, used += need;
  };
  for (const auto& id : keep_order(table)) {
    const bool always = id == "rank" || id == "key" || id == "n" || id == "run" || id == "status";
    for (size_t c = 0; c < t.ids.size(); ++c)
      if (t.ids[c] == id) try_keep(c, always);
  }
  for (size_t c = 0; c < t.ids.size(); ++c) try_keep(c, false);
  return keep;
}

// `note` broken at spaces into lines of at most kTextWidth columns.
void write_wrapped(const std::string& note, std::ostream& out) {
  std::istringstream words(note);
  std::string word, line;
  while (words >> word) {
    if (!line.empty() && display_width(line) + 1 + display_width(word) > kTextWidth) {
      out << line << "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  out << line << "\n";
}

// What kText left out: the device of "sim time" and the dropped columns.
std::vector<std::string> fit_notes(const SummaryTable& table, const TextTable& t,
                                   const std::vector<bool>& keep) {
  std::vector<std::string> out;
  const std::set<std::string> devices = simulated_devices(table);
  if (devices.size() == 1) out.push_back("sim time: simulated on " + *devices.begin() + ".");
  const bool stale = std::any_of(t.rows.begin(), t.rows.end(), [&](const Row& r) {
    return std::any_of(r.cells.begin(), r.cells.end(),
                       [](const std::string& c) { return c.rfind("stale", 0) == 0; });
  });
  if (stale)
    out.push_back(
        "stale: status running, but no heartbeat for long; the run most likely died "
        "(--wide shows since when).");
  std::string dropped;
  for (size_t c = 0; c < keep.size(); ++c) {
    if (!keep[c] && t.ids[c] == "status") out.push_back("status: every run is complete.");
    if (!keep[c] && t.ids[c] == "run")
      out.push_back("run: the log of each row, left out (the keys tell the rows apart).");
    if (!keep[c] && t.ids[c] != "status" && t.ids[c] != "run")
      dropped += (dropped.empty() ? "" : ", ") + t.header[c];
  }
  if (!dropped.empty())
    out.push_back("left out to fit " + std::to_string(kTextWidth) + " columns: " + dropped +
                  " (all columns, full key names: --wide, --md or --tsv).");
  return out;
}

void write_text(const SummaryTable& table, bool wide, std::ostream& out) {
  const TextTable t = text_rows(table, !wide);
  std::vector<size_t> width(t.header.size());
  for (size_t c = 0; c < t.header.size(); ++c) {
    width[c] = display_width(t.header[c]);
    for (const auto& row : t.rows) width[c] = std::max(width[c], display_width(row.cells[c]));
  }
  const std::vector<bool> keep =
      wide ? std::vector<bool>(width.size(), true) : fit_columns(table, t, width);
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (!keep[c]) continue;
      const std::string pad(width[c] - display_width(cells[c]), ' ');
      text += (text.empty() ? "" : "  ") + (t.numeric[c] ? pad + cells[c] : cells[c] + pad);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << "\n";
  };
  line(t.header);
  for (const auto& row : t.rows) line(row.cells);
  out << "\n";
  std::vector<std::string> all = notes(table, !wide);
  if (!wide) {
    const auto more = fit_notes(table, t, keep);
    all.insert(all.end(), more.begin(), more.end());
  }
  for (const auto& note : all) wide ? void(out << note << "\n") : write_wrapped(note, out);
}

std::string markdown_escape(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

void write_markdown(const SummaryTable& table, std::ostream& out) {
  const TextTable t = text_rows(table, /*narrow=*/false);
  auto line = [&](const std::vector<std::string>& cells) {
    out << "|";
    for (const auto& cell : cells) out << " " << markdown_escape(cell) << " |";
    out << "\n";
  };
  line(t.header);
  out << "|";
  for (bool right : t.numeric) out << (right ? "---:|" : "---|");
  out << "\n";
  for (const auto& row : t.rows) line(row.cells);
  out << "\n";
  for (const auto& note : notes(table, false)) out << note << "\n";
}

void write_tsv(const SummaryTable& table, std::ostream& out) {
  std::vector<std::string> header = table.keys;
  if (ranked(table)) header.insert(header.begin(), "rank");
  header.push_back(table.grouped ? "n" : "run");
  header.push_back("status");
  if (ranked(table)) header.insert(header.end(), {"front_bytes", "front_time"});
  for (const auto& col : table.columns) {
    header.push_back(col.id);
    if (table.grouped) header.push_back(col.id + "_std");
    if (table.grouped && col.id == "time_to_target_s") header.push_back("time_to_target_reached");
    if (table.grouped && col.id == "eval_time_to_target_s")
      header.push_back("eval_time_to_target_reached");
  }
  for (size_t c = 0; c < header.size(); ++c) out << (c ? "\t" : "") << header[c];
  out << "\n";
  for (size_t g = 0; g < table.groups.size(); ++g) {
    const RunGroup& group = table.groups[g];
    std::vector<std::string> cells;
    if (ranked(table)) cells.push_back(rank_cell(table, g, true));
    for (const auto& key : table.keys) cells.push_back(group_key_value(group, key));
    cells.push_back(table.grouped ? std::to_string(group.runs.size()) : group.runs.front()->path);
    cells.push_back(group_status(group));
    if (ranked(table)) {
      cells.push_back(front_cell(table.front_bytes[g], true));
      cells.push_back(front_cell(table.front_time[g], true));
    }
    for (const auto& col : table.columns) {
      const GroupCell cell = aggregate(group, col.id);
      // Only +infinity values (target never reached): the mean is infinite.
      const bool unreached = cell.stat.n == 0 && cell.infinite > 0;
      cells.push_back(unreached ? "inf" : tsv_number(cell.stat.mean));
      if (table.grouped) cells.push_back(tsv_number(cell.stat.std));
      if (table.grouped && (col.id == "time_to_target_s" || col.id == "eval_time_to_target_s"))
        cells.push_back(std::to_string(cell.stat.n));
    }
    for (size_t c = 0; c < cells.size(); ++c) out << (c ? "\t" : "") << cells[c];
    out << "\n";
  }
}

}  // namespace

std::string format_number(CellFormat format, double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  switch (format) {
    case CellFormat::kCount:
      return v == std::floor(v) ? printf_string("%.0f", v) : printf_string("%.1f", v);
    case CellFormat::kLoss:
      return printf_string("%.4g", v);
    case CellFormat::kSeconds:
      return std::fabs(v) >= 100 ? printf_string("%.0f", v) : printf_string("%.3g", v);
    case CellFormat::kRatio:
      return printf_string("%.3g", v) + "x";
    case CellFormat::kBytes: {
      const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
      int u = 0;
      while (std::fabs(v) >= 1024 && u < 4) v /= 1024, ++u;
      return printf_string(u == 0 ? "%.0f" : "%.3g", v) + " " + units[u];
    }
  }
  return printf_string("%g", v);
}

std::string format_cell(const SummaryColumn& column, const GroupCell& cell) {
  if (cell.stat.n == 0) return cell.infinite > 0 ? "not reached" : kMissing;
  std::string text = format_number(column.format, cell.stat.mean);
  // A spread below 1e-9 of the mean is rounding in equal computations: 0.
  const double sd = cell.stat.std <= 1e-9 * std::fabs(cell.stat.mean) ? 0 : cell.stat.std;
  const bool decimal = column.format == CellFormat::kLoss || column.format == CellFormat::kSeconds;
  if (cell.stat.n >= 2 && decimal && sd > 0 && std::isfinite(sd)) {
    // The std to 2 significant digits and the mean to the same decimal place.
    const int places = std::clamp(1 - static_cast<int>(std::floor(std::log10(sd))), 0, 6);
    const std::string format = "%." + std::to_string(places) + "f";
    text = printf_string(format.c_str(), cell.stat.mean) + kPlusMinus +
           printf_string(format.c_str(), sd);
  } else if (cell.stat.n >= 2 && !(sd == 0 && !decimal)) {
    // Counts, bytes and ratios that agree across seeds show no "± 0".
    const CellFormat sd_format =
        column.format == CellFormat::kCount ? CellFormat::kLoss : column.format;
    text += kPlusMinus + format_number(sd_format, sd);
  }
  if (cell.stat.n < cell.runs) {
    text += " (" + std::to_string(cell.stat.n) + "/" + std::to_string(cell.runs) + ")";
  }
  return text;
}

SummaryTable build_summary_table(const std::vector<RunStats>& runs, bool group_seeds,
                                 const SummaryOptions& options) {
  SummaryTable table;
  table.grouped = group_seeds;
  table.options = options;
  table.keys = varying_keys(runs, group_seeds);
  table.groups = group_runs(runs, group_seeds);
  sort_groups(table.groups, table.keys);
  for (const auto& col : summary_columns()) {
    // The to-target columns of the rule --target-on chose, with a target only.
    if (is_target_column(col.id) &&
        (!options.has_target || target_column_rule(col.id) != options.target_on))
      continue;
    if (col.id == "wire_bytes") continue;  // shown by rank_summary_table
    bool any = false;
    for (const auto& group : table.groups) {
      const GroupCell cell = aggregate(group, col.id);
      any = any || cell.stat.n > 0 || cell.infinite > 0;
    }
    if (any) table.columns.push_back(col);
  }
  return table;
}

bool rankable_column(const std::string& id, const SummaryOptions& options) {
  if (is_target_column(id))
    return options.has_target && target_column_rule(id) == options.target_on;
  const auto& cols = summary_columns();
  return std::any_of(cols.begin(), cols.end(), [&](const SummaryColumn& c) { return c.id == id; });
}

void rank_summary_table(SummaryTable& table, const std::string& by) {
  if (!rankable_column(by, table.options)) {
    std::string ids;
    for (const auto& col : summary_columns())
      if (rankable_column(col.id, table.options)) ids += (ids.empty() ? "" : ", ") + col.id;
    throw UsageError("--rank " + by + ": not a summary column; one of " + ids +
                     (table.options.has_target
                          ? " (the other rule's to-target columns need --target-on " +
                                target_rule_name(table.options.target_on == TargetRule::kTrain
                                                     ? TargetRule::kEval
                                                     : TargetRule::kTrain) +
                                ")"
                          : " (time_to_target_s needs --target)"));
  }
  const Ranking ranking = rank_groups(table.groups, by);
  std::vector<RunGroup> groups;
  table.rank_by = by;
  table.ranks.clear(), table.front_bytes.clear(), table.front_time.clear();
  for (size_t g : ranking.order) {
    groups.push_back(table.groups[g]);
    table.ranks.push_back(ranking.rank[g]);
    table.front_bytes.push_back(ranking.front_bytes[g]);
    table.front_time.push_back(ranking.front_time[g]);
  }
  table.groups = std::move(groups);
  // wire/step beside fw, bw and grad, in summary_columns order.
  std::vector<SummaryColumn> columns;
  for (const auto& col : summary_columns()) {
    const bool shown = std::any_of(table.columns.begin(), table.columns.end(),
                                   [&](const SummaryColumn& c) { return c.id == col.id; });
    bool wire = false;
    if (col.id == "wire_bytes")
      for (const auto& group : table.groups) wire = wire || aggregate(group, col.id).stat.n > 0;
    if (shown || wire) columns.push_back(col);
  }
  table.columns = std::move(columns);
}

void write_summary(const SummaryTable& table, SummaryFormat format, std::ostream& out) {
  switch (format) {
    case SummaryFormat::kText:
      return write_text(table, /*wide=*/false, out);
    case SummaryFormat::kTextWide:
      return write_text(table, /*wide=*/true, out);
    case SummaryFormat::kTsv:
      return write_tsv(table, out);
    case SummaryFormat::kMarkdown:
      return write_markdown(table, out);
  }
}

}  // namespace slowpipe::study
