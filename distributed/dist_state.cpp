// Resume checkpoints of a distributed run (docs/distributed.md, "Resume"):
// each rank serialises what it carries from one step to the next (its stage's
// parameters and buffers, which of them hold a gradient, its optimizer's
// state, the halves of the channels it holds, its default random generator)
// into one archive; rank 0 gathers them into the run's single checkpoint file
// under `dist.rank<r>`, and on resume hands each rank its own back. A rank
// loads only after every check passed on it; rank 0 collects each rank's
// answer, so a bad checkpoint ends the run with the rank's reason.
#include <torch/serialize.h>
#include <torch/torch.h>

#include <cstring>
#include <sstream>

#include "common/errors.h"
#include "distributed/dist_engine.h"

namespace slowpipe::dist {
namespace {

constexpr int kStateTag = 1000003;
constexpr int kStateAnswerTag = 1000004;
const Bytes kLoaded = {1};  // a rank's answer when its state loaded (else its reason)

at::Tensor bytes_tensor(const Bytes& b) {
  at::Tensor t = torch::empty({static_cast<int64_t>(b.size())}, torch::kUInt8);
  if (!b.empty()) std::memcpy(t.data_ptr<uint8_t>(), b.data(), b.size());
  return t;
}

Bytes tensor_bytes(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  const auto* p = c.data_ptr<uint8_t>();
  return Bytes(p, p + c.numel());
}

std::string rank_key(int r) {
  return "dist.rank" + std::to_string(r);
}

}  // namespace

template <class F>
void DistEngine::for_each_channel(F&& f) const {
  const std::pair<const char*, compressors::Channel*> named[] = {
      {"fw_out.", fw_out_.get()},       {"bw_in.", bw_in_.get()},
      {"fw_in.", fw_in_.get()},         {"bw_out.", bw_out_.get()},
      {"fw_shadow.", fw_shadow_.get()}, {"bw_shadow.", bw_shadow_.get()}};
  for (const auto& [name, ch] : named)
    if (ch) f(std::string(name), *ch);
  for (size_t q = 0; q < grad_.size(); ++q) f("grad" + std::to_string(q) + ".", *grad_[q]);
  const std::pair<const char*, const std::vector<std::unique_ptr<compressors::Channel>>*> lists[] =
      {{"m_worker", &m_workers_},
       {"m_shadow", &m_shadows_},
       {"m_inbound", &m_inbound_},
       {"m_server", &m_servers_}};
  for (const auto& [name, list] : lists)
    for (size_t j = 0; j < list->size(); ++j)
      if ((*list)[j]) f(name + std::to_string(j) + ".", *(*list)[j]);
}

Bytes DistEngine::local_state() const {
  torch::NoGradGuard no_grad;
  torch::serialize::OutputArchive archive;
  for (size_t b = cuts_[stage_]; b < cuts_[stage_ + 1]; ++b) {
    const std::string pre = "model.b" + std::to_string(b) + ".";
    for (const auto& p : model_.blocks[b]->named_parameters(true))
      archive.write(pre + "p." + p.key(), p.value().detach().cpu());
    for (const auto& p : model_.blocks[b]->named_buffers(true))
      archive.write(pre + "buf." + p.key(), p.value().detach().cpu());
  }
  std::vector<int64_t> has_grad;
  for (const auto& p : params_) has_grad.push_back(p.grad().defined() ? 1 : 0);
  archive.write("grad_defined", torch::tensor(has_grad));
  torch::serialize::OutputArchive optim;
  optimizer_->save(optim);
  archive.write("optim", optim);
  compressors::StateDict channels;
  for_each_channel(
      [&](const std::string& pre, const compressors::Channel& c) { c.save_state(pre, channels); });
  torch::serialize::OutputArchive ch;
  for (const auto& [key, t] : channels) ch.write(key, t);
  archive.write("channels", ch);
  {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    archive.write("torch_rng", gen.get_state());
  }
  std::ostringstream os;
  archive.save_to(os);
  const std::string s = os.str();
  return Bytes(s.begin(), s.end());
}

void DistEngine::restore_local(const Bytes& state) {
  torch::NoGradGuard no_grad;
  torch::serialize::InputArchive archive;
  std::istringstream is(std::string(state.begin(), state.end()));
  try {
    archive.load_from(is);
  } catch (const c10::Error& e) {
    throw DataError(std::string("its state is not a readable archive: ") +
                    e.what_without_backtrace());
  }
  const auto read = [&archive](const std::string& key) {
    at::Tensor t;
    if (!archive.try_read(key, t)) throw DataError("its state has no entry '" + key + "'");
    return t;
  };
  // Every check before anything changes.
  std::vector<std::pair<at::Tensor, at::Tensor>> copies;  // (destination, source)
  for (size_t b = cuts_[stage_]; b < cuts_[stage_ + 1]; ++b) {
    const std::string pre = "model.b" + std::to_string(b) + ".";
    const auto take = [&](const std::string& key, const at::Tensor& t) {
      const at::Tensor src = read(key);
      if (src.sizes() != t.sizes() || src.scalar_type() != t.scalar_type())
        throw DataError("its '" + key + "' has another shape or type than this run's");
      copies.emplace_back(t, src);
    };
    for (const auto& p : model_.blocks[b]->named_parameters(true))
      take(pre + "p." + p.key(), p.value());
    for (const auto& p : model_.blocks[b]->named_buffers(true))
      take(pre + "buf." + p.key(), p.value());
  }
  const at::Tensor has_grad = read("grad_defined");
  if (has_grad.numel() != static_cast<int64_t>(params_.size()))
    throw DataError("its gradient flags do not fit this stage's parameters");
  torch::serialize::InputArchive optim, ch;
  if (!archive.try_read("optim", optim)) throw DataError("its state has no optimizer");
  if (!archive.try_read("channels", ch)) throw DataError("its state has no channel state");
  compressors::StateDict channels;
  for (const auto& key : ch.keys()) {
    at::Tensor t;
    ch.read(key, t);
    channels[key] = t;
  }
  const at::Tensor rng = read("torch_rng");
  for (auto& [dst, src] : copies) dst.copy_(src);
  for (size_t i = 0; i < params_.size(); ++i)
    params_[i].mutable_grad() = has_grad[static_cast<int64_t>(i)].item<int64_t>() != 0
                                    ? torch::zeros_like(params_[i])
                                    : at::Tensor();
  optimizer_->load(optim);
  for_each_channel(
      [&](const std::string& pre, compressors::Channel& c) { c.load_state(pre, channels); });
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(rng);
}

void DistEngine::save_state(torch::serialize::OutputArchive& archive) const {
  command(kSave, 0, 0, at::Tensor());
  archive.write("dist.layout",
                torch::tensor(std::vector<int64_t>{layout_.stages, layout_.replicas}));
  archive.write(rank_key(0), bytes_tensor(local_state()));
  for (int r = 1; r < layout_.world(); ++r)
    archive.write(rank_key(r), bytes_tensor(comm_->recv(r, kStateTag, nullptr)));
}

void DistEngine::load_state(torch::serialize::InputArchive& archive) {
  at::Tensor lay;
  if (!archive.try_read("dist.layout", lay) || lay.numel() != 2)
    throw DataError("it was not written by a distributed run");
  if (lay[0].item<int64_t>() != layout_.stages || lay[1].item<int64_t>() != layout_.replicas)
    throw DataError("it was written for " + std::to_string(lay[0].item<int64_t>()) +
                    " stage(s) x " + std::to_string(lay[1].item<int64_t>()) + " replica(s)");
  std::vector<Bytes> states;
  for (int r = 0; r < layout_.world(); ++r) {
    at::Tensor t;
    if (!archive.try_read(rank_key(r), t))
      throw DataError("it holds no state of rank " + std::to_string(r));
    states.push_back(tensor_bytes(t));
  }
  command(kLoad, 0, 0, at::Tensor());
  for (int r = 1; r < layout_.world(); ++r)
    comm_->send(states[static_cast<size_t>(r)], {}, r, kStateTag);
  comm_->wait_sends();
  std::string why;
  try {
    restore_local(states[0]);
  } catch (const DataError& e) {
    why = layout_.name(0) + ": " + e.what();
  }
  for (int r = 1; r < layout_.world(); ++r) {
    const Bytes answer = comm_->recv(r, kStateAnswerTag, nullptr);
    if (answer != kLoaded && why.empty()) why = std::string(answer.begin(), answer.end());
  }
  if (!why.empty()) throw DataError(why);
}

void DistEngine::serve_state(bool save) {
  if (save) {
    comm_->send(local_state(), {}, 0, kStateTag);
    comm_->wait_sends();
    return;
  }
  const Bytes state = comm_->recv(0, kStateTag, nullptr);
  std::string why;
  try {
    restore_local(state);
  } catch (const DataError& e) {
    why = layout_.name(comm_->rank()) + ": " + e.what();
  }
  comm_->send(why.empty() ? kLoaded : Bytes(why.begin(), why.end()), {}, 0, kStateAnswerTag);
  comm_->wait_sends();
}

}  // namespace slowpipe::dist
