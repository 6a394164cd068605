// TAH-Quant: tiles of G channels per token, pivot swap + Walsh-Hadamard
// rotation of tiles with one dominant element, fp16 zero point and step per
// tile, entropy-guided choice between two widths; see tah_quant.h and
// docs/codec-spec.md ("TAH-Quant") for the exact rule and the byte layout.
//
// Work is per tile in a local buffer (G <= 1024 floats): one pass computes the
// entropies (adaptive mode, fractional B only) and picks the high-width tiles,
// a second rotates, quantizes and packs; the per-tile kernels (statistics,
// fp16 roundings, Walsh-Hadamard) are tah_kernels.cpp, the entropy
// tah_entropy.cpp. A tile that starts on a
// byte boundary of the code stream with a multiple of 8 elements (every full
// tile when G >= 8 and C is a multiple of G) is packed 8 codes in W bytes at a
// time, and unpacked fused with its dequantization; others go bit by bit.
#include "compressors/codecs/internal/tah_quant.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "compressors/codecs/internal/tah_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TAH_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TAH_CLONES
#endif

namespace slowpipe::compressors {

namespace {

using tah::kMaxTile;
using tah::kMinTile;
using tah::log2_of;
using tah::stats_of;
using tah::TileStats;
constexpr int kDefaultTile = 64;
// Tiles whose largest |x| is beyond the fp16 range (they clip anyway) are not
// rotated, so that the transform never overflows.
constexpr float kRotateLimit = 65504.0F;

// Byte offsets of the three sections of a message.
struct Sections {
  uint64_t header = 0, codes = 0, total = 0;
  uint64_t width_bits = 0;  // bits of the width map (T or 0)
};

Sections sections_of(const TahLayout& l, int64_t tile) {
  const auto t = static_cast<uint64_t>(l.tiles());
  const auto tf = static_cast<uint64_t>(l.full_tiles), tt = static_cast<uint64_t>(l.tail_tiles);
  const auto g = static_cast<uint64_t>(tile), r = static_cast<uint64_t>(l.tail);
  const auto lo = static_cast<uint64_t>(l.low_bits),
             extra = static_cast<uint64_t>(l.high_bits - l.low_bits);
  Sections s;
  s.width_bits = l.width_map ? t : 0;
  const uint64_t header_bits = s.width_bits + tf * (1 + static_cast<uint64_t>(log2_of(tile)));
  const uint64_t code_bits = g * (tf * lo + static_cast<uint64_t>(l.high_full) * extra) +
                             r * (tt * lo + static_cast<uint64_t>(l.high_tail) * extra);
  s.header = 4 * t;
  s.codes = s.header + (header_bits + 7) / 8;
  s.total = s.codes + (code_bits + 7) / 8;
  return s;
}

// Bit-stream helpers for fields that do not start on a byte boundary (values
// of at most 10 bits, LSB-first). put_bits ORs into zeroed memory.
void put_bits(uint8_t* out, uint64_t pos, uint32_t value, int bits) {
  while (bits > 0) {
    const int shift = static_cast<int>(pos % 8), take = std::min(bits, 8 - shift);
    out[pos / 8] |= static_cast<uint8_t>((value & ((1U << take) - 1)) << shift);
    value >>= take;
    pos += static_cast<uint64_t>(take);
    bits -= take;
  }
}
uint32_t get_bits(const uint8_t* in, uint64_t pos, int bits);
// get_bits by one 8-byte load where 8 bytes from its byte lie before `end`
// (bits <= 32).
uint32_t get_field(const uint8_t* in, const uint8_t* end, uint64_t pos, int bits) {
  const uint8_t* at = in + pos / 8;
  if (end - at < 8) return get_bits(in, pos, bits);
  uint64_t word;
  std::memcpy(&word, at, 8);
  return static_cast<uint32_t>((word >> (pos % 8)) & ((uint64_t{1} << bits) - 1));
}
uint32_t get_bits(const uint8_t* in, uint64_t pos, int bits) {
  uint32_t value = 0;
  for (int done = 0; done < bits;) {
    const int shift = static_cast<int>(pos % 8), take = std::min(bits - done, 8 - shift);
    value |= ((static_cast<uint32_t>(in[pos / 8]) >> shift) & ((1U << take) - 1)) << done;
    pos += static_cast<uint64_t>(take);
    done += take;
  }
  return value;
}

// The set bits among the first `bits` bits of `in` (LSB-first).
int64_t count_set_bits(const uint8_t* in, uint64_t bits) {
  int64_t count = 0;
  uint64_t at = 0;
  for (; at + 64 <= bits; at += 64) {
    uint64_t word;
    std::memcpy(&word, in + at / 8, 8);
    count += __builtin_popcountll(word);
  }
  for (; at < bits; ++at) count += (in[at / 8] >> (at % 8)) & 1;
  return count;
}

// The high-width tiles a width map marks: {full tiles, tail tiles}.
std::pair<int64_t, int64_t> count_high(const uint8_t* map, const uint8_t* end, const TahLayout& l) {
  if (l.tail == 0)  // every tile full: the map's set bits, a word at a time
    return {count_set_bits(map, static_cast<uint64_t>(l.tiles())), 0};
  int64_t full = 0, tail = 0;
  for (int64_t tok = 0, t = 0; tok < l.tokens; ++tok)
    for (int64_t j = 0; j <= l.full_per_token; ++j, ++t)
      if (get_field(map, end, static_cast<uint64_t>(t), 1)) ++(j < l.full_per_token ? full : tail);
  return {full, tail};
}

// The W-bit fields of 8 codes, one code (< 2^W) per byte of x, packed
// LSB-first into the low 8W bits (little-endian): neighbours paired in 16-,
// 32- and 64-bit lanes, three steps for 8 codes (W = 1..8).
constexpr uint64_t lanes(uint64_t pattern, int width) {  // pattern in every width-bit lane
  uint64_t out = 0;
  for (int at = 0; at < 64; at += width) out |= pattern << at;
  return out;
}
constexpr uint64_t low_bits(int n) {
  return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
}
template <int W>
uint64_t gather_fields(uint64_t x) {
  x = (x & lanes(0xFF, 16)) | ((x >> (8 - W)) & lanes(low_bits(W) << W, 16));
  x = (x & lanes(0xFFFF, 32)) | ((x >> (16 - 2 * W)) & lanes(low_bits(2 * W) << (2 * W), 32));
  return (x & low_bits(32)) | ((x >> (32 - 4 * W)) & (low_bits(4 * W) << (4 * W)));
}

// Codes of a tile that starts on a byte boundary and has a multiple of 8
// elements: groups of 8 codes in W bytes (the LSB-first stream, as pack_codes).
template <int W>
void pack_groups(const uint8_t* codes, int64_t len, uint8_t* out) {
  for (int64_t g = 0; g < len / 8; ++g) {
    uint64_t x;
    std::memcpy(&x, codes + 8 * g, 8);
    const uint64_t acc = gather_fields<W>(x);
    std::memcpy(out + W * g, &acc, W);
  }
}
// The decoder's twin, fused with the grid: values, not codes.
template <int W>
void dequantize_groups(const uint8_t* in, int64_t len, float zero, float step, float* out) {
  for (int64_t g = 0; g < len / 8; ++g) {
    uint64_t acc = 0;  // W byte loads (a W-byte memcpy to memory stalls the reload)
    for (int k = 0; k < W; ++k) acc |= static_cast<uint64_t>(in[W * g + k]) << (8 * k);
    for (int j = 0; j < 8; ++j)
      out[8 * g + j] =
          zero + static_cast<float>(static_cast<uint32_t>(acc >> (W * j)) & ((1U << W) - 1)) * step;
  }
}

void write_codes(const uint8_t* codes, int64_t len, int bits, uint8_t* stream, uint64_t pos) {
  if (pos % 8 == 0 && len % 8 == 0) {
    uint8_t* out = stream + pos / 8;
    switch (bits) {
      case 1:
        return pack_groups<1>(codes, len, out);
      case 2:
        return pack_groups<2>(codes, len, out);
      case 3:
        return pack_groups<3>(codes, len, out);
      case 4:
        return pack_groups<4>(codes, len, out);
      case 5:
        return pack_groups<5>(codes, len, out);
      case 6:
        return pack_groups<6>(codes, len, out);
      case 7:
        return pack_groups<7>(codes, len, out);
      default:
        return pack_groups<8>(codes, len, out);
    }
  }
  for (int64_t i = 0; i < len; ++i)
    put_bits(stream, pos + static_cast<uint64_t>(i * bits), codes[i], bits);
}

// The portable loops (the decoder runs the AVX2 unpacking first where it can).
TAH_CLONES void dequantize_tile(const uint8_t* stream, uint64_t pos, int64_t len, int bits,
                                float zero, float step, float* out) {
  if (pos % 8 == 0 && len % 8 == 0) {
    const uint8_t* in = stream + pos / 8;
    switch (bits) {
      case 1:
        return dequantize_groups<1>(in, len, zero, step, out);
      case 2:
        return dequantize_groups<2>(in, len, zero, step, out);
      case 3:
        return dequantize_groups<3>(in, len, zero, step, out);
      case 4:
        return dequantize_groups<4>(in, len, zero, step, out);
      case 5:
        return dequantize_groups<5>(in, len, zero, step, out);
      case 6:
        return dequantize_groups<6>(in, len, zero, step, out);
      case 7:
        return dequantize_groups<7>(in, len, zero, step, out);
      default:
        return dequantize_groups<8>(in, len, zero, step, out);
    }
  }
  for (int64_t i = 0; i < len; ++i)
    out[i] =
        zero +
        static_cast<float>(get_bits(stream, pos + static_cast<uint64_t>(i * bits), bits)) * step;
}

// The rotation decision of a full tile: the pivot is the first index of the
// largest |x|; rotate when it is at least twice every other |x|.
struct PivotChoice {
  bool rotate = false;
  int64_t index = 0;
};
PivotChoice choose_pivot(const float* x, int64_t len, const TileStats& s) {
  PivotChoice c;
  c.rotate = s.top1 > 0.0F && s.top1 <= kRotateLimit && s.top1 >= 2.0F * s.top2;
  if (c.rotate) c.index = tah::first_magnitude(x, len, s.top1);
  return c;
}

TAH_CLONES void round_codes(const float* v, int64_t len, float zero, float inv, float max_code,
                            uint8_t* codes) {
  for (int64_t i = 0; i < len; ++i) {
    float t = (v[i] - zero) * inv + 0.5F;
    t = t > 0.0F ? t : 0.0F;
    t = t < max_code ? t : max_code;
    codes[i] = static_cast<uint8_t>(static_cast<int>(t));
  }
}

// One tile's grid (tah::grids_of: zero = min rounded down to fp16, step =
// (max - zero) / (2^bits - 1) rounded up to fp16) into `scales`, and its codes
// at bit `pos` of the stream: code = floor((v - zero) / step + 1/2) clamped to
// [0, 2^bits - 1], with 1/step as a float (0 when step is 0). A byte-aligned
// tile of a multiple of 32 goes through `pack`, the AVX2 kernel for its
// width, where there is one (the same bytes), else these loops.
void encode_tile(const float* v, int64_t len, const tah::Grid& grid, int bits,
                 tah::QuantizePack pack, uint8_t* scales, uint8_t* stream, uint64_t pos) {
  std::memcpy(scales, &grid.zero_half, 2);
  std::memcpy(scales + 2, &grid.step_half, 2);
  if (pack != nullptr && pos % 8 == 0 && len % 32 == 0)
    return pack(v, len, grid.zero, grid.inv, stream + pos / 8);
  uint8_t codes[kMaxTile];
  round_codes(v, len, grid.zero, grid.inv, static_cast<float>((1 << bits) - 1), codes);
  write_codes(codes, len, bits, stream, pos);
}

// Tiles wait here until a batch is full. A batch is encoded in passes: the
// statistics of its tiles (the vector path chosen once), the rotations where
// the rule says (with their header fields), the grids, then the codes. 32
// tiles (8 KB of floats at G = 64, in L1): the grids' chain of fp16
// roundings and divisions, 8 tiles a vector, then runs 4 vectors side by side.
class TileBatch {
 public:
  static constexpr int kSize = 32;
  struct Tile {
    const float* v;
    int64_t len, index;
    int64_t full_index;  // among the full tiles; -1 for a tail tile (never rotated)
    uint64_t pos;
    int bits;
  };
  TileBatch(int64_t g, uint64_t rotation_bits, uint8_t* out, uint8_t* header, uint8_t* stream)
      : g_(g),
        pivot_bits_(log2_of(g)),
        rotation_bits_(rotation_bits),
        out_(out),
        header_(header),
        stream_(stream),
        rotated_(static_cast<size_t>(kSize * g)) {
    for (int b = 1; b <= 8; ++b) packers_[b] = tah::quantize_pack_avx2_for(b);
  }
  // Adds a tile; encodes the batch once it is full (flush: any left). False
  // when a tile holds a NaN or inf (nothing of its batch written).
  bool add(const Tile& t) {
    tiles_[count_] = t;
    return ++count_ < kSize || flush();
  }
  bool flush() {
    const float* v[kSize];
    int64_t len[kSize];
    for (int i = 0; i < count_; ++i) v[i] = tiles_[i].v, len[i] = tiles_[i].len;
    TileStats* stats = stats_;  // a member: a local array would be zeroed at every batch
    tah::stats_many(v, len, count_, stats);
    float lo[kSize], hi[kSize];
    int bits[kSize];
    for (int i = 0; i < count_; ++i) {
      if (!stats[i].finite) return false;
      if (tiles_[i].full_index >= 0) rotate_if_chosen(i, v[i], stats[i]);
      lo[i] = stats[i].lo, hi[i] = stats[i].hi, bits[i] = tiles_[i].bits;
    }
    tah::Grid grids[kSize];
    tah::grids_of(lo, hi, bits, count_, grids);
    for (int i = 0; i < count_; ++i)
      encode_tile(v[i], len[i], grids[i], bits[i], packers_[bits[i]], out_ + 4 * tiles_[i].index,
                  stream_, tiles_[i].pos);
    count_ = 0;
    return true;
  }

 private:
  // A full tile with one dominant element: pivot to position 0, rotated into
  // this batch's slot (v, and s's lo and hi, then describe the rotated tile), flagged with
  // its pivot in the header.
  void rotate_if_chosen(int i, const float*& v, TileStats& s) {
    const PivotChoice p = choose_pivot(v, g_, s);
    if (!p.rotate) return;
    float* r = rotated_.data() + i * g_;
    std::memcpy(r, v, static_cast<size_t>(g_) * 4);
    std::swap(r[0], r[p.index]);
    tah_hadamard(r, g_);
    v = r;
    tah::range_of(r, g_, &s.lo, &s.hi);  // top1 and top2 are not read again
    const uint64_t at =
        rotation_bits_ + static_cast<uint64_t>(tiles_[i].full_index) * (1 + pivot_bits_);
    put_bits(header_, at, 1, 1);
    put_bits(header_, at + 1, static_cast<uint32_t>(p.index), pivot_bits_);
  }

  int64_t g_;
  int pivot_bits_;
  uint64_t rotation_bits_;  // where the rotation fields start in the header
  uint8_t *out_, *header_, *stream_;
  std::vector<float> rotated_;         // [kSize, G]: the rotated tiles of the batch
  tah::QuantizePack packers_[9] = {};  // by width
  Tile tiles_[kSize];
  TileStats stats_[kSize];
  int count_ = 0;
};

// decode_payload's per-tile buffers, kept per thread (decoding is const and
// may run on several threads) at the size of the largest message decoded
// there, so that large messages do not fault fresh pages in at every call.
struct DecodeScratch {
  std::vector<uint8_t> spread;      // [tiles] the fixed widths
  std::vector<float> zeros, steps;  // [tiles] zero points and steps
};
DecodeScratch& decode_scratch() {
  thread_local DecodeScratch scratch;
  return scratch;
}

// `:fixed` with a fractional B: the i-th of `count` tiles of a class is high
// when floor((i + 1) h / count) > floor(i h / count), h high tiles spread evenly.
bool spread_high(int64_t i, int64_t count, int64_t h) {
  return (i + 1) * h / count > i * h / count;
}

// The entropy's rank key: plain unsigned order is the rule's order, the
// largest entropy first (-0 ties with +0).
uint32_t rank_key(float entropy) {
  uint32_t b;
  std::memcpy(&b, &entropy, 4);
  if (b == 0x80000000U) b = 0;
  const uint32_t order = (b & 0x80000000U) ? ~b : b | 0x80000000U;  // as the float orders
  return ~order;
}

// The tiles of one class (`ids`, ascending) with the `count` largest
// entropies (`entropy[i]` that of ids[i]), ties to the lower tile index, are
// marked in `high`. The keys are bucketed by their offset from the smallest
// (kRankBuckets buckets over their range): every bucket below the one holding
// the count-th key is taken whole, and only that bucket is ordered, by keys
// holding the rank key in their high word and the class position in their
// low word, so that plain integer order is the rule. Entropies cluster, so
// a fixed bit field of the key would put most of them in one bucket.
constexpr int kRankBuckets = 2048;
void mark_highest(const std::vector<int64_t>& ids, int64_t count, const std::vector<float>& entropy,
                  TahRankScratch& s, std::vector<uint8_t>& high) {
  const auto n = static_cast<int64_t>(ids.size());
  if (count <= 0) return;
  if (count >= n) {
    for (const int64_t t : ids) high[t] = 1;
    return;
  }
  s.ranks.resize(ids.size());
  uint32_t lo = 0xFFFFFFFFU, hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t r = rank_key(entropy[i]);
    s.ranks[i] = r, lo = std::min(lo, r), hi = std::max(hi, r);
  }
  int shift = 0;
  while (((hi - lo) >> shift) >= kRankBuckets) ++shift;
  s.counts.assign(kRankBuckets, 0);
  for (int64_t i = 0; i < n; ++i) ++s.counts[(s.ranks[i] - lo) >> shift];
  int64_t below = 0;  // keys in the buckets before `cut`
  uint32_t cut = 0;
  while (below + s.counts[cut] < count) below += s.counts[cut++];
  s.keys.clear();
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bucket = (s.ranks[i] - lo) >> shift;
    if (bucket < cut)
      high[ids[i]] = 1;
    else if (bucket == cut)
      s.keys.push_back((static_cast<uint64_t>(s.ranks[i]) << 32) | static_cast<uint64_t>(i));
  }
  const int64_t need = count - below;  // 1..keys.size()
  if (need < static_cast<int64_t>(s.keys.size()))
    std::nth_element(s.keys.begin(), s.keys.begin() + need, s.keys.end());
  for (int64_t j = 0; j < need; ++j) high[ids[s.keys[j] & 0xFFFFFFFFU]] = 1;
}

// A width map must mark the layout's counts of high-width tiles (DataError).
void check_width_map(const uint8_t* header, const uint8_t* end, const TahLayout& l,
                     const std::string& spec) {
  const auto [high_full, high_tail] = count_high(header, end, l);
  if (high_full != l.high_full || high_tail != l.high_tail)
    throw DataError("message for '" + spec + "': the width map marks " + std::to_string(high_full) +
                    " + " + std::to_string(high_tail) + " high-width tiles, expected " +
                    std::to_string(l.high_full) + " + " + std::to_string(l.high_tail));
}

std::string bits_text(int centi) {
  std::string s = std::to_string(centi / 100);
  const int frac = centi % 100;
  if (frac == 0) return s;
  return frac % 10 == 0 ? s + "." + std::to_string(frac / 10)
                        : s + "." + (frac < 10 ? "0" : "") + std::to_string(frac);
}

// "3", "3.5", "3.75" -> hundredths; -1 when malformed.
int parse_centi(const std::string& v) {
  const size_t dot = v.find('.');
  const std::string whole = v.substr(0, dot);
  const std::string frac = dot == std::string::npos ? "" : v.substr(dot + 1);
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 2 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!digits(whole) || (dot != std::string::npos && !digits(frac))) return -1;
  int centi = std::stoi(whole) * 100;
  if (!frac.empty()) centi += std::stoi(frac) * (frac.size() == 1 ? 10 : 1);
  return centi;
}

}  // namespace

TahQuant::TahQuant(TahConfig config) : config_(config) {}

void TahQuant::fixed_widths(const TahLayout& l, std::vector<uint8_t>& high) const {
  high.assign(static_cast<size_t>(l.tiles()), 0);
  if (l.width_map || l.high_bits == l.low_bits) return;
  const int64_t per_token = l.full_per_token + (l.tail > 0 ? 1 : 0);
  for (int64_t tok = 0, t = 0; tok < l.tokens; ++tok)
    for (int64_t j = 0; j < per_token; ++j, ++t)
      high[t] = j < l.full_per_token
                    ? spread_high(tok * l.full_per_token + j, l.full_tiles, l.high_full)
                    : spread_high(tok, l.tail_tiles, l.high_tail);
}

TahLayout TahQuant::layout(const Shape& shape) const {
  TahLayout l;
  const int64_t n = shape_numel(shape);
  const int64_t g = config_.tile;
  l.channels = shape.empty() ? 1 : shape.back();
  l.tokens = l.channels > 0 ? n / l.channels : 0;
  l.full_per_token = l.channels / g;
  l.tail = l.channels % g;
  l.full_tiles = l.tokens * l.full_per_token;
  l.tail_tiles = l.tail > 0 ? l.tokens : 0;
  const int c = config_.bits_centi;
  l.low_bits = c / 100;
  l.high_bits = (c + 99) / 100;
  l.high_full = (c - 100 * l.low_bits) * l.full_tiles / 100;
  l.high_tail = (c - 100 * l.low_bits) * l.tail_tiles / 100;
  l.width_map = config_.adaptive && l.high_bits != l.low_bits;
  return l;
}

uint64_t TahQuant::payload_bytes(const Shape& shape) const {
  return sections_of(layout(shape), config_.tile).total;
}

void TahQuant::entropy_widths(const float* x, const TahLayout& l, bool* finite,
                              std::vector<uint8_t>& high) {
  // The entropy pass (one call per class of tiles) and the choice of
  // high-width tiles per class.
  const int64_t g = config_.tile, per_token = l.full_per_token + (l.tail > 0 ? 1 : 0);
  high.assign(static_cast<size_t>(l.tiles()), 0);
  WidthScratch& s = scratch_;
  for (int c = 0; c < 2; ++c) {
    s.ids[c].clear();
    s.at[c].clear();
  }
  for (int64_t tok = 0, t = 0; tok < l.tokens; ++tok)
    for (int64_t j = 0; j < per_token; ++j, ++t) {
      const int c = j < l.full_per_token ? 0 : 1;
      s.ids[c].push_back(t);
      s.at[c].push_back(x + tok * l.channels + j * g);
    }
  for (int c = 0; c < 2; ++c) {
    s.entropy.resize(s.ids[c].size());
    if (!tah::entropies(s.at[c].data(), c == 0 ? g : l.tail, static_cast<int64_t>(s.entropy.size()),
                        s.entropy.data()))
      *finite = false;
    mark_highest(s.ids[c], c == 0 ? l.high_full : l.high_tail, s.entropy, s.rank, high);
  }
}

void TahQuant::encode_payload(const float* x, const Shape& shape, uint8_t* out) {
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  const TahLayout l = layout(shape);
  // The entropy pass (fractional budgets) also says whether every element is
  // finite; otherwise each tile's statistics do. No separate pass looks.
  bool finite = true;
  if (l.width_map)
    entropy_widths(x, l, &finite, scratch_.high);
  else
    fixed_widths(l, scratch_.high);
  // A local pointer: the message's byte stores below may alias the member
  // vector, not this.
  const uint8_t* const high = scratch_.high.data();
  if (!finite) refuse_non_finite(spec(), x, n, first_non_finite(x, n));
  const Sections sec = sections_of(l, config_.tile);
  const int64_t g = config_.tile, per_token = l.full_per_token + (l.tail > 0 ? 1 : 0);
  // The bit fields are ORed into zeroed memory. The codes too, unless every
  // tile holds a multiple of 8 elements: then each starts on a byte and its
  // groups of 8 codes overwrite every byte of the section (write_codes).
  const bool whole_bytes = g % 8 == 0 && l.tail % 8 == 0;
  std::memset(out + sec.header, 0, (whole_bytes ? sec.codes : sec.total) - sec.header);

  uint8_t* header = out + sec.header;
  TileBatch batch(g, sec.width_bits, out, header, out + sec.codes);
  const auto refuse = [&] { refuse_non_finite(spec(), x, n, first_non_finite(x, n)); };
  uint64_t pos = 0;
  for (int64_t tok = 0, t = 0, full_index = 0; tok < l.tokens; ++tok)
    for (int64_t j = 0; j < per_token; ++j, ++t) {
      const bool full = j < l.full_per_token;
      const int64_t len = full ? g : l.tail;
      const int bits = high[t] ? l.high_bits : l.low_bits;
      if (high[t] && l.width_map) put_bits(header, static_cast<uint64_t>(t), 1, 1);
      if (!batch.add({x + tok * l.channels + j * g, len, t, full ? full_index++ : -1, pos, bits}))
        refuse();
      pos += static_cast<uint64_t>(len * bits);
    }
  if (!batch.flush()) refuse();
}

void TahQuant::decode_payload(const uint8_t* p, const Shape& shape, float* out) const {
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  const TahLayout l = layout(shape);
  const Sections sec = sections_of(l, config_.tile);
  const int64_t g = config_.tile, per_token = l.full_per_token + (l.tail > 0 ? 1 : 0);
  const int pivot_bits = log2_of(g);
  const uint8_t* header = p + sec.header;
  const uint8_t* stream = p + sec.codes;
  const auto bad = [&](const std::string& what) {
    throw DataError("message for '" + spec() + "': " + what);
  };
  DecodeScratch& scratch = decode_scratch();
  fixed_widths(l, scratch.spread);
  const uint8_t* const spread = scratch.spread.data();
  if (l.width_map) check_width_map(header, p + sec.total, l, spec());
  // Every tile's zero point and step first (F16C, 8 tiles at a time).
  scratch.zeros.resize(static_cast<size_t>(l.tiles()));
  scratch.steps.resize(scratch.zeros.size());
  float* const zeros = scratch.zeros.data();
  float* const steps = scratch.steps.data();
  tah::widen_scales(p, l.tiles(), zeros, steps);
  const uint8_t* end = p + sec.total;
  const tah::DequantizeGroups unpack[2] = {tah::dequantize_groups_avx2_for(l.low_bits),
                                           tah::dequantize_groups_avx2_for(l.high_bits)};
  // Two widths in data order (a width map): one kernel for both, so that no
  // branch or call follows a tile's width.
  const tah::DequantizeAny any =
      l.width_map && l.high_bits <= 4 ? tah::dequantize_any_avx2() : nullptr;
  uint64_t pos = 0;
  for (int64_t tok = 0, t = 0, full_index = 0; tok < l.tokens; ++tok)
    for (int64_t j = 0; j < per_token; ++j, ++t) {
      const bool full = j < l.full_per_token;
      const int64_t len = full ? g : l.tail;
      const bool high =
          l.width_map ? get_field(header, end, static_cast<uint64_t>(t), 1) != 0 : spread[t] != 0;
      const int bits = l.low_bits + static_cast<int>(high) * (l.high_bits - l.low_bits);
      const float zero = zeros[t], step = steps[t];
      if (!std::isfinite(zero) || !std::isfinite(step) || step < 0.0F)
        bad("tile " + std::to_string(t) + " has a non-finite zero point or a bad step");
      float* v = out + tok * l.channels + j * g;
      const uint8_t* in = stream + pos / 8;
      const bool whole_groups = pos % 8 == 0 && len % 8 == 0;
      if (whole_groups && any)
        any(in, len, end - in, zero, step, v, bits);
      else if (whole_groups && unpack[high])
        unpack[high](in, len, end - in, zero, step, v);
      else
        dequantize_tile(stream, pos, len, bits, zero, step, v);
      pos += static_cast<uint64_t>(len * bits);
      if (!full) continue;
      const uint64_t at = sec.width_bits + static_cast<uint64_t>(full_index++) * (1 + pivot_bits);
      const uint32_t field = get_field(header, end, at, 1 + pivot_bits);
      const uint32_t pivot = field >> 1;
      if ((field & 1) == 0) {
        if (pivot != 0) bad("tile " + std::to_string(t) + " is not rotated but names a pivot");
        continue;
      }
      tah_hadamard(v, g);
      std::swap(v[0], v[pivot]);
    }
}

std::string TahQuant::spec() const {
  std::string s = "tah:bits=" + bits_text(config_.bits_centi);
  if (config_.tile != kDefaultTile) s += ":tile=" + std::to_string(config_.tile);
  if (!config_.adaptive) s += ":fixed";
  return s;
}

CodecPlotFacts tah_plot_facts(const SpecStage& stage) {
  CodecPlotFacts f;
  for (const SpecArg& arg : stage.args)
    if (arg.key == "bits") {
      const int centi = parse_centi(arg.value);
      if (centi > 0) f.bits = centi / 100.0;
    }
  return f;
}

std::unique_ptr<Codec> make_tah_quant(const SpecStage& stage, const CodecBuildContext& ctx) {
  TahConfig c;
  StageOptions options(ctx);
  const SpecArg* bits = nullptr;
  for (const SpecArg& arg : stage.args) {
    const std::string& v = arg.value;
    if (arg.key == "bits") {
      options.claim("bit budget", arg);
      c.bits_centi = parse_centi(v);
      if (c.bits_centi < 100 || c.bits_centi > 800)
        stage_error(ctx, arg.pos,
                    "expected bits=B, the average bits per element, a number in 1..8 with at "
                    "most two decimals (3, 3.5, 3.75), got '" +
                        v + "'");
      bits = &arg;
    } else if (arg.key == "tile") {
      options.claim("tile size", arg);
      const bool digits =
          !v.empty() && v.size() <= 5 && v.find_first_not_of("0123456789") == std::string::npos;
      const int64_t g = digits ? std::stoll(v) : 0;
      if (g < kMinTile || g > kMaxTile || (g & (g - 1)) != 0)
        stage_error(ctx, arg.pos,
                    "expected tile=G, a power of two in 2..1024 (the Hadamard transform's "
                    "length), got '" +
                        v + "'");
      c.tile = g;
    } else if (arg.key.empty() && (v == "fixed" || v == "adaptive")) {
      options.claim("bit allocation", arg);
      c.adaptive = v == "adaptive";
    } else {
      stage_error(ctx, arg.pos,
                  "expected a tah option (bits=B, tile=G, fixed, adaptive), got '" +
                      (arg.key.empty() ? v : arg.key + "=" + v) + "'");
    }
  }
  if (!bits)
    stage_error(ctx, stage.pos + stage.name.size(),
                "expected ':bits=B' after 'tah' (B = average bits per element, e.g. tah:bits=3)");
  return std::make_unique<TahQuant>(c);
}

}  // namespace slowpipe::compressors
