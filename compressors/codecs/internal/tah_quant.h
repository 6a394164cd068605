// `tah:bits=B[:tile=G][:fixed]`: TAH-Quant, tile-wise adaptive Hadamard
// quantization of activations (He, Cao, He, Bai, Chen, Yuan and Yuan,
// "TAH-Quant: Effective Activation Quantization in Pipeline Parallelism over
// Slow Network", arXiv 2506.01352, 2025). Each token (a row of the last
// dimension) is cut into tiles of G channels; each tile gets its own fp16
// zero point and step (asymmetric min-max grid, round to nearest). A tile with
// one dominant element (|x|max >= 2 * the second largest |x|) has that pivot
// swapped to position 0 and is rotated by the orthonormal Walsh-Hadamard
// transform, which turns the outlier into a constant offset that the zero
// point absorbs. Widths: with a fractional B, the tiles of highest entropy
// (of their |x| distribution) get ceil(B) bits and the others floor(B), so that
// the average is B bits per element (3.8: 80% at 4 bits, the paper's setting);
// `:fixed` sends the same number of ceil(B) tiles at fixed, evenly spread
// places (the ablation: same bytes less the width map, no entropy guidance).
// A whole B gives every tile B bits (one width: nothing to allocate).
//
// The message size depends on the shape only: every tile carries its rotation
// flag and pivot field, and the number of high-width tiles is fixed by B.
// Exact rule, wire format and sizes: docs/codec-spec.md, "TAH-Quant". Left
// out: the paper's variable-length pivot list (only rotated tiles' pivots) and
// stochastic rounding. Stateless: no codec state, nothing to checkpoint.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compressors/codecs/codec.h"

namespace slowpipe::compressors {

struct TahConfig {
  int bits_centi = 300;  // B in hundredths of a bit: 300 = 3, 350 = 3.5; 100..800
  int64_t tile = 64;     // G: a power of two in 2..1024
  bool adaptive = true;  // false: `:fixed`, high-width tiles at evenly spread places
};

// How a shape is cut into tiles and how many tiles get the high width. Full
// tiles hold G channels, a tail tile the last C mod G of a token; each class
// gets its own share of high-width tiles, so the size never depends on data.
struct TahLayout {
  int64_t tokens = 0, channels = 0;  // n / C and C (the last dimension)
  int64_t full_per_token = 0;        // floor(C / G)
  int64_t tail = 0;                  // C mod G: length of the tail tile, 0 for none
  int64_t full_tiles = 0, tail_tiles = 0;
  int low_bits = 0, high_bits = 0;       // floor(B), ceil(B)
  int64_t high_full = 0, high_tail = 0;  // tiles at high_bits, per class
  bool width_map = false;                // sent: adaptive and B fractional
  int64_t tiles() const { return full_tiles + tail_tiles; }
};

// The encoder's buffers for the choice of high-width tiles in one class.
struct TahRankScratch {
  std::vector<uint32_t> ranks;   // [tiles of the class] rank keys
  std::vector<uint32_t> counts;  // [buckets] keys per bucket
  std::vector<uint64_t> keys;    // the cut bucket's (rank, position) keys
};

class TahQuant : public Codec {
 public:
  explicit TahQuant(TahConfig config);
  uint64_t payload_bytes(const Shape& shape) const override;
  void encode_payload(const float* x, const Shape& shape, uint8_t* out) override;
  // DataError for a non-finite or negative step, a non-finite zero point, a
  // pivot on an unrotated tile, or a count of high-width tiles other than the
  // layout's.
  void decode_payload(const uint8_t* p, const Shape& shape, float* out) const override;
  std::string spec() const override;

  const TahConfig& config() const { return config_; }
  TahLayout layout(const Shape& shape) const;

 private:
  // high[t] = 1 for a high-width tile, where no width map is sent (`:fixed`,
  // whole B). high: [tiles], resized.
  void fixed_widths(const TahLayout& l, std::vector<uint8_t>& high) const;
  // The adaptive widths: 1 for the tiles of each class with the largest
  // entropies; *finite set false when x holds a NaN or an inf.
  void entropy_widths(const float* x, const TahLayout& l, bool* finite, std::vector<uint8_t>& high);

  TahConfig config_;
  // The encoder's per-tile buffers, kept at the size of the largest tensor
  // encoded so that each encode of a large tensor does not fault fresh pages
  // in (a GPT-2 XL activation: five buffers of 25-200 KB).
  struct WidthScratch {
    std::vector<uint8_t> high;        // [tiles] 1 = high width
    std::vector<int64_t> ids[2];      // [full, tail]: tile indices
    std::vector<const float*> at[2];  // [full, tail]: their first elements
    std::vector<float> entropy;       // one class's entropies
    TahRankScratch rank;              // the high-width cut's buffers
  };
  WidthScratch scratch_;
};

// The pieces, public for the tests (docs/codec-spec.md defines each exactly).
// Orthonormal Walsh-Hadamard transform of v[0..g) in place, g a power of two:
// the butterfly stages h = 1, 2, 4, ... (v[j], v[j+h]) <- (v[j] + v[j+h],
// v[j] - v[j+h]), then every value times (float)(1 / sqrt(g)). Its own inverse
// (up to rounding): H is symmetric and H * H = I. `vector`: the AVX2 path
// where the CPU has it (g >= 8), else the portable loop; the same floats.
void tah_hadamard(float* v, int64_t g, bool vector = true);
// log2 approximation of a normal float u > 0 (|error| < 1.1e-4): exponent plus
// a degree-4 polynomial of the mantissa.
float tah_log2(float u);
// Shannon entropy (bits) of |x| / sum |x| over x[0..len), estimated as the
// documented float recipe (0 for a tile of zeros). The allocator's key.
// `vector`: the AVX2 path where the CPU has it (len a multiple of 8), else
// the portable loop; the same float for finite x (the encoder refuses others
// before it ranks: tah::entropies says when).
float tah_entropy(const float* x, int64_t len, bool vector = true);
// The tile's fp16 zero point and step rounding: the smallest fp16 >= v (v
// finite; beyond +-65504 the largest finite fp16 of that sign). `hardware`:
// F16C's round-toward-+inf conversion where the CPU has it (the codec's
// choice), else the software rounding (c10::Half to nearest, then one step up
// where that fell below v); both give the same bits (tested).
uint16_t tah_half_up(float v, bool hardware);
// A tile's {largest |x|, second largest |x| (equal to the first for two equal
// peaks), min x (-0 as +0), max x, 1 if every x is finite else 0}: `vector`
// the AVX2 path where the CPU has it (tiles of a multiple of 8), else the
// portable loop; the same values.
std::array<float, 5> tah_tile_stats(const float* x, int64_t len, bool vector);

std::unique_ptr<Codec> make_tah_quant(const SpecStage& stage, const CodecBuildContext& ctx);
// The summary plots' facts of a `tah` stage: bits = B (scales and tile
// headers left out, as for q<b>); NaN when bits=B is absent or malformed.
CodecPlotFacts tah_plot_facts(const SpecStage& stage);

}  // namespace slowpipe::compressors
