// The resume decision of a sweep's points (see sweep_resume.h).
#include "study/sweeps/sweep_resume.h"

#include <algorithm>
#include <filesystem>

#include "config/train_config.h"
#include "runlog/runlog.h"

namespace slowpipe::study {
namespace {

bool ignored(const std::string& key) {
  return config::resume_key_may_differ(key);
}

std::string join_first(const std::vector<std::string>& items, size_t n) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < n; ++i) out += (i ? "; " : "") + items[i];
  if (items.size() > n) out += "; and " + std::to_string(items.size() - n) + " more";
  return out;
}

}  // namespace

const char* action_name(PointAction a) {
  switch (a) {
    case PointAction::kRun:
      return "run";
    case PointAction::kResume:
      return "resume";
    case PointAction::kSkip:
      return "skip";
  }
  return "?";
}

std::vector<std::string> config_differences(const std::map<std::string, std::string>& logged,
                                            const Resolved& wanted) {
  std::vector<std::string> out;
  std::map<std::string, std::string> want(wanted.begin(), wanted.end());
  for (const auto& [k, v] : want) {
    if (ignored(k)) continue;
    const auto it = logged.find(k);
    if (it == logged.end()) {
      out.push_back(k + ": (unset) -> " + v);
    } else if (it->second != v) {
      out.push_back(k + ": " + it->second + " -> " + v);
    }
  }
  for (const auto& [k, v] : logged) {
    if (!ignored(k) && want.count(k) == 0) out.push_back(k + ": " + v + " -> (unset)");
  }
  return out;
}

PointDecision decide_point(const LogState& log, const Resolved& wanted) {
  PointDecision d;
  const auto again = [&d](const std::string& reason) {
    d.reason = reason;
    d.why = reason + ": running it again";
    return d;
  };
  if (!log.exists) {
    d.fresh = false;
    d.reason = d.why = "new";
    return d;
  }
  if (!log.error.empty()) return again("the run log cannot be read (" + log.error + ")");
  const std::vector<std::string> diff = config_differences(log.config, wanted);
  if (!diff.empty()) return again("the logged configuration differs (" + join_first(diff, 3) + ")");
  if (log.status == "complete" || log.status == "diverged") {
    d.action = PointAction::kSkip;
    d.diverged = log.status == "diverged";
    d.reason = d.why = d.diverged ? "diverged, kept as a result" +
                                        (log.failure.empty() ? "" : " (" + log.failure + ")")
                                  : "complete";
  } else if (log.status == "interrupted" || log.status == "running") {
    d.action = PointAction::kResume;
    d.resume_step = log.checkpoint_step;
    d.reason = log.status == "running" ? "killed while running" : "interrupted";
    d.why = d.reason + ": resuming";
  } else if (log.status == "failed") {
    return again("failed (" + (log.failure.empty() ? std::string("no message") : log.failure) +
                 ")");
  } else {
    return again("status '" + log.status + "' is not one slowpipe writes");
  }
  return d;
}

std::string plan_text(const PointDecision& d) {
  switch (d.action) {
    case PointAction::kRun:
      return d.fresh ? "would run from scratch: " + d.reason : "would run";
    case PointAction::kResume:
      return "would resume from step " + std::to_string(d.resume_step) + ": " + d.reason;
    case PointAction::kSkip:
      return d.diverged ? "done: " + d.reason : "done";
  }
  return "?";
}

namespace {

// The newest step-N.ckpt in `dir` (sim/resume_checkpoint.cpp's names); 0 if none.
int64_t newest_checkpoint_step(const std::string& dir) {
  int64_t newest = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() <= 10 || n.rfind("step-", 0) != 0 || n.compare(n.size() - 5, 5, ".ckpt") != 0)
      continue;
    const std::string digits = n.substr(5, n.size() - 10);
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 18) continue;
    newest = std::max<int64_t>(newest, std::stoll(digits));
  }
  return newest;
}

}  // namespace

LogState read_log_state(const std::string& path) {
  LogState s;
  std::error_code ec;
  s.exists = std::filesystem::exists(path, ec);
  if (!s.exists) return s;
  s.checkpoint_step = newest_checkpoint_step(path + ".ckpt");
  try {
    for (const auto& [k, v] : runlog::read_attributes(path)) {
      if (k.rfind("config.", 0) == 0) {
        s.config[k.substr(7)] = v;
      } else if (k == "status") {
        s.status = v;
      } else if (k == "error") {
        s.failure = v;
      }
    }
    if (s.config.empty()) s.error = "no config.* attributes: not a slowpipe run log";
  } catch (const std::exception& e) {
    s.error = e.what();
  }
  return s;
}

}  // namespace slowpipe::study
