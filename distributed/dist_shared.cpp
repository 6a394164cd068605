// A learned projection across process boundaries (dist_engine.h, SharedCut):
// the gradient of U and the anchors at cut b comes from both chunk b (the
// sender's reduce) and chunk b + 1 (the receiver's expand). One process adds
// each backward's contribution into the same .grad as the ops run, in
// netmodel::single_process_order; here each op's contribution is taken out of
// .grad on whichever rank runs it, the reader sends its own to the owner, and
// the owner adds them all in that order: the sum one process computes, bit for
// bit. The owner steps them (they are chunk b's parameters) and sends the
// values to the reader before each step and each evaluation.
// docs/distributed.md, "Learned projections".
#include <torch/torch.h>

#include <algorithm>
#include <cstring>

#include "common/errors.h"
#include "distributed/dist_engine.h"
#include "models/torch/model.h"

namespace slowpipe::dist {
namespace {

// Tags of cut b's messages: the reader's contributions, the owner's values.
constexpr int kSharedGradTag = 1300000;
constexpr int kSharedValueTag = 1400000;

void put(Bytes& out, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}

// `t` (fp32) as raw bytes appended to `out`.
void put_tensor(Bytes& out, const at::Tensor& t) {
  const at::Tensor c = t.detach().to(at::kCPU, at::kFloat).contiguous();
  put(out, c.data_ptr<float>(), static_cast<size_t>(c.nbytes()));
}

// The next tensor shaped like `like` from `in` at `pos`, on like's device.
at::Tensor get_tensor(const Bytes& in, size_t& pos, const at::Tensor& like) {
  at::Tensor t = at::empty(like.sizes(), at::kFloat);
  const auto n = static_cast<size_t>(t.nbytes());
  if (pos + n > in.size()) throw DataError("dist: malformed projection message");
  std::memcpy(t.data_ptr<float>(), in.data() + pos, n);
  pos += n;
  return t.to(like.device());
}

}  // namespace

void DistEngine::build_shared_cuts() {
  for (int b = 0; b + 1 < chunks(); ++b) {
    const models::BoundaryMap* map = models::boundary_at(model_, cuts_[static_cast<size_t>(b) + 1]);
    if (map == nullptr || !map->shared_parameters()) continue;
    SharedCut cut;
    cut.boundary = b;
    cut.owner = layout_.rank(replica_, device_of_[static_cast<size_t>(b)]);
    cut.reader = layout_.rank(replica_, device_of_[static_cast<size_t>(b) + 1]);
    if (cut.owner != comm_->rank() && cut.reader != comm_->rank()) continue;
    for (const auto& p : map->parameters())
      if (p.requires_grad()) cut.params.push_back(p);
    shared_.push_back(std::move(cut));
  }
}

void DistEngine::run_capturing(const netmodel::ScheduledOp& op, const std::function<void()>& run) {
  std::vector<SharedCut*> reading;
  for (SharedCut& s : shared_)
    if (op.chunk == s.boundary || op.chunk == s.boundary + 1) reading.push_back(&s);
  if (reading.empty()) return run();
  // What .grad held before the op (the owner's zeroed gradient) goes back after it.
  std::vector<std::vector<at::Tensor>> held;
  for (SharedCut* s : reading) {
    held.emplace_back();
    for (auto& p : s->params) {
      held.back().push_back(p.grad());
      p.mutable_grad() = at::Tensor();
    }
  }
  run();
  const auto place =
      static_cast<int64_t>(std::find(order_.begin(), order_.end(), op) - order_.begin());
  for (size_t i = 0; i < reading.size(); ++i) {
    std::vector<at::Tensor> got;
    bool any = false;
    for (size_t j = 0; j < reading[i]->params.size(); ++j) {
      at::Tensor& g = reading[i]->params[j].mutable_grad();
      any = any || g.defined();
      got.push_back(g);
      g = held[i][j];
    }
    if (any) reading[i]->taken.emplace_back(place, std::move(got));
  }
}

void DistEngine::add_shared_gradients(RankReport& rep) {
  const int me = comm_->rank();
  for (SharedCut& s : shared_) {
    if (s.owner == me || s.reader != me) continue;
    // [place (int64), then per parameter: defined (uint8), values (fp32)] per op
    Bytes msg;
    for (const auto& [place, grads] : s.taken) {
      put(msg, &place, sizeof place);
      for (const auto& g : grads) {
        const uint8_t defined = g.defined() ? 1 : 0;
        put(msg, &defined, 1);
        if (g.defined()) put_tensor(msg, g);
      }
    }
    rep.bw_wire[static_cast<size_t>(s.boundary)] +=
        comm_->send(msg, {}, s.owner, kSharedGradTag + s.boundary);
    s.taken.clear();
  }
  for (SharedCut& s : shared_) {
    if (s.owner != me) continue;
    if (s.reader != me) {
      const Bytes in = comm_->recv(s.reader, kSharedGradTag + s.boundary, nullptr);
      for (size_t pos = 0; pos < in.size();) {
        int64_t place = 0;
        if (pos + sizeof place > in.size()) throw DataError("dist: malformed projection message");
        std::memcpy(&place, in.data() + pos, sizeof place);
        pos += sizeof place;
        std::vector<at::Tensor> grads;
        for (const auto& p : s.params)
          grads.push_back(in.at(pos++) != 0 ? get_tensor(in, pos, p) : at::Tensor());
        s.taken.emplace_back(place, std::move(grads));
      }
    }
    // One process's accumulation: the ops' contributions in its op order.
    std::stable_sort(s.taken.begin(), s.taken.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    torch::NoGradGuard no_grad;
    for (const auto& entry : s.taken) {
      for (size_t j = 0; j < s.params.size(); ++j) {
        const at::Tensor& g = entry.second[j];
        if (!g.defined()) continue;
        at::Tensor& acc = s.params[j].mutable_grad();
        if (acc.defined()) {
          acc.add_(g);
        } else {
          acc = g.clone();
        }
      }
    }
    s.taken.clear();
  }
  comm_->wait_sends();
}

void DistEngine::share_projections(RankReport* rep) {
  const int me = comm_->rank();
  for (const SharedCut& s : shared_) {
    if (s.owner != me || s.reader == me) continue;
    Bytes msg;
    for (const auto& p : s.params) put_tensor(msg, p);
    const uint64_t sent = comm_->send(msg, {}, s.reader, kSharedValueTag + s.boundary);
    if (rep != nullptr) rep->fw_wire[static_cast<size_t>(s.boundary)] += sent;
  }
  for (const SharedCut& s : shared_) {
    if (s.reader != me || s.owner == me) continue;
    const Bytes in = comm_->recv(s.owner, kSharedValueTag + s.boundary, nullptr);
    size_t pos = 0;
    torch::NoGradGuard no_grad;
    for (const auto& p : s.params) p.detach().copy_(get_tensor(in, pos, p));
    if (pos != in.size()) throw DataError("dist: malformed projection message");
  }
}

}  // namespace slowpipe::dist
