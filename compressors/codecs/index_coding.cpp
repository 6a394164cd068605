// Index coding of the sparsifiers; the formats are described in index_coding.h.
// Bit streams are LSB-first and the host little-endian (as every codec assumes):
// a 64-bit load at byte b holds stream bits 8b .. 8b + 63.
#include "compressors/codecs/index_coding.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/errors.h"
#include "compressors/codecs/internal/quant_simd.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

// The coders also compiled for x86-64-v3 (BMI1/2: shlx, shrx, tzcnt without
// the flags dependency) and picked at load time: a quarter to a third faster
// at K = 10% on the 2-core Xeon VM of the benchmarks.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SLOWPIPE_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#define SLOWPIPE_INLINE inline __attribute__((always_inline))  // into each clone
#else
#define SLOWPIPE_CLONES
#define SLOWPIPE_INLINE inline
#endif

namespace slowpipe::compressors {

namespace {

SLOWPIPE_INLINE uint64_t load64(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define SLOWPIPE_ONES_AVX2 1
// The OR of a vector's four 64-bit lanes.
__attribute__((target("avx2"))) inline uint64_t or_lanes(__m256i v) {
  const __m128i x = _mm_or_si128(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  return static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_or_si128(x, _mm_unpackhi_epi64(x, x))));
}
// The two 64-bit words of the stream that a run of set bits is ORed into,
// held in registers while the runs stay on them. The word pair moves on by
// plain stores of the finished word: an OR into memory per run had each run
// load 16 bytes that half overlapped the last run's store, which the CPU
// cannot forward (about half of the encoder's samples sat on that store).
struct WordPair {
  uint8_t* out;
  uint64_t word = 0, lo = 0, hi = 0;  // lo, hi: words `word` and `word` + 1
  bool live = false;

  static uint64_t load(const uint8_t* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
  }
  static void store(uint8_t* p, uint64_t w) { std::memcpy(p, &w, 8); }
  // Writes both words back (the bits already in memory were read in).
  void flush() {
    if (!live) return;
    store(out + 8 * word, lo);
    store(out + 8 * word + 8, hi);
    live = false;
  }
  // ORs a into word `w` and b into w + 1 (w >= word while live).
  void add(uint64_t w, uint64_t a, uint64_t b) {
    if (!live || w > word + 1) {  // rare: a start, or a gap of a word or more
      flush();
      word = w;
      lo = load(out + 8 * w);
      hi = load(out + 8 * w + 8);
      live = true;
    }
    const uint64_t step = w - word;  // 0 or 1: selects, no branch
    store(out + 8 * word, lo);       // final when the pair moves on
    lo = (step != 0 ? hi : lo) | a;
    hi = (step != 0 ? 0 : hi) | b;
    word = w;
  }
};

// Sets the bits at stream positions base + (row[j] >> l) + j * plus_j for j
// in [0, count), ascending, 8 at a time where the 8 span at most two 64-bit
// words that lie inside the stream's `bytes` (ORed into a WordPair); the
// others one byte OR each in memory. OR is order-free, so the bits are the
// same.
__attribute__((target("avx2"))) void ones_avx2(uint8_t* out, uint64_t bytes, uint64_t base,
                                               const int32_t* row, int64_t count, int l,
                                               int plus_j) {
  const __m128i shift = _mm_cvtsi32_si128(l);
  const __m256i lanes =
      _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(plus_j));
  const __m256i one = _mm256_set1_epi64x(1), sixty_four = _mm256_set1_epi64x(64);
  const auto position = [&](int64_t j) {
    return base + (static_cast<uint32_t>(row[j]) >> l) + static_cast<uint64_t>(j * plus_j);
  };
  const auto set_one = [&](uint64_t p) { out[p >> 3] |= static_cast<uint8_t>(1U << (p & 7)); };
  WordPair pair{out};
  int64_t j = 0;
  for (; j + 8 <= count; j += 8) {
    const uint64_t p0 = position(j), word = p0 >> 6;
    const uint64_t p7 = position(j + 7);
    if (p7 - 64 * word >= 128 || 8 * word + 16 > bytes) {
      pair.flush();
      for (int t = 0; t < 8; ++t) set_one(position(j + t));
      continue;
    }
    // Offsets from the word's bit 0, in [0, 128): 32-bit lanes suffice.
    const __m256i h =
        _mm256_srl_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + j)), shift);
    const auto first = static_cast<int32_t>(static_cast<uint32_t>(row[j]) >> l);
    const __m256i rel =
        _mm256_add_epi32(_mm256_sub_epi32(_mm256_add_epi32(h, lanes), _mm256_set1_epi32(first)),
                         _mm256_set1_epi32(static_cast<int32_t>(p0 & 63)));
    const __m256i r_lo = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(rel));
    const __m256i r_hi = _mm256_cvtepu32_epi64(_mm256_extracti128_si256(rel, 1));
    // A shift count of 64 or more (or a negative one) gives 0.
    const __m256i a = _mm256_or_si256(_mm256_sllv_epi64(one, r_lo), _mm256_sllv_epi64(one, r_hi));
    const __m256i b = _mm256_or_si256(_mm256_sllv_epi64(one, _mm256_sub_epi64(r_lo, sixty_four)),
                                      _mm256_sllv_epi64(one, _mm256_sub_epi64(r_hi, sixty_four)));
    pair.add(word, or_lanes(a), or_lanes(b));
  }
  pair.flush();
  for (; j < count; ++j) set_one(position(j));
}

// The low `bits` (1 to 8) bits of each of v[0, count) ORed into the zeroed
// stream `out` from bit `pos` on; returns the position after them. Eight
// fields per step, masked and shifted into place in 64-bit lanes and ORed
// into one group of 8 * bits bits (the scalar loop spends a mask, a shift and
// an OR per field). Whole words are ORed in as they fill, as in
// BitWriter::fields.
__attribute__((target("avx2"))) uint64_t fields_avx2(uint8_t* out, uint64_t pos, const int32_t* v,
                                                     int64_t count, int bits) {
  const __m256i mask = _mm256_set1_epi64x((int64_t{1} << bits) - 1);
  const __m256i shift_lo = _mm256_setr_epi64x(0, bits, 2 * bits, 3 * bits);
  const __m256i shift_hi = _mm256_add_epi64(shift_lo, _mm256_set1_epi64x(4 * bits));
  uint64_t acc = 0, word = pos >> 6;
  int fill = static_cast<int>(pos & 63);
  const auto put = [&](uint64_t value, int n) {  // n in [1, 64]
    acc |= value << fill;
    fill += n;
    if (fill >= 64) {
      uint64_t w;
      std::memcpy(&w, out + 8 * word, 8);
      w |= acc;
      std::memcpy(out + 8 * word, &w, 8);
      ++word;
      fill -= 64;
      acc = fill == 0 ? 0 : value >> (n - fill);
    }
  };
  int64_t j = 0;
  for (; j + 8 <= count; j += 8) {
    const __m256i lo =
        _mm256_cvtepu32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + j)));
    const __m256i hi =
        _mm256_cvtepu32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + j + 4)));
    const __m256i a = _mm256_sllv_epi64(_mm256_and_si256(lo, mask), shift_lo);
    const __m256i b = _mm256_sllv_epi64(_mm256_and_si256(hi, mask), shift_hi);
    put(or_lanes(_mm256_or_si256(a, b)), 8 * bits);
  }
  for (; j < count; ++j)
    put(static_cast<uint64_t>(static_cast<uint32_t>(v[j])) & ((uint64_t{1} << bits) - 1), bits);
  const auto n = static_cast<uint64_t>(fill + 7) / 8;  // the partial word's bytes
  uint64_t w = 0;
  std::memcpy(&w, out + 8 * word, n);
  w |= acc;
  std::memcpy(out + 8 * word, &w, n);
  return 64 * word + static_cast<uint64_t>(fill);
}
#endif

// Writes a bit stream LSB-first into `bytes` zeroed bytes, OR-ing every bit in:
// fields through a 64-bit accumulator stored a whole word at a time, single
// set bits (bitmaps, unary codes) as one byte OR each. No write leaves the
// stream's bytes.
class BitWriter {
 public:
  BitWriter(uint8_t* out, uint64_t bytes) : out_(out), bytes_(bytes) { std::memset(out, 0, bytes); }

  // The low `bits` bits (1 to 32) of each of v[0, count), in order; with
  // `avx2`, 8 at a time where bits <= 8.
  SLOWPIPE_INLINE void fields(const int32_t* v, int64_t count, int bits, bool avx2) {
#ifdef SLOWPIPE_ONES_AVX2
    if (avx2 && bits <= 8) {
      pos_ = fields_avx2(out_, pos_, v, count, bits);
      return;
    }
#else
    (void)avx2;
#endif
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    const int per_word = 64 / bits;  // fields gathered into one put
    uint64_t acc = 0, word = pos_ >> 6;
    int fill = static_cast<int>(pos_ & 63);
    auto put = [&](uint64_t value, int n) {  // n in [1, 64]
      acc |= value << fill;
      fill += n;
      if (fill >= 64) {  // a whole word of the stream: inside the bytes
        or_bytes(8 * word, acc, 8);
        ++word;
        fill -= 64;
        acc = fill == 0 ? 0 : value >> (n - fill);
      }
    };
    int64_t j = 0;
    for (; j + per_word <= count; j += per_word) {
      uint64_t group = 0;
      for (int i = 0; i < per_word; ++i)
        group |= (static_cast<uint64_t>(static_cast<uint32_t>(v[j + i])) & mask) << (i * bits);
      put(group, per_word * bits);
    }
    for (; j < count; ++j) put(static_cast<uint64_t>(static_cast<uint32_t>(v[j])) & mask, bits);
    or_bytes(8 * word, acc, (static_cast<uint64_t>(fill) + 7) / 8);
    pos_ = 64 * word + static_cast<uint64_t>(fill);
  }

  // `len` bits, of which those at offsets pos(0), ..., pos(count-1) (< len)
  // from the current position are set: a bitmap, or a unary code.
  template <class Pos>
  SLOWPIPE_INLINE void ones(int64_t count, const Pos& pos, uint64_t len) {
    for (int64_t j = 0; j < count; ++j) {
      const uint64_t p = pos_ + pos(j);
      out_[p >> 3] |= static_cast<uint8_t>(1U << (p & 7));
    }
    pos_ += len;
  }

  // The set bits at offsets (row[j] >> l) + j * plus_j (plus_j 0 or 1) from
  // the current position, j in [0, count), ascending; then `len` bits on.
  SLOWPIPE_INLINE void ones_of(const int32_t* row, int64_t count, int l, int plus_j, uint64_t len,
                               bool avx2) {
#ifdef SLOWPIPE_ONES_AVX2
    if (avx2) {
      ones_avx2(out_, bytes_, pos_, row, count, l, plus_j);
      pos_ += len;
      return;
    }
#else
    (void)avx2;
#endif
    ones(
        count,
        [row, l, plus_j](int64_t j) {
          return static_cast<uint64_t>(static_cast<uint32_t>(row[j]) >> l) +
                 static_cast<uint64_t>(j * plus_j);
        },
        len);
  }

  // Checks that the stream fills `bytes_` (the last byte possibly in part).
  void finish() const {
    if ((pos_ + 7) / 8 != bytes_)
      throw std::logic_error("encode_indices: wrote " + std::to_string(pos_) + " bits into " +
                             std::to_string(bytes_) + " bytes");
  }

 private:
  SLOWPIPE_INLINE void or_bytes(uint64_t offset, uint64_t value, uint64_t n) {
    uint64_t word = 0;
    std::memcpy(&word, out_ + offset, n);
    word |= value;
    std::memcpy(out_ + offset, &word, n);
  }

  uint8_t* out_;
  uint64_t bytes_, pos_ = 0;  // pos_: bits written
};

// The stream the decoders read: 64-bit little-endian loads at any byte offset
// inside it, the last 8 bytes from a zero-padded copy so that no load leaves
// the input (no copy of the whole stream).
class Stream {
 public:
  Stream(const uint8_t* data, uint64_t bytes)
      : data_(data), bytes_(bytes), tail_start_(bytes < 8 ? 0 : bytes - 8) {
    std::memcpy(tail_, data + tail_start_, bytes - tail_start_);
  }
  // The 8 bytes at `offset` (< bytes), zeros past the end.
  SLOWPIPE_INLINE uint64_t load(uint64_t offset) const {
    return offset + 8 <= bytes_ ? load64(data_ + offset) : load64(tail_ + (offset - tail_start_));
  }
  // `bits` (<= 57) bits at stream position `pos`.
  SLOWPIPE_INLINE uint64_t get(uint64_t pos, int bits) const {
    return (load(pos >> 3) >> (pos & 7)) & ((uint64_t{1} << bits) - 1);
  }

 private:
  const uint8_t* data_;
  uint64_t bytes_, tail_start_;
  uint8_t tail_[16] = {};
};

enum class RowError { kNone, kTooMany, kTooFew, kBadIndex };

[[noreturn]] void throw_row_error(RowError e, int64_t r) {
  const std::string row = "sparse message: row " + std::to_string(r);
  if (e == RowError::kTooMany) throw DataError(row + " holds more than k indices");
  if (e == RowError::kTooFew) throw DataError(row + " holds fewer than k indices");
  throw DataError("sparse message: bad index in row " + std::to_string(r));
}

// Calls g(w, bit0, j) for each 64-bit word w of the stream in [begin, end)
// (masked to that range), bit0 its bit 0's stream position and j the set bits
// before it; g returns j plus the word's set bits. Returns the number of set
// bits, or max_count + 1 (g not called on that word) when there are more than
// max_count.
template <class G>
SLOWPIPE_INLINE int64_t scan_words(const Stream& in, uint64_t begin, uint64_t end,
                                   int64_t max_count, const G& g) {
  if (begin >= end) return 0;
  int64_t j = 0;
  uint64_t wi = begin >> 6;
  const uint64_t last = (end - 1) >> 6;
  uint64_t w = in.load(8 * wi) & (~uint64_t{0} << (begin & 63));
  for (;;) {
    if (wi == last) w &= ~uint64_t{0} >> (63 - ((end - 1) & 63));
    if (j + __builtin_popcountll(w) > max_count) return max_count + 1;
    j = g(w, wi << 6, j);
    if (wi == last) return j;
    ++wi;
    w = in.load(8 * wi);
  }
}

// Calls f(p, j) for the set bits p of the stream in [begin, end), ascending,
// j = 0, 1, ...: count-trailing-zeros over aligned 64-bit words. Returns as
// scan_words.
template <class F>
SLOWPIPE_INLINE int64_t scan_ones(const Stream& in, uint64_t begin, uint64_t end, int64_t max_count,
                                  const F& f) {
  return scan_words(in, begin, end, max_count, [&f](uint64_t w, uint64_t bit0, int64_t j) {
    for (; w != 0; w &= w - 1, ++j)
      f(bit0 + static_cast<uint64_t>(__builtin_ctzll(w)), static_cast<uint64_t>(j));
    return j;
  });
}

// One bitmap row of m bits at `pos` -> row[0, k).
SLOWPIPE_INLINE RowError decode_bitmap_row(const Stream& in, uint64_t pos, int64_t m, int64_t k,
                                           int32_t* row) {
  const int64_t n =
      scan_ones(in, pos, pos + static_cast<uint64_t>(m), k,
                [&](uint64_t p, uint64_t j) { row[j] = static_cast<int32_t>(p - pos); });
  return n > k ? RowError::kTooMany : n < k ? RowError::kTooFew : RowError::kNone;
}

// k fields of `bits` (1 to 32) bits at stream position `pos` -> v[0, k): the
// inverse of BitWriter::fields, several fields from each 64-bit load.
SLOWPIPE_INLINE void read_fields(const Stream& in, uint64_t pos, int64_t k, int bits, uint32_t* v) {
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  const int per_load = 57 / bits;  // a load at any bit offset holds >= 57 bits
  int64_t j = 0;
  for (; j + per_load <= k; j += per_load, pos += static_cast<uint64_t>(per_load * bits)) {
    const uint64_t w = in.load(pos >> 3) >> (pos & 7);
    for (int i = 0; i < per_load; ++i) v[j + i] = static_cast<uint32_t>((w >> (i * bits)) & mask);
  }
  for (; j < k; ++j, pos += static_cast<uint64_t>(bits))
    v[j] = static_cast<uint32_t>(in.get(pos, bits));
}

// Strictly ascending and the last below m (so all in [0, m)).
SLOWPIPE_INLINE bool ascending_below(const uint32_t* v, int64_t k, int64_t m) {
  uint32_t bad = 0;
  for (int64_t j = 1; j < k; ++j) bad |= static_cast<uint32_t>(v[j] <= v[j - 1]);
  return bad == 0 && (k == 0 || v[k - 1] < static_cast<uint64_t>(m));
}

// One list row of k fields of b bits at `pos` -> row[0, k).
SLOWPIPE_INLINE RowError decode_list_row(const Stream& in, uint64_t pos, int64_t m, int64_t k,
                                         int b, uint32_t* row) {
  read_fields(in, pos, k, b, row);
  return ascending_below(row, k, m) ? RowError::kNone : RowError::kBadIndex;
}

// The offsets of the set bits of each byte value, ascending, packed one to a
// byte (the unused bytes 0): the AVX2 decoder below reads the unary high
// parts a byte at a time, without a loop over its bits.
struct BytePositions {
  uint64_t of[256];
  constexpr BytePositions() : of() {
    for (int b = 0; b < 256; ++b) {
      int n = 0;
      for (int i = 0; i < 8; ++i)
        if ((b >> i) & 1) of[b] |= static_cast<uint64_t>(i) << (8 * n++);
    }
  }
};
constexpr BytePositions kBytePositions;

#if defined(__x86_64__) && defined(__GNUC__)
#define SLOWPIPE_HIGH_PARTS_AVX2 1
// The set bits of one 64-bit word of the unary code, word_base = p - hi at
// its bit 0, from index j on: each byte writes 8 indices row[j, j + 8) = (p -
// hi - j) << l | low[j] at once, those past its set bits overwritten by the
// next byte's (the caller ensures j + popcount(w) + 8 <= k). Returns the new j.
__attribute__((target("avx2,popcnt"))) int64_t word_high_parts_avx2(uint64_t w, uint32_t word_base,
                                                                    int64_t j, int l,
                                                                    const uint32_t* low,
                                                                    uint32_t* row) {
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m128i shift = _mm_cvtsi32_si128(l);
  for (int b = 0; b < 8; ++b) {
    const auto byte = static_cast<uint32_t>(w >> (8 * b)) & 0xFFU;
    const __m256i at = _mm256_cvtepu8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(&kBytePositions.of[byte])));
    const auto base = static_cast<int32_t>(word_base + static_cast<uint32_t>(8 * b - j));
    __m256i v = _mm256_sub_epi32(_mm256_add_epi32(at, _mm256_set1_epi32(base)), iota);
    v = _mm256_or_si256(_mm256_sll_epi32(v, shift),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(low + j)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + j), v);
    j += __builtin_popcount(byte);
  }
  return j;
}
#endif

// Elias-Fano rows are decoded a chunk of about kChunk indices at a time: the
// chunk's low parts, then the unary code's words until the chunk is full,
// then the chunk's order checked, all while in L1. (Whole rows at a time
// wrote 650 KB of low parts and 650 KB of indices for GPT-2 XL at 10%, more
// than the L2, then read both back.) The low parts' scratch holds a chunk,
// a word's indices and the 8 lanes the AVX2 high parts may read past them.
constexpr int64_t kChunk = 1024;
constexpr int64_t kChunkRoom = kChunk + 64 + 8;

// The set bits of word w (at stream bit `bit0`) of the unary code starting
// at `hi` -> row[j, ...), j the set bits before it; the j-th gives h_j = p -
// hi - j and row[j] = h_j << l | low[j - j0]. One index per set bit, as
// count-trailing-zeros finds them, or with `avx2` a byte of the code at a
// time where the word's indices and 8 more fit in `room` (low's entries from
// j0). Returns j plus the word's set bits.
SLOWPIPE_INLINE int64_t word_high_parts(uint64_t w, uint64_t bit0, uint64_t hi, int64_t j,
                                        int64_t j0, int64_t room, int l, const uint32_t* low,
                                        uint32_t* row, bool avx2) {
  const auto word_base = static_cast<uint32_t>(bit0 - hi);  // p - hi at the word's bit 0
#ifdef SLOWPIPE_HIGH_PARTS_AVX2
  if (avx2 && j - j0 + __builtin_popcountll(w) + 8 <= room)  // chunk-relative j: the same h
    return j0 +
           word_high_parts_avx2(w, word_base - static_cast<uint32_t>(j0), j - j0, l, low, row + j0);
#else
  (void)avx2, (void)room;
#endif
  for (; w != 0; w &= w - 1, ++j)
    row[j] = (word_base + static_cast<uint32_t>(__builtin_ctzll(w)) - static_cast<uint32_t>(j))
                 << l |
             low[j - j0];
  return j;
}

// One Elias-Fano row at `pos`: k low fields of l bits, then the unary high
// parts in k + (m >> l) bits -> row[0, k); `low`: min(k, kChunkRoom) entries
// of scratch. The j-th set bit of the high part, at offset p, gives h_j = p -
// j (never negative: offsets strictly ascend). 32-bit arithmetic is exact: h
// < k + (m >> l) and k 2^l <= m, so h 2^l + low < 2 m < 2^32, even in a
// corrupt message. Errors as the whole-row decoders: too many set bits as
// soon as seen, then too few, then the order and the bound.
SLOWPIPE_INLINE RowError decode_elias_fano_row(const Stream& in, uint64_t pos, int64_t m, int64_t k,
                                               int l, uint32_t* low, uint32_t* row, bool avx2) {
  const uint64_t hi = pos + static_cast<uint64_t>(k) * l;
  const uint64_t hi_end = hi + static_cast<uint64_t>(k) + (static_cast<uint64_t>(m) >> l);
  const uint64_t last = (hi_end - 1) >> 6;
  uint64_t wi = hi >> 6;
  uint64_t w = in.load(8 * wi) & (~uint64_t{0} << (hi & 63));
  uint32_t bad = 0;
  int64_t j = 0;
  for (bool done = false; !done;) {
    const int64_t j0 = j, room = std::min(kChunkRoom, k - j0);
    if (l > 0)
      read_fields(in, pos + static_cast<uint64_t>(j0) * l, room, l, low);
    else
      std::fill(low, low + room, 0U);
    while (j - j0 < kChunk) {
      if (wi == last) w &= ~uint64_t{0} >> (63 - ((hi_end - 1) & 63));
      if (j + __builtin_popcountll(w) > k) return RowError::kTooMany;
      j = word_high_parts(w, wi << 6, hi, j, j0, room, l, low, row, avx2);
      if (wi == last) {
        done = true;
        break;
      }
      w = in.load(8 * ++wi);
    }
    for (int64_t i = std::max<int64_t>(j0, 1); i < j; ++i)  // joined to the last chunk
      bad |= static_cast<uint32_t>(row[i] <= row[i - 1]);
  }
  if (j != k) return RowError::kTooFew;
  return bad == 0 && row[k - 1] < static_cast<uint64_t>(m) ? RowError::kNone : RowError::kBadIndex;
}

}  // namespace

IndexCoding index_coding_as(IndexFormat format, int64_t m, int64_t k) {
  IndexCoding c;
  c.format = format;
  while (c.index_bits < 31 && (int64_t{1} << c.index_bits) < m) ++c.index_bits;
  if (k < 0 || k > m)
    throw std::invalid_argument("index_coding: k = " + std::to_string(k) +
                                " outside [0, m = " + std::to_string(m) + "]");
  if (k == 0) return c;  // no indices, no bits
  const auto um = static_cast<uint64_t>(m), uk = static_cast<uint64_t>(k);
  c.low_bits = 63 - __builtin_clzll(um / uk);  // floor(log2(m / k)), as floor(m / k) has it
  switch (format) {
    case IndexFormat::kBitmap:
      c.row_bits = um;
      break;
    case IndexFormat::kList:
      c.row_bits = uk * static_cast<uint64_t>(c.index_bits);
      break;
    case IndexFormat::kEliasFano:
      c.row_bits = uk * static_cast<uint64_t>(c.low_bits) + uk + (um >> c.low_bits);
      break;
  }
  return c;
}

IndexCoding index_coding(int64_t m, int64_t k) {
  IndexCoding best = index_coding_as(IndexFormat::kBitmap, m, k);
  for (IndexFormat f : {IndexFormat::kList, IndexFormat::kEliasFano}) {
    const IndexCoding c = index_coding_as(f, m, k);
    if (c.row_bits < best.row_bits) best = c;  // strictly: ties keep the earlier
  }
  return best;
}

uint64_t index_section_bytes(int64_t rows, int64_t m, int64_t k) {
  return index_section_bytes(rows, index_coding(m, k));
}
uint64_t index_section_bytes(int64_t rows, const IndexCoding& c) {
  return rows <= 0 ? 0 : (static_cast<uint64_t>(rows) * c.row_bits + 7) / 8;
}

void encode_indices(const int32_t* idx, int64_t rows, int64_t m, int64_t k, uint8_t* out) {
  encode_indices(idx, rows, m, k, index_coding(m, k), out);
}
void decode_indices(const uint8_t* in, int64_t rows, int64_t m, int64_t k, int32_t* idx) {
  decode_indices(in, rows, m, k, index_coding(m, k), idx);
}

SLOWPIPE_CLONES void encode_indices(const int32_t* idx, int64_t rows, int64_t m, int64_t k,
                                    const IndexCoding& c, uint8_t* out, bool vector) {
  const uint64_t bytes = index_section_bytes(rows, c);
  if (bytes == 0) return;
  const bool avx2 = vector && simd::level() >= simd::Level::kAvx2;
  const int l = c.low_bits;
  for (int64_t r = 0; r < rows; ++r)  // a bad index would write outside `out`
    if (!ascending_below(reinterpret_cast<const uint32_t*>(idx + r * k), k, m))
      throw std::invalid_argument("encode_indices: row " + std::to_string(r) +
                                  " is not strictly ascending in [0, m)");
  BitWriter w(out, bytes);
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* row = idx + r * k;
    switch (c.format) {
      case IndexFormat::kBitmap:
        w.ones_of(row, k, 0, 0, static_cast<uint64_t>(m), avx2);
        break;
      case IndexFormat::kList:
        w.fields(row, k, c.index_bits, avx2);
        break;
      case IndexFormat::kEliasFano:
        if (l > 0) w.fields(row, k, l, avx2);
        w.ones_of(row, k, l, 1, static_cast<uint64_t>(k) + (static_cast<uint64_t>(m) >> l), avx2);
        break;
    }
  }
  w.finish();
}

SLOWPIPE_CLONES void decode_indices(const uint8_t* in, int64_t rows, int64_t m, int64_t k,
                                    const IndexCoding& c, int32_t* idx, bool vector) {
  const uint64_t bytes = index_section_bytes(rows, c);
  if (bytes == 0) return;
  const Stream stream(in, bytes);
  // Elias-Fano's low parts, a chunk of them, kept per thread.
  thread_local std::vector<uint32_t> low_parts;
  const auto low_size = static_cast<size_t>(std::min(k, kChunkRoom));
  if (c.format == IndexFormat::kEliasFano && low_parts.size() < low_size)
    low_parts.resize(low_size);
  uint32_t* const low = low_parts.data();
  const bool avx2 = vector && simd::level() >= simd::Level::kAvx2;
  for (int64_t r = 0; r < rows; ++r) {
    const uint64_t pos = static_cast<uint64_t>(r) * c.row_bits;
    auto* row = reinterpret_cast<uint32_t*>(idx + r * k);  // as unsigned: may alias
    RowError e = RowError::kNone;
    switch (c.format) {
      case IndexFormat::kBitmap:
        e = decode_bitmap_row(stream, pos, m, k, idx + r * k);
        break;
      case IndexFormat::kList:
        e = decode_list_row(stream, pos, m, k, c.index_bits, row);
        break;
      case IndexFormat::kEliasFano:
        e = decode_elias_fano_row(stream, pos, m, k, c.low_bits, low, row, avx2);
        break;
    }
    if (e != RowError::kNone) throw_row_error(e, r);
  }
}

}  // namespace slowpipe::compressors
