// A fresh run of a reproduction beside its committed results
// (verdict_results.h): `slowpipe verdict SWEEP.ini --compare [DIR]`. Per
// check, both sides' numbers and outcomes; per seed group and column, both
// means and the largest difference of a run; and one line that says whether
// this machine agrees.
//
// Agreement: the same runs (by point name), the same status per run, the same
// checks (text) with the same outcome, and every number of every run within
// its tolerance:
//  - machine-independent columns (steps, *_bytes, sim_time_s, fp32_ratio:
//    wire sizes follow from shapes, and the default analytic clock never reads
//    this machine's clock, docs/reproducibility.md) within 1e-9 relative: any
//    difference is a different build or configuration, not a different CPU;
//  - every other column (losses, accuracy, time to target) within the larger
//    of 1e-3 relative and half the committed group's seed spread: the same
//    build on the same CPU gives identical numbers; other CPUs' kernels round
//    differently and the difference grows with training (measured here, 192
//    fine-tuning steps with an AVX build of OpenBLAS and ATen's default
//    kernels: 1e-9 relative for fp32, 4.5e-5 on the train loss and 3.4e-4 on
//    the eval loss of AQ-SGD q3); half a seed spread admits what a chaotic
//    group does under any small perturbation, and stays well inside the
//    2-spread margins the checks use.
// "identical" when every number is bit-identical. Plain C++; no libtorch.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "study/sweeps/verdict_results.h"

namespace slowpipe::study {

struct CompareTolerance {
  double exact_relative = 1e-9;  // machine-independent columns
  double relative = 1e-3;        // other columns: of |committed|
  double spreads = 0.5;          // ... or this many committed seed spreads of the group
};

// steps, *_bytes, sim_time_s, fp32_ratio: the same on any machine.
bool machine_independent_column(const std::string& column);

enum class Agreement { kIdentical, kWithinTolerance, kDiffers };
const char* agreement_name(Agreement a);  // "identical", "within tolerance", "differs"

struct ValueComparison {
  std::string column;
  double fresh_mean, committed_mean;  // over the group's runs with a finite value
  double largest_diff = 0;            // |fresh - committed| of a run, the largest
  double allowed = 0;                 // its tolerance at that run
  Agreement agreement = Agreement::kIdentical;
};

struct GroupComparison {
  std::string group;  // point_group() of its runs
  std::string label;  // run.label
  size_t fresh_runs = 0, committed_runs = 0;
  std::vector<ValueComparison> values;  // the columns both sides have
  std::vector<std::string> problems;    // runs missing on one side, statuses that differ
  Agreement agreement = Agreement::kIdentical;
};

struct CheckComparison {
  size_t number = 0;  // 1-based
  bool has_fresh = false, has_committed = false;
  ResultCheck fresh, committed;
  bool same_text = false, same_outcome = false;
  bool identical_numbers = false;  // A and B bit-identical
};

struct Comparison {
  std::vector<CheckComparison> checks;
  std::vector<GroupComparison> groups;
  Agreement agreement = Agreement::kIdentical;
  std::vector<std::string> reasons;  // what differs, in words (the first few)
  size_t runs_matched = 0, values_compared = 0, values_identical = 0;
};

Comparison compare_results(const Results& fresh, const Results& committed,
                           const CompareTolerance& tolerance = {});

struct CompareReport {
  std::string claim_id;
  std::string fresh_dir, committed_dir;
  const Results* fresh = nullptr;
  const Results* committed = nullptr;
  const Comparison* comparison = nullptr;
  CompareTolerance tolerance;
};
// Markdown: the one-line answer, both sides' provenance, the tolerance, the
// checks and the groups side by side.
void write_comparison(const CompareReport& report, std::ostream& out);
// "agrees (identical)", "agrees (within tolerance)" or "differs: REASON".
std::string agreement_summary(const Comparison& comparison);

}  // namespace slowpipe::study
