// `powersgd:R`: rank-R PowerSGD (Vogels, Karimireddy and Jaggi, "PowerSGD:
// Practical Low-Rank Gradient Compression for Distributed Optimization",
// NeurIPS 2019): one step of power iteration, warm-started from the previous
// step's factor. Spec, wire format, sizes and state: docs/codec-spec.md,
// "PowerSGD".
//
// The tensor is seen as a matrix M [n, m] (MatrixView). With the factor Q
// [m, R] kept from the previous encode of the same shape (else the seeded
// standard-normal init; a column of Q that is all zero is re-seeded from the
// init's column, so a zero tensor or a rank-deficient one never stops it):
//   P  = M Q                 [n, R]
//   P^ = orth(P)             [n, R]  Gram-Schmidt in double, a second pass
//                                    after a large cancellation; a column left
//                                    at rounding level (M of rank < R) is 0
//   Q  = M^T P^              [m, R]  kept for the next encode (warm start)
//   M^ = P^ Q^T              [n, m]  what the receiver reconstructs
// The nonzero columns of P^ are orthonormal, so M^ = P^ P^T M is a projection
// of M: never larger than M, and M itself (to rounding) when M has rank <= R
// and M Q spans its columns (any Q in general position).
// The message is [P^][Q] ((n + m) R values, fp32 or fp16), so the decoder is a
// plain product and keeps no state; only the encoder (the sender) holds Q.
// When (n + m) R >= numel the factors would not be smaller than the tensor and
// the values are sent as they are (fp32 or fp16): vectors, tiny tensors,
// ranks at or above min(n, m).
//
// Error feedback is not here: `ef(powersgd:R)` (feedback.h) is the published
// algorithm (the residual M - M^ is added to the next input); `powersgd:R`
// alone is the warm-started power step without it.
//
// Left out: the all-reduce form (P and Q summed over workers before
// orthogonalisation): slowpipe sends each replica's gradient through its own
// channel and averages what comes out, so P^ and Q are one replica's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compressors/codecs/codec.h"

namespace slowpipe::compressors {

// How a tensor becomes a matrix [rows, cols] (numel elements, row-major).
//   kLast:   [numel / shape[-1], shape[-1]]  (default; [B, T, C] -> [B*T, C]:
//            tokens x features)
//   kRows:   [shape[0], numel / shape[0]]    (the paper's view of weight tensors)
//   kSquare: [ceil(numel / w), w], w = ceil(sqrt(numel)), the last row
//            zero-padded (PyTorch's batched PowerSGD hook; flat gradients)
// 0-d and 1-d tensors are [1, numel] in kLast and kRows.
enum class MatrixView { kLast, kRows, kSquare };

struct LowRankGeometry {
  int64_t rows = 0, cols = 0, numel = 0;
  int rank = 0;
  bool compressed = false;  // (rows + cols) * rank < numel
  // Values on the wire: (rows + cols) * rank when compressed, else numel.
  int64_t values() const { return compressed ? (rows + cols) * rank : numel; }
};
LowRankGeometry lowrank_geometry(const Shape& shape, MatrixView view, int rank);

struct PowerSgdConfig {
  int rank = 1;
  MatrixView view = MatrixView::kLast;
  bool fp16 = false;  // values on the wire as fp16 (default fp32)
};

class PowerSgd : public Codec {
 public:
  PowerSgd(PowerSgdConfig config, uint64_t seed);
  uint64_t payload_bytes(const Shape& shape) const override;
  // Updates the warm-start factor (a new shape restarts from the seeded init).
  void encode_payload(const float* x, const Shape& shape, uint8_t* out) override;
  // Stateless: P^ Q^T from the message. DataError for a non-finite factor
  // value, |P^| > 1 or a row of Q whose magnitudes sum beyond FLT_MAX (no
  // encoder writes those; outputs are then always finite).
  void decode_payload(const uint8_t* p, const Shape& shape, float* out) const override;
  std::string spec() const override;
  // Words: "active" (0/1), "dims" and "shape.I" (the shape Q belongs to).
  void save_state(const std::string& prefix, CodecState& out) const override;
  void load_state(const std::string& prefix, const CodecState& in) override;
  // Array "q": Q [cols, rank] row-major (empty when not active).
  void save_arrays(const std::string& prefix, CodecArrays& out) const override;
  void load_arrays(const std::string& prefix, const CodecArrays& in) override;

  const PowerSgdConfig& config() const { return config_; }
  bool warm() const { return active_; }
  const std::vector<float>& factor() const { return q_; }  // Q [cols, rank]

 private:
  PowerSgdConfig config_;
  uint64_t seed_;
  bool active_ = false;
  Shape shape_;
  std::vector<float> q_;
};

// The seeded init of Q: cols * rank standard normals (Box-Muller on a
// splitmix64 stream), row-major [cols, rank]; the same for every shape with
// these cols.
std::vector<float> powersgd_init(uint64_t seed, int64_t cols, int rank);

std::unique_ptr<Codec> make_powersgd(const SpecStage& stage, const CodecBuildContext& ctx);

// The view a parsed powersgd stage names (false when it names none).
bool powersgd_view_given(const SpecStage& stage, MatrixView* view);

// compress.grad (GradientSpec, channel_spec.h): a flat [1, N] gradient is a
// one-row matrix in the `last` and `rows` views, which PowerSGD sends
// uncompressed: those are refused, and a stage without a view gets `square`.
// The entry "powersgd"'s CodecInfo::gradient_form.
GradientForm powersgd_gradient_form(const SpecStage& stage);

}  // namespace slowpipe::compressors
