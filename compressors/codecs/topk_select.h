// Selection of the kept indices of TopK and RandK, and their compact encoding.
//
// TopK keeps the k largest magnitudes of a row, ties at the threshold broken
// toward lower indices, and returns ascending indices. The fast path (rows over
// 4096 elements) samples about m / 32 magnitudes, in blocks of 16 consecutive
// elements at hash-chosen offsets of equal strata, to bracket the k-th magnitude
// between two thresholds (3.5 standard deviations of the sample quantile either
// side); sweeps the row counting magnitudes above the upper one and collecting
// those between (the candidates); finds the exact k-th magnitude among the
// candidates (a 2048-bin histogram over the bracket, then nth_element in one
// bin); and emits the indices in order. The portable loops emit with a second
// sweep of the row; the SIMD ones (AVX-512 compresses, or AVX2 with a table
// of lane permutations, picked at run time) keep the indices and values
// of every element above the lower threshold during the first sweep and
// filter those (about a sixth of the row at K = 10%), writing the kept values
// beside the indices (the other paths gather them from the row). If the bracket missed
// (rare, checked exactly), it falls back to nth_element over the whole row.
// Either way the result is exact, the same indices on every path. The kept
// indices are coded on the wire by index_coding.h.
#pragma once

#include <cstdint>
#include <vector>

namespace slowpipe::compressors {

class TopkSelector {
 public:
  // x: [m] fp32; out: [k] ascending indices. 0 <= k <= m. values (optional):
  // [k], x[out[j]] bit for bit (the AVX2 and AVX-512 sweeps write them from
  // the kept stream, without a gather from the row).
  void select(const float* x, int64_t m, int64_t k, int32_t* out, float* values = nullptr);
  // The same result by nth_element over the whole row (the fallback; tests).
  void select_exact(const float* x, int64_t m, int64_t k, int32_t* out);
  int64_t fallbacks() const { return fallbacks_; }
  // Tests and benchmarks: the widest sweeps to use; the CPU and SLOWPIPE_SIMD
  // (internal/quant_simd.h) may cap them further. Every choice gives the same
  // indices.
  enum class Sweeps { kPortable = 0, kAvx2 = 1, kAvx512 = 2 };
  void set_sweeps(Sweeps widest) { widest_ = widest; }
  void set_simd(bool enabled) { widest_ = enabled ? Sweeps::kAvx512 : Sweeps::kPortable; }
  Sweeps sweeps() const;  // the sweeps select() runs

 private:
  std::vector<uint32_t> mags_, cand_mags_, sample_, counts_, kept_raw_;
  std::vector<int32_t> kept_idx_;
  int64_t fallbacks_ = 0;
  Sweeps widest_ = Sweeps::kAvx512;
};

// k distinct indices drawn uniformly from [0, m), ascending (selection sampling).
// `state` is a splitmix64 state, advanced.
void select_randk(int64_t m, int64_t k, uint64_t& state, int32_t* out);

// k = max(1, ceil(fraction * m - 1e-9)) clamped to m; 0 when m = 0.
int64_t kept_count(double fraction, int64_t m);

}  // namespace slowpipe::compressors
