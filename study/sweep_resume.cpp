// The resume decision of a sweep's points (see sweep_resume.h).
#include "study/sweep_resume.h"

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
  if (!log.exists) {
    d.fresh = false;
    d.why = "new";
    return d;
  }
  if (!log.error.empty()) {
    d.why = "the run log cannot be read (" + log.error + "): running it again";
    return d;
  }
  const std::vector<std::string> diff = config_differences(log.config, wanted);
  if (!diff.empty()) {
    d.why = "the logged configuration differs (" + join_first(diff, 3) + "): running it again";
    return d;
  }
  if (log.status == "complete") {
    d.action = PointAction::kSkip;
    d.why = "complete";
  } else if (log.status == "diverged") {
    d.action = PointAction::kSkip;
    d.diverged = true;
    d.why = "diverged, kept as a result" + (log.failure.empty() ? "" : " (" + log.failure + ")");
  } else if (log.status == "interrupted") {
    d.action = PointAction::kResume;
    d.why = "interrupted: resuming";
  } else if (log.status == "running") {
    d.action = PointAction::kResume;
    d.why = "killed while running: resuming";
  } else if (log.status == "failed") {
    d.why = "failed (" + (log.failure.empty() ? std::string("no message") : log.failure) +
            "): running it again";
  } else {
    d.why = "status '" + log.status + "' is not one slowpipe writes: running it again";
  }
  return d;
}

LogState read_log_state(const std::string& path) {
  LogState s;
  std::error_code ec;
  s.exists = std::filesystem::exists(path, ec);
  if (!s.exists) return s;
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
