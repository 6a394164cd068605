// model.bottleneck: a learned bottleneck at block boundaries of the `gpt`
// model, so that what crosses a pipeline cut there is narrow by construction
// (docs/models.md, "Learned bottlenecks"). Plain C++ (no libtorch): the
// config layer, `slowpipe timing` and the parameter counts read it.
//
//   resbm:r=R[:at=I+J+...]          ResBM: the sender's last block writes R
//                                   values per token (an identity slice plus a
//                                   learned residual), the receiver's first
//                                   block lifts them back to d_model
//   learned:k=K[:anchor=A][:at=...] a learned orthonormal projection U [C, K]
//                                   per boundary (kept on the Stiefel manifold),
//                                   with optional factorised anchor embeddings
//                                   of rank A (0: none)
//
// `at` lists the transformer blocks (1-based) followed by a bottleneck; by
// default every transformer block but the last, which is every cut a
// pipeline with one transformer block per stage can have.
#pragma once

#include <string>
#include <vector>

namespace slowpipe::models {

enum class BottleneckKind { kNone, kResbm, kLearned };

struct BottleneckSpec {
  BottleneckKind kind = BottleneckKind::kNone;
  int width = 0;           // r (resbm) or k (learned): values per token across a bottleneck
  int anchor = 0;          // learned: rank of the factorised anchor embeddings; 0 = none
  std::vector<int> after;  // transformer blocks followed by a bottleneck (1-based, increasing)
  bool on() const { return kind != BottleneckKind::kNone; }
  // The canonical text ("resbm:r=8", "learned:k=16:anchor=16:at=2"): what a
  // checkpoint records. "" when off.
  std::string text() const;
};

// Parses model.bottleneck for a GPT of `layers` transformer blocks and width
// `d_model`. "" is off. UsageError (naming model.bottleneck) on an unknown
// kind or option, a width outside [1, d_model], a missing width, an anchor
// rank outside [0, d_model], or an `at` block outside [1, layers - 1] or not
// increasing. Fills `after` with the default when `at` is not given.
BottleneckSpec parse_bottleneck(const std::string& text, int layers, int d_model);

// True when a bottleneck follows transformer block `block` (1-based).
bool bottleneck_after(const BottleneckSpec& spec, int block);

// Parameters the bottlenecks add to a GPT of width `d_model` and vocabulary
// `vocab`: resbm 2 r C per bottleneck (encoder [r, C], decoder [C, r]);
// learned C k per bottleneck (U) plus, with anchors, V A + A C.
long long bottleneck_parameters(const BottleneckSpec& spec, int d_model, int vocab);

}  // namespace slowpipe::models
