// Sparsifiers: `topk:K` keeps the K-fraction largest magnitudes, `randk:K` a
// uniformly random K-fraction, per row (sample, the default, as in Rudakov et
// al.) or per tensor. `topk:shared` applies a mask chosen elsewhere (the
// forward TopK mask reused for the backward activation-gradients); the
// receiver already holds that mask, so no indices are sent.
//
// Payload: [indices][values]. Indices: index_coding.h (bitmap, list or
// Elias-Fano per row, whichever is smallest). Values: [rows, k] in row-major
// order, encoded by the value codec after '+' (default fp32, 4 bytes each),
// e.g. topk:0.1+q8 quantizes the kept values at 8 bits with one fp16 scale per
// row. `randk:K:unbiased` rescales the kept values by m/k on decode so the
// estimate is unbiased.
#pragma once

#include <memory>
#include <string>

#include "compressors/codecs/codec.h"
#include "compressors/codecs/index_coding.h"
#include "compressors/codecs/topk_select.h"

namespace slowpipe::compressors {

enum class SparseKind { kTopk, kRandk, kShared };

struct SparseConfig {
  SparseKind kind = SparseKind::kTopk;
  double fraction = 0.1;  // K, fraction kept (unused for kShared)
  bool per_row = true;
  bool unbiased = false;  // randk only
};

class Sparsifier : public Codec {
 public:
  Sparsifier(SparseConfig config, std::unique_ptr<Codec> values, uint64_t seed);
  uint64_t payload_bytes(const Shape& shape) const override;
  void encode_payload(const float* x, const Shape& shape, uint8_t* out) override;
  void decode_payload(const uint8_t* p, const Shape& shape, float* out) const override;
  std::string spec() const override;
  void save_state(const std::string& prefix, CodecState& out) const override;
  void load_state(const std::string& prefix, const CodecState& in) override;
  const SparseSelection* last_selection() const override { return &selection_; }

  // Chooses the kept indices of x (what encode would keep; RandK advances its
  // generator) without encoding: last_selection() then returns them.
  void select(const float* x, const Shape& shape);
  // The indices a message of this codec carries (what its sender selected), for
  // the receiving side of a `topk:shared` boundary. Not for kShared. Throws
  // DataError for a message of the wrong length or with bad indices.
  SparseSelection selection_of(const uint8_t* p, size_t size, const Shape& shape) const;
  // kShared: the mask the next encode/decode applies (copied).
  void use_selection(const SparseSelection& selection) { selection_ = selection; }
  const SparseConfig& config() const { return config_; }
  // Rows, row length and k for a tensor of `shape`.
  void geometry(const Shape& shape, int64_t* rows, int64_t* m, int64_t* k) const;

 private:
  // select(); when `gathered` is non-null, also the kept values [rows, k].
  void select_rows(const float* x, const Shape& shape, float* gathered);

  SparseConfig config_;
  std::unique_ptr<Codec> values_;
  uint64_t rng_state_;
  TopkSelector selector_;
  SparseSelection selection_;
  std::vector<float> gathered_;
};

std::unique_ptr<Codec> make_topk(const SpecStage& stage, const CodecBuildContext& ctx);
std::unique_ptr<Codec> make_randk(const SpecStage& stage, const CodecBuildContext& ctx);
// Called by make_codec for "topk:K+B", "randk:K+B": B's codec encodes the kept values.
std::unique_ptr<Codec> make_topk_with_values(const SpecStage& stage, const CodecBuildContext& ctx,
                                             std::unique_ptr<Codec> values);
std::unique_ptr<Codec> make_randk_with_values(const SpecStage& stage, const CodecBuildContext& ctx,
                                              std::unique_ptr<Codec> values);

}  // namespace slowpipe::compressors
