// Codec inspection; see inspect.h.
#include "compressors/channels/inspect.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/errors.h"
#include "compressors/channels/factory.h"
#include "compressors/codecs/codec.h"

namespace slowpipe::compressors {

namespace {

using Clock = std::chrono::steady_clock;

// The fastest encode and decode seen so far of one codec on the tensor.
struct Fastest {
  double encode_s = 1e300, decode_s = 1e300;
  void time(Codec& codec, const float* x, const std::vector<int64_t>& shape, Message& msg,
            float* y) {
    const auto t0 = Clock::now();
    codec.encode_raw(x, shape, msg);
    const auto t1 = Clock::now();
    codec.decode_raw(msg.data(), msg.size(), shape, y);
    const auto t2 = Clock::now();
    encode_s = std::min(encode_s, std::chrono::duration<double>(t1 - t0).count());
    decode_s = std::min(decode_s, std::chrono::duration<double>(t2 - t1).count());
  }
};

at::Tensor synthetic(const std::vector<int64_t>& shape, const std::string& dist, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  if (dist == "normal") return at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat));
  if (dist == "laplace") {
    // Inverse CDF of the Laplace(0, 1) distribution. rand() may return 0, so u
    // may be -0.5 exactly, where log1p(-1) = -inf: the argument stops at
    // -1 + 2^-24 (the next value rand() can give), about 16.6 in magnitude.
    at::Tensor u = at::rand(shape, gen, at::TensorOptions().dtype(at::kFloat)) - 0.5;
    return -at::sign(u) * at::log1p(at::clamp_min(-2 * at::abs(u), -1.0 + std::ldexp(1.0, -24)));
  }
  throw UsageError("--dist: expected normal or laplace (from-run is not implemented), got '" +
                   dist + "'");
}

void print_baseline(const std::string& name, const Fastest& spec, const Fastest& base, int repeat,
                    std::ostream& os) {
  os << fmt::format("against       {}: encode {:.3f} ms, decode {:.3f} ms\n", name,
                    base.encode_s * 1e3, base.decode_s * 1e3);
  os << fmt::format(
      "relative      encode {:.2f}x, decode {:.2f}x, round trip {:.2f}x {}'s   (fastest of {} "
      "interleaved runs each)\n",
      spec.encode_s / base.encode_s, spec.decode_s / base.decode_s,
      (spec.encode_s + spec.decode_s) / (base.encode_s + base.decode_s), name, repeat);
}

}  // namespace

void run_codec_inspection(const std::string& spec, const std::vector<int64_t>& shape,
                          const std::string& dist, uint64_t seed, std::ostream& os,
                          const InspectOptions& options) {
  if (options.repeat < 1 || options.repeat > 1000)
    throw UsageError("--repeat: expected a count of runs in 1..1000, got " +
                     std::to_string(options.repeat));
  const ChannelSpec channel = ChannelSpec::parse(spec, /*backward=*/false);
  std::unique_ptr<ChannelSpec> against;
  if (!options.against.empty())
    against = std::make_unique<ChannelSpec>(ChannelSpec::parse(options.against, false));
  const SpecTree& tree = channel.tree();
  check_inspection_shape(shape);
  const at::Tensor x = synthetic(shape, dist, seed);
  std::unique_ptr<Codec> codec = make_codec(tree, seed);
  std::unique_ptr<Codec> base = against ? make_codec(against->tree(), seed) : nullptr;
  const float* xp = x.data_ptr<float>();
  // The baseline decodes into the same output as the spec: the runs share
  // one working set, about that of the spec alone (a second output tensor
  // pushed the input out of a shared cache and slowed both).
  Message msg, base_msg;
  at::Tensor y = at::empty_like(x);
  Fastest fastest, base_fastest;
  for (int rep = 0; rep < options.repeat; ++rep) {
    if (base && rep % 2 == 1) base_fastest.time(*base, xp, shape, base_msg, y.data_ptr<float>());
    fastest.time(*codec, xp, shape, msg, y.data_ptr<float>());
    if (base && rep % 2 == 0) base_fastest.time(*base, xp, shape, base_msg, y.data_ptr<float>());
  }
  if (base) codec->decode_raw(msg.data(), msg.size(), shape, y.data_ptr<float>());  // the spec's
  const double fp32_bytes = 4.0 * static_cast<double>(x.numel());
  const double rel = (x - y).norm().item<double>() / std::max(x.norm().item<double>(), 1e-300);
  std::string shape_text;
  for (int64_t d : shape) shape_text += (shape_text.empty() ? "" : ",") + std::to_string(d);
  os << fmt::format(
      "spec          {}{}\n", canonical_spec(channel),
      is_plain_scheme(tree.scheme) ? "" : "   (inspecting its codec " + codec->spec() + ")");
  os << fmt::format("tensor        [{}] {} ({} elements, fp32 {} bytes)\n", shape_text, dist,
                    x.numel(), static_cast<uint64_t>(fp32_bytes));
  os << fmt::format("message       {} bytes\n", msg.size());
  os << fmt::format("ratio         {:.3f}x smaller than fp32\n",
                    fp32_bytes / static_cast<double>(msg.size()));
  os << fmt::format("rel. error    {:.6f}   (||x - x_hat|| / ||x||)\n", rel);
  os << fmt::format("encode        {:.3f} GB/s of fp32 input  ({:.3f} ms)\n",
                    fp32_bytes / fastest.encode_s / 1e9, fastest.encode_s * 1e3);
  os << fmt::format("decode        {:.3f} GB/s of fp32 output ({:.3f} ms)\n",
                    fp32_bytes / fastest.decode_s / 1e9, fastest.decode_s * 1e3);
  if (base) print_baseline(canonical_spec(*against), fastest, base_fastest, options.repeat, os);
}

}  // namespace slowpipe::compressors
