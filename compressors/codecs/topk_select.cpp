// TopK / RandK selection; the method is described in topk_select.h.
// Magnitudes are compared as the bits of |x| (uint32), which orders
// non-negative floats exactly (NaN magnitudes sort above infinity).
#include "compressors/codecs/topk_select.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

#include "compressors/codecs/internal/quant_simd.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SLOWPIPE_HAVE_SIMD_SWEEP 1
#define SLOWPIPE_AVX2 __attribute__((target("avx2,popcnt")))
#endif

namespace slowpipe::compressors {

namespace {

inline uint32_t mag_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u & 0x7FFFFFFFU;
}
inline uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
constexpr int64_t kSmallRow = 4096;

// Sweep 1 of the fast path: counts magnitudes above `hi` and collects those in
// [lo, hi] (the candidates).
int64_t count_and_collect_scalar(const float* x, int64_t begin, int64_t m, uint32_t lo, uint32_t hi,
                                 uint32_t* cmag, int64_t& nc) {
  int64_t above = 0;
  for (int64_t i = begin; i < m; ++i) {
    uint32_t u = mag_bits(x[i]);
    above += u > hi;
    cmag[nc] = u;
    nc += (u >= lo) & (u <= hi);
  }
  return above;
}
// Sweep 2: writes, in index order, the indices with magnitude > t and the first
// `ties` indices with magnitude == t. Returns the count written.
int64_t emit_scalar(const float* x, int64_t begin, int64_t m, uint32_t t, int64_t& ties,
                    int32_t* out) {
  int64_t w = 0;
  for (int64_t i = begin; i < m; ++i) {
    uint32_t u = mag_bits(x[i]);
    if (u > t || (u == t && ties > 0)) {
      if (u == t) --ties;
      out[w++] = static_cast<int32_t>(i);
    }
  }
  return w;
}

// The AVX2 sweeps fuse the two: sweep 1 also writes the kept stream, the
// indices and values (their bits) of every element >= lo in index order (the
// sure ones and the candidates, about k plus the bracket: a sixth of the row at
// K = 10%), and sweep 2 filters that stream instead of the row, writing the
// kept values beside their indices when asked (no gather from the row).
struct Kept {
  int32_t* idx;   // [n + 16]
  uint32_t* raw;  // [n + 16]: the bits of x[idx]
  int64_t n = 0;
};

#ifdef SLOWPIPE_HAVE_SIMD_SWEEP
// Sweep 1 over x[begin, m) with the kept stream.
int64_t collect_kept_scalar(const float* x, int64_t begin, int64_t m, uint32_t lo, uint32_t hi,
                            uint32_t* cmag, int64_t& nc, Kept& kept) {
  int64_t above = 0;
  for (int64_t i = begin; i < m; ++i) {
    const uint32_t u = mag_bits(x[i]);
    above += u > hi;
    cmag[nc] = u;
    nc += (u >= lo) & (u <= hi);
    kept.idx[kept.n] = static_cast<int32_t>(i);
    std::memcpy(kept.raw + kept.n, x + i, 4);
    kept.n += u >= lo;
  }
  return above;
}
// The end of a SIMD sweep 1 over the row's first `i` elements, whose kept
// stream ends at k_n and whose candidates were compressed from it up to
// entry j (to c_n): the candidates of the stream's rest; the sure ones
// counted as the stream less its candidates (lo <= hi); the row's tail.
int64_t finish_collect(const float* x, int64_t i, int64_t m, uint32_t lo, uint32_t hi,
                       uint32_t* cmag, int64_t j, int64_t c_n, int64_t& nc, int64_t k_n,
                       Kept& kept) {
  for (; j < k_n; ++j) {
    const uint32_t u = kept.raw[j] & 0x7FFFFFFFU;
    cmag[c_n] = u;
    c_n += u <= hi;
  }
  const int64_t above = (k_n - kept.n) - (c_n - nc);
  nc = c_n;
  kept.n = k_n;
  return above + collect_kept_scalar(x, i, m, lo, hi, cmag, nc, kept);  // the tail
}

// Sweep 2 over kept entries [begin, end): as emit_scalar; the values too
// when `values` is not null.
int64_t filter_scalar(const Kept& kept, int64_t begin, int64_t end, uint32_t t, int64_t& ties,
                      int32_t* out, float* values) {
  int64_t w = 0;
  for (int64_t j = begin; j < end; ++j) {
    const uint32_t u = kept.raw[j] & 0x7FFFFFFFU;
    if (u > t || (u == t && ties > 0)) {
      if (u == t) --ties;
      if (values) std::memcpy(values + w, kept.raw + j, 4);
      out[w++] = kept.idx[j];
    }
  }
  return w;
}

// The fused sweeps in AVX-512, 16 elements at a time, with compresses (into a
// register, then stored whole: a compress-store straight to memory is
// microcoded on some CPUs). Sweep 1 writes the kept stream (every element >=
// lo, index and bits, in index order); the candidates ([lo, hi]) are then
// compressed from that stream (about a sixth of the row at K = 10%), the
// sure ones counted as the rest of it, and sweep 2 filters the stream, not
// the row: one pass over the row instead of two.
__attribute__((target("avx512f,popcnt"))) int64_t collect_avx512(const float* x, int64_t m,
                                                                 uint32_t lo, uint32_t hi,
                                                                 uint32_t* cmag, int64_t& nc,
                                                                 Kept& kept) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
  const __m512i vhi = _mm512_set1_epi32(static_cast<int>(hi));
  const __m512i vlo = _mm512_set1_epi32(static_cast<int>(lo));
  const __m512i step = _mm512_set1_epi32(16);
  __m512i idx = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  int64_t i = 0, k_n = kept.n;  // locals: the stores may alias any field
  int32_t* const k_idx = kept.idx;
  uint32_t* const k_raw = kept.raw;
  for (; i + 16 <= m; i += 16) {
    const __m512i raw = _mm512_loadu_si512(x + i);
    const __m512i u = _mm512_and_si512(raw, abs_mask);
    const __mmask16 ge = _mm512_cmpge_epu32_mask(u, vlo);
    _mm512_storeu_si512(k_idx + k_n, _mm512_maskz_compress_epi32(ge, idx));
    _mm512_storeu_si512(k_raw + k_n, _mm512_maskz_compress_epi32(ge, raw));
    k_n += __builtin_popcount(ge);
    idx = _mm512_add_epi32(idx, step);
  }
  // The candidates, from the stream (every kept one is >= lo), in index order;
  // the sure ones (> hi) are the rest of it, since lo <= hi.
  int64_t c_n = nc, j = kept.n;
  for (; j + 16 <= k_n; j += 16) {
    const __m512i u = _mm512_and_si512(_mm512_loadu_si512(k_raw + j), abs_mask);
    const __mmask16 c = _mm512_cmple_epu32_mask(u, vhi);
    _mm512_storeu_si512(cmag + c_n, _mm512_maskz_compress_epi32(c, u));
    c_n += __builtin_popcount(c);
  }
  return finish_collect(x, i, m, lo, hi, cmag, j, c_n, nc, k_n, kept);
}
__attribute__((target("avx512f,popcnt"))) int64_t filter_avx512(const Kept& kept, uint32_t t,
                                                                int64_t& ties, int64_t k,
                                                                int32_t* out, float* values) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
  const __m512i vt = _mm512_set1_epi32(static_cast<int>(t));
  int64_t w = 0, j = 0;
  for (; j + 16 <= kept.n; j += 16) {
    const __m512i raw = _mm512_loadu_si512(kept.raw + j);
    const __m512i u = _mm512_and_si512(raw, abs_mask);
    const __mmask16 gt = _mm512_cmpgt_epu32_mask(u, vt);
    const __mmask16 eq = _mm512_cmpeq_epu32_mask(u, vt);
    if ((eq && ties > 0) || w + 16 > k) {  // rare: ties to settle in order, or the last stores
      w += filter_scalar(kept, j, j + 16, t, ties, out + w, values ? values + w : nullptr);
    } else {
      _mm512_storeu_si512(out + w,
                          _mm512_maskz_compress_epi32(gt, _mm512_loadu_si512(kept.idx + j)));
      if (values) _mm512_storeu_si512(values + w, _mm512_maskz_compress_epi32(gt, raw));
      w += __builtin_popcount(gt);
    }
  }
  return w + filter_scalar(kept, j, kept.n, t, ties, out + w, values ? values + w : nullptr);
}

// The fused sweeps in AVX2, 8 elements at a time. AVX2 has no compress: a table
// gives, for each 8-bit mask, the lanes to keep as byte indices, which vpermd
// moves to the front. AVX2 compares signed integers: magnitudes are below
// 2^31, so `hi` and `t` are clamped to 0x7FFFFFFF (no magnitude is above
// either) and u >= lo is u > lo - 1 (lo = 0: -1, true for every u).
struct PackTable {
  uint64_t lanes[256];
};
constexpr PackTable make_pack_table() {
  PackTable t{};
  for (int mask = 0; mask < 256; ++mask) {
    uint64_t v = 0;
    int w = 0;
    for (int lane = 0; lane < 8; ++lane)
      if ((mask >> lane) & 1) v |= static_cast<uint64_t>(lane) << (8 * w++);
    t.lanes[mask] = v;
  }
  return t;
}
constexpr PackTable kPackTable = make_pack_table();

SLOWPIPE_AVX2 inline __m256i pack_permutation(int mask) {
  return _mm256_cvtepu8_epi32(
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(kPackTable.lanes + mask)));
}
SLOWPIPE_AVX2 inline int lane_mask(__m256i cmp) {
  return _mm256_movemask_ps(_mm256_castsi256_ps(cmp));
}
SLOWPIPE_AVX2 inline __m256i load8(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
SLOWPIPE_AVX2 inline void store8(void* p, __m256i v) {
  _mm256_storeu_si256(static_cast<__m256i*>(p), v);
}
// The counts and pointers live in locals during the loop: the vector stores
// may alias anything, so fields behind references would be stored and
// reloaded at every step (a chain through memory).
SLOWPIPE_AVX2 int64_t collect_avx2(const float* x, int64_t m, uint32_t lo, uint32_t hi,
                                   uint32_t* cmag, int64_t& nc, Kept& kept) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i vhi = _mm256_set1_epi32(static_cast<int>(std::min(hi, 0x7FFFFFFFU)));
  const __m256i vlo1 = _mm256_set1_epi32(static_cast<int>(lo) - 1);
  const __m256i step = _mm256_set1_epi32(8);
  __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  int64_t i = 0, k_n = kept.n;
  int32_t* const k_idx = kept.idx;
  uint32_t* const k_raw = kept.raw;
  // The row once: only the kept stream (every element >= lo). Eight groups
  // of 8 per step, their loads and compares first: faster than one group per
  // step (10-15%) and than four (about 5% of the encode) on a Zen 5; the
  // loop is bound by its operations, not the reads.
  constexpr int kGroups = 8;
  for (; i + 8 * kGroups <= m; i += 8 * kGroups) {
    __m256i raw[kGroups];
    int g[kGroups];
    for (int h = 0; h < kGroups; ++h) {
      raw[h] = load8(x + i + 8 * h);
      g[h] = lane_mask(_mm256_cmpgt_epi32(_mm256_and_si256(raw[h], abs_mask), vlo1));
    }
    for (int h = 0; h < kGroups; ++h) {
      const __m256i perm = pack_permutation(g[h]);
      store8(k_idx + k_n, _mm256_permutevar8x32_epi32(idx, perm));
      store8(k_raw + k_n, _mm256_permutevar8x32_epi32(raw[h], perm));
      k_n += __builtin_popcount(g[h]);
      idx = _mm256_add_epi32(idx, step);
    }
  }
  // The candidates ([lo, hi]) from the stream, in index order (about a sixth
  // of the row at K = 10%); the sure ones (> hi) are the rest of it, since
  // lo <= hi.
  int64_t c_n = nc, j = kept.n;
  for (; j + 8 <= k_n; j += 8) {
    const __m256i u = _mm256_and_si256(load8(k_raw + j), abs_mask);
    const int c = ~lane_mask(_mm256_cmpgt_epi32(u, vhi)) & 0xFF;
    store8(cmag + c_n, _mm256_permutevar8x32_epi32(u, pack_permutation(c)));
    c_n += __builtin_popcount(c);
  }
  return finish_collect(x, i, m, lo, hi, cmag, j, c_n, nc, k_n, kept);
}
SLOWPIPE_AVX2 int64_t filter_avx2(const Kept& kept, uint32_t t, int64_t& ties, int64_t k,
                                  int32_t* out, float* values) {
  const __m256i vt = _mm256_set1_epi32(static_cast<int>(std::min(t, 0x7FFFFFFFU)));
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  int64_t w = 0, j = 0;
  // Four groups of 8 per step, their compares first (as collect_avx2).
  constexpr int kGroups = 4;
  for (; j + 8 * kGroups <= kept.n; j += 8 * kGroups) {
    __m256i raw[kGroups];
    int gt[kGroups], eq = 0;
    for (int h = 0; h < kGroups; ++h) {
      raw[h] = load8(kept.raw + j + 8 * h);
      const __m256i u = _mm256_and_si256(raw[h], abs_mask);
      gt[h] = lane_mask(_mm256_cmpgt_epi32(u, vt));
      eq |= lane_mask(_mm256_cmpeq_epi32(u, vt));
    }
    // Rare: ties to settle in order, or the last stores.
    if ((eq && ties > 0) || w + 8 * kGroups > k) {
      w += filter_scalar(kept, j, j + 8 * kGroups, t, ties, out + w, values ? values + w : nullptr);
      continue;
    }
    for (int h = 0; h < kGroups; ++h) {
      const __m256i perm = pack_permutation(gt[h]);
      store8(out + w, _mm256_permutevar8x32_epi32(load8(kept.idx + j + 8 * h), perm));
      if (values) store8(values + w, _mm256_permutevar8x32_epi32(raw[h], perm));
      w += __builtin_popcount(gt[h]);
    }
  }
  return w + filter_scalar(kept, j, kept.n, t, ties, out + w, values ? values + w : nullptr);
}
#endif

#ifdef SLOWPIPE_HAVE_SIMD_SWEEP
// The values of a[0, n) in histogram bin `bin` ((a[i] - lo) >> shift ==
// bin), in order, appended to out[*w...]: 8 compares and one packed store
// per step instead of a branch per value (about a third of select()'s own
// time at K = 10%). Returns how far it went (a multiple of 8); the caller
// does the rest. Writes stay inside out[0, n).
SLOWPIPE_AVX2 int64_t bin_avx2(const uint32_t* a, int64_t n, uint32_t lo, int shift, uint32_t bin,
                               uint32_t* out, int64_t* w) {
  const __m256i vlo = _mm256_set1_epi32(static_cast<int>(lo));
  const __m256i vbin = _mm256_set1_epi32(static_cast<int>(bin));
  const __m128i count = _mm_cvtsi32_si128(shift);
  int64_t i = 0, o = *w;  // o <= i: each store ends by i + 8 <= n
  for (; i + 8 <= n; i += 8) {
    const __m256i v = load8(a + i);
    const __m256i in_bin =
        _mm256_cmpeq_epi32(_mm256_srl_epi32(_mm256_sub_epi32(v, vlo), count), vbin);
    const int mask = lane_mask(in_bin);
    store8(out + o, _mm256_permutevar8x32_epi32(v, pack_permutation(mask)));
    o += __builtin_popcount(mask);
  }
  *w = o;
  return i;
}
#endif

// Sweep 1 on `isa`'s path: the count of sure ones (> hi) returned, the
// candidates ([lo, hi]) into cmag[nc...); the SIMD sweeps also fill `kept`.
int64_t sweep_one(TopkSelector::Sweeps isa, const float* x, int64_t m, uint32_t lo, uint32_t hi,
                  uint32_t* cmag, int64_t& nc, Kept& kept) {
  using Sweeps = TopkSelector::Sweeps;
#ifdef SLOWPIPE_HAVE_SIMD_SWEEP
  if (isa == Sweeps::kAvx512) return collect_avx512(x, m, lo, hi, cmag, nc, kept);
  if (isa == Sweeps::kAvx2) return collect_avx2(x, m, lo, hi, cmag, nc, kept);
#else
  (void)isa, (void)kept;
#endif
  return count_and_collect_scalar(x, 0, m, lo, hi, cmag, nc);
}

// Sweep 2 on `isa`'s path: indices > t, and the first `ties` at t, in order;
// *with_values: whether it wrote their values too (the AVX2 filter and the
// AVX-512 emit do).
int64_t emit_in_order(TopkSelector::Sweeps isa, const float* x, int64_t m, const Kept& kept,
                      uint32_t t, int64_t ties, int64_t k, int32_t* out, float* values,
                      bool* with_values) {
  using Sweeps = TopkSelector::Sweeps;
#ifdef SLOWPIPE_HAVE_SIMD_SWEEP
  if (isa == Sweeps::kAvx512) {
    *with_values = values != nullptr;
    return filter_avx512(kept, t, ties, k, out, values);
  }
  if (isa == Sweeps::kAvx2) {
    *with_values = values != nullptr;
    return filter_avx2(kept, t, ties, k, out, values);
  }
#else
  (void)isa, (void)kept, (void)k, (void)values;
#endif
  return emit_scalar(x, 0, m, t, ties, out);
}

// Radix-assisted selection of ranks (0 = largest) in a[0..n): one pass builds a
// histogram over 2048 bins of the value range; each rank then lies in one bin,
// whose elements are copied to `scratch` and settled with nth_element. `a` is
// not modified, so several ranks can come from one histogram.
struct Ranked {
  uint32_t value;
  int64_t greater;  // elements strictly greater than value
};
class RankFinder {
 public:
  static constexpr int kBits = 11;
  // a: [n]; scratch: room for n values.
  RankFinder(const uint32_t* a, int64_t n, uint32_t* scratch, std::vector<uint32_t>& counts)
      : a_(a), n_(n), scratch_(scratch), counts_(counts) {
    lo_ = hi_ = n > 0 ? a[0] : 0;
    for (int64_t i = 1; i < n; ++i) {
      lo_ = std::min(lo_, a[i]);
      hi_ = std::max(hi_, a[i]);
    }
    build();
  }
  // The same when every a[i] is known to lie in [lo, hi] (no min/max pass).
  RankFinder(const uint32_t* a, int64_t n, uint32_t lo, uint32_t hi, uint32_t* scratch,
             std::vector<uint32_t>& counts)
      : a_(a), n_(n), scratch_(scratch), counts_(counts), lo_(lo), hi_(hi) {
    build();
  }
  void build() {
    if (n_ <= 512 || lo_ == hi_) return;  // small or constant: no histogram
    const int width = 32 - __builtin_clz(hi_ - lo_);
    shift_ = std::max(0, width - kBits);
    counts_.assign(size_t{1} << kBits, 0);
    for (int64_t i = 0; i < n_; ++i) ++counts_[(a_[i] - lo_) >> shift_];
    binned_ = true;
  }
  // `avx2`: the rank's bin copied out 8 at a time (the same values in the
  // same order: the same result).
  Ranked rank(int64_t r, bool avx2 = false) {
    if (lo_ == hi_) return {lo_, 0};
    int64_t above = 0, w = 0;
    if (!binned_) {
      std::copy(a_, a_ + n_, scratch_);
      w = n_;
    } else {
      auto b = static_cast<int64_t>((hi_ - lo_) >> shift_);
      for (; b > 0 && above + counts_[b] <= r; --b) above += counts_[b];
      int64_t i = 0;
#ifdef SLOWPIPE_HAVE_SIMD_SWEEP
      if (avx2) i = bin_avx2(a_, n_, lo_, shift_, static_cast<uint32_t>(b), scratch_, &w);
#endif
      for (; i < n_; ++i)
        if (static_cast<int64_t>((a_[i] - lo_) >> shift_) == b) scratch_[w++] = a_[i];
    }
    const int64_t rr = r - above;
    std::nth_element(scratch_, scratch_ + rr, scratch_ + w, std::greater<>());
    const uint32_t v = scratch_[rr];
    int64_t greater = above;
    for (int64_t i = 0; i < w; ++i) greater += scratch_[i] > v;
    return {v, greater};
  }

 private:
  const uint32_t* a_;
  int64_t n_;
  uint32_t* scratch_;
  std::vector<uint32_t>& counts_;
  uint32_t lo_ = 0, hi_ = 0;
  int shift_ = 0;
  bool binned_ = false;
};

// Values in [lo, hi] around the k-th largest magnitude of x[0, m) (step 1 of
// TopkSelector::select): with high probability it lies in the bracket, and
// select() falls back to the exact path when it does not. `sample`, `scratch`
// and `counts` are the selector's buffers (scratch left with >= m entries).
struct Bracket {
  uint32_t lo, hi;
};

Bracket bracket_kth(const float* x, int64_t m, int64_t k, std::vector<uint32_t>& sample,
                    std::vector<uint32_t>& scratch, std::vector<uint32_t>& counts) {
  // From a sample of about m / 32 values, stratified by blocks of 16
  // consecutive elements (a cache line when the row is aligned; fewer cache
  // misses than scattered positions): one block at a hash-chosen offset in
  // each of `blocks` equal strata, ascending.
  constexpr int64_t kBlock = 16;
  const int64_t blocks = std::clamp<int64_t>(m / (32 * kBlock), 32, 512);
  const int64_t s = blocks * kBlock, stratum = m / blocks;  // stratum >= 128
  sample.resize(s);
  uint64_t state = static_cast<uint64_t>(m) * 0x2545F4914F6CDD1DULL + static_cast<uint64_t>(k);
  for (int64_t b = 0; b < blocks; ++b) {
    uint64_t jitter =
        ((splitmix64(state) >> 32) * static_cast<uint64_t>(stratum - kBlock + 1)) >> 32;
    const float* p = x + b * stratum + static_cast<int64_t>(jitter);
    for (int64_t j = 0; j < kBlock; ++j) sample[b * kBlock + j] = mag_bits(p[j]);
  }
  const double p = static_cast<double>(k) / static_cast<double>(m);
  const double mean = p * static_cast<double>(s);
  const double margin = 3.5 * std::sqrt(static_cast<double>(s) * p * (1 - p)) + 2;
  const auto r_hi = static_cast<int64_t>(std::floor(mean - margin));  // rank (0 = largest)
  const auto r_lo = static_cast<int64_t>(std::ceil(mean + margin));
  uint32_t hi = 0xFFFFFFFFU, lo = 0;
  scratch.resize(std::max(s, m));  // also the rank finders' scratch in select()
  {
    RankFinder in_sample(sample.data(), s, scratch.data(), counts);
    if (r_lo < s) lo = in_sample.rank(r_lo).value;
    if (r_hi >= 0) hi = in_sample.rank(r_hi).value;
  }
  return {lo, hi};
}

}  // namespace

TopkSelector::Sweeps TopkSelector::sweeps() const {
  const auto cpu = static_cast<Sweeps>(static_cast<int>(simd::level()));
  return static_cast<int>(widest_) < static_cast<int>(cpu) ? widest_ : cpu;
}

int64_t kept_count(double fraction, int64_t m) {
  if (m <= 0) return 0;
  auto k = static_cast<int64_t>(std::ceil(fraction * static_cast<double>(m) - 1e-9));
  return std::clamp<int64_t>(k, 1, m);
}

void TopkSelector::select_exact(const float* x, int64_t m, int64_t k, int32_t* out) {
  if (k <= 0) return;
  if (k >= m) {
    for (int64_t i = 0; i < m; ++i) out[i] = static_cast<int32_t>(i);
    return;
  }
  mags_.resize(m);
  for (int64_t i = 0; i < m; ++i) mags_[i] = mag_bits(x[i]);
  cand_mags_.assign(mags_.begin(), mags_.end());
  std::nth_element(cand_mags_.begin(), cand_mags_.begin() + (k - 1), cand_mags_.end(),
                   std::greater<>());
  uint32_t t = cand_mags_[k - 1];
  int64_t above = 0;
  for (int64_t i = 0; i < m; ++i) above += mags_[i] > t;
  int64_t w = 0, ties = k - above;
  for (int64_t i = 0; i < m; ++i) {
    uint32_t u = mags_[i];
    if (u > t || (u == t && ties > 0)) {
      if (u == t) --ties;
      out[w++] = static_cast<int32_t>(i);
    }
  }
}

void TopkSelector::select(const float* x, int64_t m, int64_t k, int32_t* out, float* values) {
  if (k <= 0) return;
  // The scalar paths gather the values after they emit (while a small row is
  // still in cache); the AVX2 and AVX-512 sweeps write them as they emit.
  const auto gather = [&] {
    if (values)
      for (int64_t j = 0; j < k; ++j) values[j] = x[out[j]];
  };
  if (k >= m || m <= kSmallRow) {
    select_exact(x, m, k, out);
    gather();
    return;
  }
  // 1. Bracket the k-th largest magnitude (bracket_kth).
  const Bracket bracket = bracket_kth(x, m, k, sample_, mags_, counts_);
  uint32_t hi = bracket.hi, lo = bracket.lo;
  if (lo > hi) lo = hi;
  // 2. Sweep 1: count the sure ones (> hi), collect the candidates ([lo, hi]);
  // the AVX2 and AVX-512 sweeps also keep every element >= lo (Kept).
  cand_mags_.resize(m + 16);  // + 16: the SIMD sweeps store whole vectors
  uint32_t* cmag = cand_mags_.data();
  int64_t nc = 0, ns = 0;
  const Sweeps isa = sweeps();
  Kept kept{nullptr, nullptr};
  if (isa != Sweeps::kPortable) {
    kept_idx_.resize(m + 16);
    kept_raw_.resize(m + 16);
    kept = Kept{kept_idx_.data(), kept_raw_.data()};
  }
  ns = sweep_one(isa, x, m, lo, hi, cmag, nc, kept);
  if (ns > k || ns + nc < k) {
    ++fallbacks_;
    select_exact(x, m, k, out);
    gather();
    return;
  }
  // 3. The exact threshold t: the (k - ns)-th largest candidate; ties at t are
  // taken toward lower indices.
  const int64_t need = k - ns;
  uint32_t t = hi;
  int64_t ties = 0;
  if (need > 0) {
    Ranked ranked = RankFinder(cmag, nc, lo, hi, mags_.data(), counts_)
                        .rank(need - 1, isa != Sweeps::kPortable);
    t = ranked.value;
    ties = need - ranked.greater;
  }
  // 4. Sweep 2: emit in index order (AVX2: from the kept stream, which holds
  // every element >= t in index order, since t >= lo).
  bool with_values = false;
  const int64_t written = emit_in_order(isa, x, m, kept, t, ties, k, out, values, &with_values);
  if (written != k)
    throw std::logic_error("TopkSelector: selected " + std::to_string(written) + " of " +
                           std::to_string(k));
  if (!with_values) gather();
}

void select_randk(int64_t m, int64_t k, uint64_t& state, int32_t* out) {
  int64_t w = 0;
  for (int64_t i = 0; i < m && w < k; ++i) {
    double u = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
    if (u * static_cast<double>(m - i) < static_cast<double>(k - w))
      out[w++] = static_cast<int32_t>(i);
  }
}

}  // namespace slowpipe::compressors
