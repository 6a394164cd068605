// The spec grammar: one string names a channel everywhere (CLI, config, HDF5
// attributes, plot labels). Full description with examples: docs/codec-spec.md.
//
//   spec   := scheme '(' codec ')' | codec
//   scheme := 'direct' | 'ef' | 'ef21' | 'aq'
//   codec  := stage [ '+' stage ]          (the second stage encodes the kept values)
//   stage  := name { ':' arg }
//   arg    := word | key '=' word
//
// This file only parses: it knows the shape of the grammar, not which names and
// arguments exist. The codec and scheme factories validate names and arguments
// and report errors through spec_error(), which names the 1-based position.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace slowpipe::compressors {

struct SpecArg {
  std::string key;    // empty for a positional argument ("0.1", "stochastic")
  std::string value;  // "64" in "group=64"; the whole word when positional
  size_t pos = 0;     // 1-based position of the argument's first character
};

struct SpecStage {
  std::string name;  // "q4", "topk", "fp16", ...
  size_t pos = 0;    // 1-based position of the name
  std::vector<SpecArg> args;
};

struct SpecTree {
  std::string text;               // the spec as written
  std::string scheme;             // "direct", "ef", "ef21" or "aq" ("direct" when absent)
  size_t scheme_pos = 0;          // 1-based; 0 when the scheme was implicit
  std::vector<SpecStage> stages;  // one or two stages
  size_t plus_pos = 0;            // position of '+', 0 when absent
};

// Parses the shape of a spec. Throws UsageError:
//   "bad spec 'TEXT' at position P: expected ..., got '...'"
SpecTree parse_spec(const std::string& text);

// Throws UsageError in the same format, for the factories' semantic checks.
[[noreturn]] void spec_error(const std::string& text, size_t pos, const std::string& what);

}  // namespace slowpipe::compressors
