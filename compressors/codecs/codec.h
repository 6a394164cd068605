// A codec is stateless compression: a float tensor becomes a message (the exact
// bytes that would cross the network, nothing hidden) and a message becomes a
// tensor again. The receiver knows the tensor's shape (pipeline stages agree on
// activation shapes), so the message is the codec's payload alone: no header,
// no shape (`none` costs exactly 4 bytes per element). Byte counts per codec:
// docs/codec-spec.md. Layouts and bit packing assume a little-endian host.
// There is no checksum (the transport has its own): a flipped bit in quantized
// codes decodes to another valid value; a wrong length, non-finite or
// inconsistent scales and bad indices give DataError.
//
// Plain C++ (library slowpipe::codecs, no libtorch): codecs work on raw fp32
// buffers, and their sizes, names and specs are known without loading torch
// (`slowpipe codecs`, `slowpipe timing`). The at::Tensor conveniences encode()
// and decode() are defined in codec_tensor.cpp, part of slowpipe::compressors
// (which links libtorch); a program that links slowpipe::codecs alone cannot
// call them. fp16 and bf16 conversions use c10's header-only Half and BFloat16
// (the same bits as libtorch's tensors), nothing that needs linking.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/registry.h"
#include "compressors/codecs/codec_state.h"
#include "compressors/codecs/spec.h"

namespace at {
class Tensor;
}  // namespace at

namespace slowpipe::compressors {

using Shape = std::vector<int64_t>;
using Message = std::vector<uint8_t>;

int64_t shape_numel(const Shape& shape);
// Rows of a tensor seen as [shape[0], rest]: samples. A 0-d or 1-d tensor is one row.
int64_t shape_rows(const Shape& shape);

// The indices a sparsifier kept in its last encode: `rows` rows of `k` ascending
// indices each, into rows of length `row_len`.
struct SparseSelection {
  int64_t rows = 0, k = 0, row_len = 0;
  std::vector<int32_t> indices;  // [rows, k]
};

class Codec {
 public:
  virtual ~Codec() = default;

  // Encodes any tensor (device, dtype, layout); non-fp32 or non-CPU input is
  // copied. encode and decode: slowpipe::compressors only (codec_tensor.cpp).
  Message encode(const at::Tensor& x);
  // Fast path: contiguous CPU fp32 data of `shape`; `out` is resized.
  void encode_raw(const float* x, const Shape& shape, Message& out);
  // Decodes to a CPU fp32 tensor of `shape`. Throws DataError for a message that
  // is not a well-formed message of this codec for this shape.
  at::Tensor decode(const Message& msg, const Shape& shape) const;
  void decode_raw(const uint8_t* data, size_t size, const Shape& shape, float* out) const;

  // Exact bytes of the message for a tensor of `shape`.
  uint64_t message_bytes(const Shape& shape) const { return payload_bytes(shape); }

  // The payload; sparsifiers reuse value codecs through these.
  virtual uint64_t payload_bytes(const Shape& shape) const = 0;
  virtual void encode_payload(const float* x, const Shape& shape, uint8_t* out) = 0;
  virtual void decode_payload(const uint8_t* p, const Shape& shape, float* out) const = 0;

  // Canonical spec ("q4", "topk:0.1+q8"): defaults omitted, aliases resolved.
  virtual std::string spec() const = 0;
  // Mutable state that shapes future messages (stochastic rounding counters,
  // RandK generators), for checkpoints; see Channel::save_state.
  virtual void save_state(const std::string& /*prefix*/, CodecState& /*out*/) const {}
  virtual void load_state(const std::string& /*prefix*/, const CodecState& /*in*/) {}
  // State too large for words (PowerSGD's factor Q), as fp32 arrays; channels
  // save and restore it with save_state's words (checkpoints, infer()).
  virtual void save_arrays(const std::string& /*prefix*/, CodecArrays& /*out*/) const {}
  virtual void load_arrays(const std::string& /*prefix*/, const CodecArrays& /*in*/) {}
  // Sparsifiers: the selection of the last encode; others: null.
  virtual const SparseSelection* last_selection() const { return nullptr; }
};

// The codec registry. A factory gets the parsed stage; `value_stage` is true
// for the stage after '+', which encodes a sparsifier's kept values ([rows, k]).
struct CodecBuildContext {
  const std::string* text = nullptr;  // whole spec, for error messages
  uint64_t seed = 0;                  // stochastic rounding, RandK
  bool value_stage = false;
};
using CodecFactory =
    std::function<std::unique_ptr<Codec>(const SpecStage&, const CodecBuildContext&)>;
// A sparsifier's factory for "A+B": `values` (B's codec) encodes the kept values.
using SparsifierFactory = std::function<std::unique_ptr<Codec>(
    const SpecStage&, const CodecBuildContext&, std::unique_ptr<Codec> values)>;
// What the summary plots read from a codec's stage (study/summary/internal/plot_series.h): bits
// per element (the "bits" axis: q4 is 4, fp16 16) and the kept fraction (the
// "k" axis: topk:0.1 is 0.1); NaN where the codec has none.
struct CodecPlotFacts {
  double bits = std::numeric_limits<double>::quiet_NaN();
  double keep_fraction = std::numeric_limits<double>::quiet_NaN();
};
using PlotFactsFn = std::function<CodecPlotFacts(const SpecStage&)>;
// How a codec, as a spec's first stage, carries data-parallel gradients
// (compress.grad), which cross as one flat [1, N] tensor per stage
// (GradientSpec, channel_spec.h): a stage it refuses (`refusal`, the reason
// in validate_role's UsageError), or an option appended to the stage (the
// resolved spec is then canonical): q4 -> q4:group=128. Neither: as given.
struct GradientForm {
  std::string refusal;            // empty: the stage can carry gradients
  std::optional<SpecArg> option;  // position 0: not in the text as given
};
using GradientFormFn = std::function<GradientForm(const SpecStage&)>;
// One example spec that `slowpipe codecs` lists (print_registry,
// channel_spec.h), carried by its registry entry (CodecInfo, SchemeInfo).
// Printed as "[ ONLY_AS only: ]SPEC[ (COMMENT)]"; examples are separated by
// two spaces, one valid only in a role by three.
struct SpecExample {
  std::string spec;          // "ef(powersgd:4)"
  std::string comment = "";  // "PowerSGD as published"
  std::string only_as = "";  // the one role it is valid in: "backward"
  // The listing line it is printed on (0: the first, "Examples: ..."); within
  // a line the schemes' examples come first, then the codecs', each in
  // registry order. The built-ins fill lines 0..4.
  int line = 0;
};
struct CodecInfo {
  std::string name;         // registry key: "q" covers q1..q8
  std::string syntax;       // "q<bits>[:stochastic][:tensor|row|channel|group=G][:minmax][:fp32]"
  std::string description;  // one line
  CodecFactory factory;
  // May follow '+' and encode a sparsifier's kept values (none, fp16, q4, ...).
  bool value_codec = false;
  // Sparsifiers only (set: may precede '+'): builds the codec with its value codec.
  SparsifierFactory with_values = nullptr;
  // Optional: the stage's bits and kept fraction in the summary plots.
  PlotFactsFn plot_facts = nullptr;
  // Whether a stage reuses the forward mask (topk:shared): valid only as a
  // direct backward after a sparsifying forward (channel_spec.h).
  std::function<bool(const SpecStage&)> reuses_forward_mask = nullptr;
  // The uncompressed reference (none, fp32 as is): exactly one codec. The
  // summary's fp32 sizes and its plots' reference line are this codec's.
  bool reference = false;
  // Optional: how the codec carries a flat gradient (GradientForm); unset: as given.
  GradientFormFn gradient_form = nullptr;
  // Example specs that `slowpipe codecs` lists.
  std::vector<SpecExample> examples = {};
};
// In listing order; "q4" finds the entry "q", listed as "q1..q8". Built-ins
// first (registered through register_codec on first use), then those added by
// register_codec.
const Registry<CodecInfo>& codec_registry();
// Adds a codec (e.g. from an experiment's own source file); it is then valid
// in every spec, listed by `slowpipe codecs`. An empty or duplicate name, or a
// second reference codec, throws std::logic_error.
void register_codec(CodecInfo info);
// The reference codec (`none`).
const CodecInfo& reference_codec();
// The plot facts of a parsed stage (NaN for a codec without plot_facts or an
// unknown name).
CodecPlotFacts plot_facts(const SpecStage& stage);

// Builds the codec of a parsed spec's stages (the scheme is ignored).
std::unique_ptr<Codec> make_codec(const SpecTree& tree, uint64_t seed);
// Parses and builds a codec spec with no scheme ("q4", "topk:0.1+q8").
std::unique_ptr<Codec> make_codec(const std::string& spec, uint64_t seed = 0);

// The non-finite policy (docs/codec-spec.md): every codec but `none` refuses a
// tensor holding NaN or +-inf. first_non_finite: index of the first such value
// of x[0..n), or -1. refuse_non_finite throws the DataError naming `spec`, the
// value and its index (the first non-finite value of x, or `index` when >= 0).
int64_t first_non_finite(const float* x, int64_t n);
[[noreturn]] void refuse_non_finite(const std::string& spec, const float* x, int64_t n,
                                    int64_t index = -1);

// For factories: consume arguments with positions in error messages.
[[noreturn]] void stage_error(const CodecBuildContext& ctx, size_t pos, const std::string& what);

// Options of one stage grouped in families ("rounding", "scale granularity"):
// at most one option per family, so `q4:row:tensor`, `q4:stochastic:nearest`,
// `group=8:group=16` and `q4:row:row` are UsageErrors naming both positions.
class StageOptions {
 public:
  explicit StageOptions(const CodecBuildContext& ctx) : ctx_(ctx) {}
  void claim(const std::string& family, const SpecArg& arg);

 private:
  const CodecBuildContext& ctx_;
  std::vector<std::pair<std::string, const SpecArg*>> claimed_;
};

}  // namespace slowpipe::compressors
