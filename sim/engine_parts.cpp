// Shared pieces of the engines (engine_parts.h).
#include "sim/engine_parts.h"

#include <ATen/ATen.h>
#include <dlfcn.h>

#include <ctime>

namespace slowpipe::sim {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double thread_cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void add_transfer(ChannelSummary& sum, const compressors::TransferStats& st) {
  sum.bytes += st.bytes;
  sum.rel_error += st.rel_error;
  sum.delta_norm += st.delta_norm;
  sum.encode_s += st.encode_s;
  sum.decode_s += st.decode_s;
  sum.transfers += 1;
}

compressors::ChannelContext channel_context(const EngineSetup& setup, const std::string& name,
                                            uint64_t salt) {
  compressors::ChannelContext ctx;
  ctx.name = name;
  ctx.num_samples = setup.shard_samples > 0 ? setup.shard_samples : setup.train_samples;
  ctx.warmup_epochs = setup.compress.aq_warmup_epochs;
  ctx.plain_warmup_epochs = setup.compress.warmup_epochs;  // boundaries only (make_boundary)
  ctx.aq_store = setup.compress.aq_store;
  ctx.aq_dir = setup.compress.aq_dir;
  ctx.seed = setup.seed * 1000003ULL + salt;  // distinct streams per channel
  return ctx;
}

namespace {

netmodel::TraceOp op_at(netmodel::OpKind kind, const OpSite& site) {
  netmodel::TraceOp op;
  op.kind = kind;
  op.device = site.device;
  op.chunk = site.chunk;
  op.peer = site.peer;
  op.microbatch = site.microbatch;
  op.replica = site.replica;
  return op;
}

}  // namespace

netmodel::TraceOp compute_op(netmodel::OpKind kind, const OpSite& site, const OpTimer& timer,
                             double flops) {
  netmodel::TraceOp op = op_at(kind, site);
  op.compute_s = timer.wall_s();
  op.thread_cpu_s = timer.cpu_s();
  op.flops = flops;
  return op;
}

netmodel::TraceOp message_op(netmodel::OpKind kind, const OpSite& site, const at::Tensor& sent,
                             const compressors::TransferStats& st, ChannelSummary& sum) {
  add_transfer(sum, st);
  netmodel::TraceOp op = op_at(kind, site);
  op.raw_bytes = static_cast<uint64_t>(sent.numel()) * sizeof(float);
  op.encode_s = st.encode_s;
  op.decode_s = st.decode_s;
  op.bytes = st.bytes;
  return op;
}

namespace {
int block_kernels(const models::Block& block) {
  int kernels = 0;
  for (const auto& m : block.modules(/*include_self=*/false)) {
    if (m->children().empty() && !m->parameters(/*recurse=*/false).empty()) kernels += 2;
  }
  return kernels;
}
}  // namespace

int forward_kernels(const models::Model& model, size_t begin, size_t end) {
  int kernels = 0;
  for (size_t b = begin; b < end; ++b) kernels += block_kernels(*model.blocks[b]);
  return kernels;
}

netmodel::OpWork chunk_work(const models::Model& model, size_t begin, size_t end, int64_t samples) {
  netmodel::OpWork work;
  for (size_t b = begin; b < end; ++b) {
    const models::Block& block = *model.blocks[b];
    if (block.add_forward_work(work, samples)) continue;
    work.other_flops += block.forward_flops_per_sample() * static_cast<double>(samples);
    work.other_kernels += block_kernels(block);
  }
  return work;
}

bool all_finite(const at::Tensor& t) {
  return t.isfinite().all().item<bool>();
}

void finish_means(std::vector<ChannelSummary>& v) {
  for (auto& s : v) {
    if (s.transfers > 0) {
      s.rel_error /= s.transfers;
      s.delta_norm /= s.transfers;
    }
  }
}

std::pair<int64_t, int64_t> shard_range(int64_t n, int d, int j) {
  const int64_t len = (n + d - 1) / d;
  const int64_t begin = std::min(n, j * len);
  return {begin, std::min(n, begin + len) - begin};
}

at::Tensor flat_gradient(const std::vector<at::Tensor>& params, int stage, int replica) {
  std::vector<at::Tensor> flat;
  flat.reserve(params.size());
  for (const auto& p : params)
    flat.push_back(p.grad().defined() ? p.grad().reshape({-1})
                                      : at::zeros({p.numel()}, p.options()));
  at::Tensor g = at::cat(flat).unsqueeze(0);  // [1, N]: one "sample"
  if (!all_finite(g))
    throw NonFiniteError("non-finite parameter gradient of stage " + std::to_string(stage) +
                         " on replica " + std::to_string(replica) +
                         ", before the data-parallel gradient exchange");
  return g;
}

void set_gradients(const std::vector<at::Tensor>& params, const at::Tensor& flat) {
  const at::Tensor all = flat.reshape({-1});
  int64_t offset = 0;
  for (const auto& p : params) {
    const at::Tensor part = all.narrow(0, offset, p.numel()).view(p.sizes());
    if (p.grad().defined()) {
      p.mutable_grad().copy_(part);
    } else {
      p.mutable_grad() = part.clone();
    }
    offset += p.numel();
  }
}

int blas_threads() {
  using BlasGetThreads = int (*)();
  auto* get = reinterpret_cast<BlasGetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get ? get() : 1;
}

std::string where(int64_t step, int replica, int microbatch) {
  return "step " + std::to_string(step + 1) + " (replica " + std::to_string(replica) +
         ", micro-batch " + std::to_string(microbatch) + ")";
}

}  // namespace slowpipe::sim
