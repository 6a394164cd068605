// Fast paths against libtorch, single thread (at::set_num_threads(1)), on 2 MiB
// and 64 MiB fp32 tensors shaped [rows, C] with C = 1024 channels:
//   - quantize + pack (per-channel max-abs, AQ-SGD's quantizer) at 2/4/8 bits,
//     against the same computation composed of libtorch ops (abs/amax, div,
//     round, clamp, shift and bitwise-or packing);
//   - unpack + dequantize, same;
//   - TAH-Quant (tah:bits=B, tiles of 64 channels) encode and decode on the same
//     tensors, beside q4: B = 3 (one width) and 3.5 (entropy-chosen widths), on
//     the Gaussian input and on one with an outlier channel in every tile (every
//     tile then takes the pivot swap and Hadamard rotation, the worst case);
//   - TopK per row at K = 10% and 30% (rows of 64 Ki elements, one per sample),
//     against torch::topk (values and indices);
//   - the whole TopK codec, encode + decode at K = 10% (selection, index coding,
//     gathering and coding the values, then decoding and scattering them), with
//     fp32 and q8 values, on the same tensors seen as [samples, 64, 1024] (rows
//     of 64 Ki) and on a GPT-2 XL activation [1, 1024, 1600] (one row of 1.6 Mi);
//     counters: message bytes and the ratio fp32 bytes / message bytes;
//   - the index coding alone (encode, decode) of those TopK selections at K = 1,
//     10 and 30% (items: kept indices);
//   - QSGD (qsgd:s=4) encode and decode beside q4 on a GPT-2 XL activation;
//   - the round trip of several codecs on a batch-8 GPT-2 XL activation
//     [8, 1024, 1600] (52 MB), with the page faults per round trip as a
//     counter (getrusage): a codec that keeps its buffers between calls has
//     none; one that allocates large buffers per call faults them in anew.
// SLOWPIPE_SIMD=avx2 caps the run-time-dispatched kernels (TopK sweeps, QSGD,
// the channel statistics) to what an AVX2-only host runs (quant_simd.h).
// Throughput is reported as fp32 input bytes per second (SetBytesProcessed).
// Every benchmark makes one untimed call first. libtorch's temporaries come from
// malloc; glibc returns large blocks to the system, so on a VM with costly page
// faults the torch side is much slower than its arithmetic. scripts/bench.sh
// also runs the file with glibc told to keep freed memory (MALLOC_MMAP_MAX_=0,
// MALLOC_TRIM_THRESHOLD_), the arithmetic-only comparison.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include <iterator>

#include "compressors/channels/factory.h"
#include "compressors/codecs/index_coding.h"
#include "compressors/codecs/quantizer.h"
#include "compressors/codecs/topk_select.h"

namespace sc = slowpipe::compressors;

namespace {

constexpr int64_t kChannels = 1024;
int64_t numel_of(int64_t mib) {
  return mib * 1024 * 1024 / 4;
}

at::Tensor input(int64_t mib) {
  at::manual_seed(0);
  return at::randn({numel_of(mib) / kChannels, kChannels});
}

std::unique_ptr<sc::Codec> quantizer(int bits) {
  return sc::make_codec("q" + std::to_string(bits));
}

// ---- libtorch compositions ----

// Codes and scales of per-channel max-abs quantization, then packing of
// 8/bits codes per byte with shifts and ors.
std::pair<at::Tensor, at::Tensor> torch_quantize_pack(const at::Tensor& x, int bits) {
  const double qmax = bits == 1 ? 1 : (1 << (bits - 1)) - 1;
  at::Tensor scale = x.abs().amax(0).to(at::kHalf);  // [C] fp16 scales
  at::Tensor step = scale.to(at::kFloat) / qmax;
  at::Tensor q = (x / step).round().clamp(-qmax, qmax) + qmax;  // [R, C] codes
  at::Tensor codes = q.to(at::kByte).flatten();
  const int per_byte = 8 / bits;
  at::Tensor grouped = codes.view({-1, per_byte});
  at::Tensor packed = grouped.select(1, 0).clone();
  for (int j = 1; j < per_byte; ++j) packed.bitwise_or_(grouped.select(1, j).__lshift__(bits * j));
  return {packed, scale};
}

at::Tensor torch_unpack_dequantize(const at::Tensor& packed, const at::Tensor& scale, int bits,
                                   int64_t rows) {
  const double qmax = bits == 1 ? 1 : (1 << (bits - 1)) - 1;
  const int per_byte = 8 / bits;
  std::vector<at::Tensor> parts;
  parts.reserve(per_byte);
  for (int j = 0; j < per_byte; ++j)
    parts.push_back(packed.__rshift__(bits * j).bitwise_and((1 << bits) - 1));
  at::Tensor codes = at::stack(parts, 1).view({rows, kChannels}).to(at::kFloat);
  return (codes - qmax) * (scale.to(at::kFloat) / qmax);
}

// ---- benchmarks ----

void BM_QuantizePack_Slowpipe(benchmark::State& st) {
  at::set_num_threads(1);
  at::Tensor x = input(st.range(0));
  auto codec = quantizer(static_cast<int>(st.range(1)));
  sc::Shape shape = {x.size(0), x.size(1)};
  sc::Message msg;
  codec->encode_raw(x.data_ptr<float>(), shape, msg);  // warm-up, untimed
  for (auto _ : st) {
    codec->encode_raw(x.data_ptr<float>(), shape, msg);
    benchmark::DoNotOptimize(msg.data());
  }
  st.SetBytesProcessed(st.iterations() * x.numel() * 4);
}

void BM_QuantizePack_Torch(benchmark::State& st) {
  at::set_num_threads(1);
  at::Tensor x = input(st.range(0));
  torch_quantize_pack(x, static_cast<int>(st.range(1)));  // warm-up, untimed
  for (auto _ : st) {
    auto r = torch_quantize_pack(x, static_cast<int>(st.range(1)));
    benchmark::DoNotOptimize(r.first.data_ptr());
  }
  st.SetBytesProcessed(st.iterations() * x.numel() * 4);
}

void BM_UnpackDequantize_Slowpipe(benchmark::State& st) {
  at::set_num_threads(1);
  at::Tensor x = input(st.range(0));
  auto codec = quantizer(static_cast<int>(st.range(1)));
  sc::Shape shape = {x.size(0), x.size(1)};
  sc::Message msg;
  codec->encode_raw(x.data_ptr<float>(), shape, msg);
  at::Tensor y = at::empty_like(x);
  codec->decode_raw(msg.data(), msg.size(), shape, y.data_ptr<float>());  // warm-up, untimed
  for (auto _ : st) {
    codec->decode_raw(msg.data(), msg.size(), shape, y.data_ptr<float>());
    benchmark::DoNotOptimize(y.data_ptr());
  }
  st.SetBytesProcessed(st.iterations() * x.numel() * 4);
}

void BM_UnpackDequantize_Torch(benchmark::State& st) {
  at::set_num_threads(1);
  at::Tensor x = input(st.range(0));
  const int bits = static_cast<int>(st.range(1));
  auto packed = torch_quantize_pack(x, bits);
  torch_unpack_dequantize(packed.first, packed.second, bits, x.size(0));  // warm-up, untimed
  for (auto _ : st) {
    at::Tensor y = torch_unpack_dequantize(packed.first, packed.second, bits, x.size(0));
    benchmark::DoNotOptimize(y.data_ptr());
  }
  st.SetBytesProcessed(st.iterations() * x.numel() * 4);
}

// TAH-Quant: range(1) = 30 for tah:bits=3, 35 for tah:bits=3.5; range(2) = 1
// multiplies channel 5 of every 64 by 30 (every tile rotated).
std::unique_ptr<sc::Codec> tah_codec(benchmark::State& st) {
  return sc::make_codec(st.range(1) == 30 ? "tah:bits=3" : "tah:bits=3.5");
}
at::Tensor tah_input(benchmark::State& st) {
  at::Tensor x = input(st.range(0));
  if (st.range(2) == 1) x.narrow(1, 5, kChannels - 5).slice(1, 0, kChannels - 5, 64).mul_(30);
  return x;
}

void BM_TahQuant_Encode(benchmark::State& st) {
  at::Tensor x = tah_input(st);
  auto codec = tah_codec(st);
  sc::Shape shape = {x.size(0), x.size(1)};
  sc::Message msg;
  codec->encode_raw(x.data_ptr<float>(), shape, msg);  // warm-up, untimed
  for (auto _ : st) {
    codec->encode_raw(x.data_ptr<float>(), shape, msg);
    benchmark::DoNotOptimize(msg.data());
  }
  st.counters["bits_per_element"] = 8.0 * static_cast<double>(msg.size()) / x.numel();
  st.SetBytesProcessed(st.iterations() * x.numel() * 4);
}

void BM_TahQuant_Decode(benchmark::State& st) {
  at::Tensor x = tah_input(st);
  auto codec = tah_codec(st);
  sc::Shape shape = {x.size(0), x.size(1)};
  sc::Message msg;
  codec->encode_raw(x.data_ptr<float>(), shape, msg);
  at::Tensor y = at::empty_like(x);
  codec->decode_raw(msg.data(), msg.size(), shape, y.data_ptr<float>());  // warm-up, untimed
  for (auto _ : st) {
    codec->decode_raw(msg.data(), msg.size(), shape, y.data_ptr<float>());
    benchmark::DoNotOptimize(y.data_ptr());
  }
  st.SetBytesProcessed(st.iterations() * x.numel() * 4);
}

// TopK: rows of 64 Ki elements (per sample), K = range(1) percent.
constexpr int64_t kRowLen = int64_t{64} * 1024;

void BM_TopkRow_Slowpipe(benchmark::State& st) {
  at::set_num_threads(1);
  at::Tensor x = input(st.range(0)).view({-1, kRowLen});
  const int64_t rows = x.size(0);
  const int64_t k = sc::kept_count(static_cast<double>(st.range(1)) / 100.0, kRowLen);
  std::vector<int32_t> idx(rows * k);
  sc::TopkSelector selector;
  for (int64_t r = 0; r < rows; ++r)  // warm-up, untimed
    selector.select(x.data_ptr<float>() + r * kRowLen, kRowLen, k, idx.data() + r * k);
  for (auto _ : st) {
    for (int64_t r = 0; r < rows; ++r)
      selector.select(x.data_ptr<float>() + r * kRowLen, kRowLen, k, idx.data() + r * k);
    benchmark::DoNotOptimize(idx.data());
  }
  st.counters["fallbacks"] = static_cast<double>(selector.fallbacks());
  st.SetBytesProcessed(st.iterations() * x.numel() * 4);
}

void BM_TopkRow_Torch(benchmark::State& st) {
  at::set_num_threads(1);
  at::Tensor x = input(st.range(0)).view({-1, kRowLen});
  const int64_t k = sc::kept_count(static_cast<double>(st.range(1)) / 100.0, kRowLen);
  torch::topk(x.abs(), k, 1, true, false);  // warm-up, untimed
  for (auto _ : st) {
    auto r = torch::topk(x.abs(), k, /*dim=*/1, /*largest=*/true, /*sorted=*/false);
    benchmark::DoNotOptimize(std::get<1>(r).data_ptr());
  }
  st.SetBytesProcessed(st.iterations() * x.numel() * 4);
}

// Index coding alone (index_coding.h) of the TopK selection of a 2 MiB tensor
// with rows of 64 Ki, K = range(0) percent; items = kept indices.
void index_coding_bench(benchmark::State& st, bool decode) {
  at::Tensor x = input(2).view({-1, kRowLen});
  const int64_t rows = x.size(0);
  const int64_t k = sc::kept_count(static_cast<double>(st.range(0)) / 100.0, kRowLen);
  std::vector<int32_t> idx(rows * k), back(rows * k);
  sc::TopkSelector selector;
  for (int64_t r = 0; r < rows; ++r)
    selector.select(x.data_ptr<float>() + r * kRowLen, kRowLen, k, idx.data() + r * k);
  std::vector<uint8_t> bytes(sc::index_section_bytes(rows, kRowLen, k));
  sc::encode_indices(idx.data(), rows, kRowLen, k, bytes.data());  // warm-up, untimed
  sc::decode_indices(bytes.data(), rows, kRowLen, k, back.data());
  for (auto _ : st) {
    if (decode)
      sc::decode_indices(bytes.data(), rows, kRowLen, k, back.data());
    else
      sc::encode_indices(idx.data(), rows, kRowLen, k, bytes.data());
    benchmark::ClobberMemory();
  }
  st.counters["bits_per_index"] =
      8.0 * static_cast<double>(bytes.size()) / static_cast<double>(rows * k);
  st.SetItemsProcessed(st.iterations() * rows * k);
}
void BM_IndexEncode(benchmark::State& st) {
  index_coding_bench(st, false);
}
void BM_IndexDecode(benchmark::State& st) {
  index_coding_bench(st, true);
}

// The TopK codec at K = 10%, encode then decode, on `shape`; q8: the kept values
// as "topk:0.1+q8" (else fp32, "topk:0.1").
void topk_codec_round_trip(benchmark::State& st, const sc::Shape& shape, bool q8) {
  at::set_num_threads(1);
  at::manual_seed(0);
  at::Tensor x = at::randn(shape);
  auto codec = sc::make_codec(q8 ? "topk:0.1+q8" : "topk:0.1");
  sc::Message msg;
  at::Tensor y = at::empty_like(x);
  codec->encode_raw(x.data_ptr<float>(), shape, msg);  // warm-up, untimed
  codec->decode_raw(msg.data(), msg.size(), shape, y.data_ptr<float>());
  for (auto _ : st) {
    codec->encode_raw(x.data_ptr<float>(), shape, msg);
    codec->decode_raw(msg.data(), msg.size(), shape, y.data_ptr<float>());
    benchmark::DoNotOptimize(y.data_ptr());
  }
  st.counters["msg_bytes"] = static_cast<double>(msg.size());
  st.counters["fp32_ratio"] = static_cast<double>(x.numel() * 4) / static_cast<double>(msg.size());
  st.SetBytesProcessed(st.iterations() * x.numel() * 4);
}
// range(0) MiB seen as [samples, 64, 1024] (rows of 64 Ki); range(1): q8 values.
void BM_TopkCodec_EncodeDecode(benchmark::State& st) {
  topk_codec_round_trip(st, {numel_of(st.range(0)) / kRowLen, 64, 1024}, st.range(1) != 0);
}
// A GPT-2 XL activation [1, 1024, 1600]: one row of 1.6 Mi elements.
void BM_TopkCodec_EncodeDecode_Gpt2xl(benchmark::State& st) {
  topk_codec_round_trip(st, {1, 1024, 1600}, st.range(0) != 0);
}

// QSGD (s = 4, buckets of 128) against q4 in the same run, on a GPT-2 XL
// activation [1, 1024, 1600]: range(0) 0 qsgd, 1 q4; range(1) 0 encode, 1 decode.
void BM_QsgdCodec_Gpt2xl(benchmark::State& st) {
  at::set_num_threads(1);
  at::manual_seed(0);
  const sc::Shape shape{1, 1024, 1600};
  at::Tensor x = at::randn(shape);
  auto codec = sc::make_codec(st.range(0) == 0 ? "qsgd:s=4" : "q4");
  sc::Message msg;
  at::Tensor y = at::empty_like(x);
  codec->encode_raw(x.data_ptr<float>(), shape, msg);  // warm-up, untimed
  for (auto _ : st) {
    if (st.range(1) == 0)
      codec->encode_raw(x.data_ptr<float>(), shape, msg);
    else
      codec->decode_raw(msg.data(), msg.size(), shape, y.data_ptr<float>());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(st.iterations() * x.numel() * 4);
}

// The round trip (encode + decode) on a batch-8 GPT-2 XL activation, range(0)
// indexing kRoundTripSpecs; counter page_faults: minor page faults per round
// trip after the untimed first one. glibc's mmap threshold is fixed at its
// default (128 KiB) first: left dynamic, it rises after the first large free
// and a tight loop reuses the blocks, hiding buffers made anew at every call
// (which a training step, among torch's own allocations, does fault in). It
// stays fixed for the rest of the process, so this family is registered last.
const char* const kRoundTripSpecs[] = {"q4",           "q4:group=64", "qsgd:s=4", "tah:bits=3",
                                       "tah:bits=3.5", "topk:0.1",    "colk:0.25"};
int64_t minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}
void BM_CodecRoundTrip_Batch8(benchmark::State& st) {
  at::set_num_threads(1);
  at::manual_seed(0);
  const sc::Shape shape{8, 1024, 1600};
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  at::Tensor x = at::randn(shape);
  auto codec = sc::make_codec(kRoundTripSpecs[st.range(0)]);
  st.SetLabel(kRoundTripSpecs[st.range(0)]);
  sc::Message msg;
  at::Tensor y = at::empty_like(x);
  codec->encode_raw(x.data_ptr<float>(), shape, msg);  // warm-up, untimed
  codec->decode_raw(msg.data(), msg.size(), shape, y.data_ptr<float>());
  const int64_t faults0 = minor_faults();
  for (auto _ : st) {
    codec->encode_raw(x.data_ptr<float>(), shape, msg);
    codec->decode_raw(msg.data(), msg.size(), shape, y.data_ptr<float>());
    benchmark::ClobberMemory();
  }
  st.counters["page_faults"] = benchmark::Counter(static_cast<double>(minor_faults() - faults0) /
                                                  static_cast<double>(st.iterations()));
  st.SetBytesProcessed(st.iterations() * x.numel() * 4);
}

// ---- one channel transfer of the demo's activation ----

constexpr int64_t kDemoSamples = 1024, kDemoMicro = 4;

// range(0): 0 memory, 1 disk store; range(1): 0 warm-up (epoch 0), 1 steady
// state (epoch 1 after one pass: every sample seen). Cycles over the samples,
// kDemoMicro ids per transfer, so rows come and go from the cache as in training.
void channel_transfer(benchmark::State& st, const std::string& spec) {
  at::set_num_threads(1);
  sc::ChannelContext ctx;
  ctx.name = "bench.aq";
  ctx.num_samples = kDemoSamples;
  ctx.aq_store = st.range(0) == 1 ? sc::AqStore::kDisk : sc::AqStore::kMemory;
  auto ch = sc::make_channel(sc::ChannelSpec::parse(spec, /*backward=*/false), ctx);
  at::manual_seed(0);
  const at::Tensor base = at::randn({kDemoMicro, 64, 128});
  const at::Tensor ids_all = at::randperm(kDemoSamples, at::kLong);
  auto ids_at = [&](int64_t t) {
    return ids_all.narrow(0, (t * kDemoMicro) % kDemoSamples, kDemoMicro);
  };
  const int64_t per_epoch = kDemoSamples / kDemoMicro;
  for (int64_t t = 0; t < per_epoch; ++t) ch->transfer(base, ids_at(t), nullptr);  // untimed
  if (st.range(1) == 1) ch->set_epoch(1);
  int64_t t = 0;
  for (auto _ : st) {
    at::Tensor y = ch->transfer(base, ids_at(t++), nullptr);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  st.SetBytesProcessed(st.iterations() * base.numel() * 4);
}
void BM_Transfer_AqQ2(benchmark::State& st) {
  channel_transfer(st, "aq(q2)");
}
void BM_Transfer_Q2(benchmark::State& st) {
  channel_transfer(st, "q2");
}
void BM_Transfer_None(benchmark::State& st) {
  channel_transfer(st, "none");
}
void aq_args(benchmark::internal::Benchmark* b) {
  for (int64_t disk : {0, 1})
    for (int64_t steady : {0, 1}) b->Args({disk, steady});
  b->ArgNames({"disk", "steady"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}

void quant_args(benchmark::internal::Benchmark* b) {
  for (int64_t mib : {2, 64})
    for (int64_t bits : {2, 4, 8}) b->Args({mib, bits});
  b->ArgNames({"MiB", "bits"})->Unit(benchmark::kMillisecond)->UseRealTime();
}
void tah_args(benchmark::internal::Benchmark* b) {
  for (int64_t bits10 : {30, 35})
    for (int64_t outliers : {0, 1}) b->Args({2, bits10, outliers});
  b->Args({64, 35, 0});
  b->ArgNames({"MiB", "bits10", "outliers"})->Unit(benchmark::kMillisecond)->UseRealTime();
}
void topk_args(benchmark::internal::Benchmark* b) {
  for (int64_t mib : {2, 64})
    for (int64_t pct : {10, 30}) b->Args({mib, pct});
  b->ArgNames({"MiB", "Kpct"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

void index_args(benchmark::internal::Benchmark* b) {
  for (int64_t pct : {1, 10, 30}) b->Arg(pct);
  b->ArgName("Kpct")->Unit(benchmark::kMicrosecond)->UseRealTime();
}
void topk_codec_args(benchmark::internal::Benchmark* b) {
  for (int64_t mib : {2, 64})
    for (int64_t q8 : {0, 1}) b->Args({mib, q8});
  b->ArgNames({"MiB", "q8"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK(BM_QuantizePack_Slowpipe)->Apply(quant_args);
BENCHMARK(BM_QuantizePack_Torch)->Apply(quant_args);
BENCHMARK(BM_UnpackDequantize_Slowpipe)->Apply(quant_args);
BENCHMARK(BM_UnpackDequantize_Torch)->Apply(quant_args);
BENCHMARK(BM_TahQuant_Encode)->Apply(tah_args);
BENCHMARK(BM_TahQuant_Decode)->Apply(tah_args);
BENCHMARK(BM_TopkRow_Slowpipe)->Apply(topk_args);
BENCHMARK(BM_TopkRow_Torch)->Apply(topk_args);
BENCHMARK(BM_IndexEncode)->Apply(index_args);
BENCHMARK(BM_IndexDecode)->Apply(index_args);
BENCHMARK(BM_TopkCodec_EncodeDecode)->Apply(topk_codec_args);
BENCHMARK(BM_TopkCodec_EncodeDecode_Gpt2xl)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("q8")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK(BM_QsgdCodec_Gpt2xl)
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    ->ArgNames({"q4", "decode"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK(BM_Transfer_AqQ2)->Apply(aq_args);
BENCHMARK(BM_Transfer_Q2)->Args({0, 1})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Transfer_None)->Args({0, 1})->Unit(benchmark::kMicrosecond)->UseRealTime();

BENCHMARK(BM_CodecRoundTrip_Batch8)
    ->DenseRange(0, static_cast<int>(std::size(kRoundTripSpecs)) - 1)
    ->ArgName("spec")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
