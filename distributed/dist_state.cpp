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

std::string rank_state_key(int r) {
  return "dist.rank" + std::to_string(r);
}

}  // namespace

template <class F>
void DistEngine::for_each_channel(F&& f) const {
  for (const Part& p : parts_) {
    const std::string c = "c" + std::to_string(p.chunk) + ".";
    const std::pair<const char*, compressors::Channel*> named[] = {
        {"fw_out.", p.fw_out.get()},       {"bw_in.", p.bw_in.get()},
        {"fw_in.", p.fw_in.get()},         {"bw_out.", p.bw_out.get()},
        {"fw_shadow.", p.fw_shadow.get()}, {"bw_shadow.", p.bw_shadow.get()}};
    for (const auto& [name, ch] : named)
      if (ch) f(c + name, *ch);
    const std::pair<const char*, const std::vector<std::unique_ptr<compressors::Channel>>*>
        lists[] = {{"grad", &p.grad},
                   {"m_worker", &p.m_workers},
                   {"m_shadow", &p.m_shadows},
                   {"m_inbound", &p.m_inbound},
                   {"m_server", &p.m_servers}};
    for (const auto& [name, list] : lists)
      for (size_t j = 0; j < list->size(); ++j)
        if ((*list)[j]) f(c + name + std::to_string(j) + ".", *(*list)[j]);
  }
}

void DistEngine::set_channel_epoch(int epoch) {
  for (auto* ch : all_channels()) ch->set_epoch(epoch);
}

std::vector<compressors::Channel*> DistEngine::all_channels() const {
  std::vector<compressors::Channel*> out;
  for_each_channel([&](const std::string&, compressors::Channel& ch) { out.push_back(&ch); });
  return out;
}

Bytes DistEngine::local_state() const {
  torch::NoGradGuard no_grad;
  torch::serialize::OutputArchive archive;
  for (const Part& part : parts_) {
    const auto k = static_cast<size_t>(part.chunk);
    for (size_t b = cuts_[k]; b < cuts_[k + 1]; ++b) {
      const std::string pre = "model.b" + std::to_string(b) + ".";
      for (const auto& p : model_.blocks[b]->named_parameters(true))
        archive.write(pre + "p." + p.key(), p.value().detach().cpu());
      for (const auto& p : model_.blocks[b]->named_buffers(true))
        archive.write(pre + "buf." + p.key(), p.value().detach().cpu());
    }
    std::vector<int64_t> has_grad;
    for (const auto& p : part.params) has_grad.push_back(p.grad().defined() ? 1 : 0);
    const std::string c = ".c" + std::to_string(part.chunk);
    archive.write("grad_defined" + c, torch::tensor(has_grad));
    torch::serialize::OutputArchive optim;
    part.optimizer->save(optim);
    archive.write("optim" + c, optim);
  }
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

// What restore_local puts in place, every part of it read and checked first.
struct DistEngine::LoadedState {
  std::vector<std::pair<at::Tensor, at::Tensor>> copies;  // (destination, source)
  std::vector<at::Tensor> has_grad;                       // per part
  std::vector<torch::serialize::InputArchive> optim;      // per part
  compressors::StateDict channels;
};

void DistEngine::read_parts(torch::serialize::InputArchive& archive, LoadedState& st) const {
  const auto read = [&archive](const std::string& key) {
    at::Tensor t;
    if (!archive.try_read(key, t)) throw DataError("its state has no entry '" + key + "'");
    return t;
  };
  st.optim.resize(parts_.size());
  for (size_t i = 0; i < parts_.size(); ++i) {
    const Part& part = parts_[i];
    const auto k = static_cast<size_t>(part.chunk);
    for (size_t b = cuts_[k]; b < cuts_[k + 1]; ++b) {
      const std::string pre = "model.b" + std::to_string(b) + ".";
      const auto take = [&](const std::string& key, const at::Tensor& t) {
        const at::Tensor src = read(key);
        if (src.sizes() != t.sizes() || src.scalar_type() != t.scalar_type())
          throw DataError("its '" + key + "' has another shape or type than this run's");
        st.copies.emplace_back(t, src);
      };
      for (const auto& p : model_.blocks[b]->named_parameters(true))
        take(pre + "p." + p.key(), p.value());
      for (const auto& p : model_.blocks[b]->named_buffers(true))
        take(pre + "buf." + p.key(), p.value());
    }
    const std::string c = ".c" + std::to_string(part.chunk);
    st.has_grad.push_back(read("grad_defined" + c));
    if (st.has_grad.back().numel() != static_cast<int64_t>(part.params.size()))
      throw DataError("its gradient flags do not fit chunk " + std::to_string(part.chunk));
    if (!archive.try_read("optim" + c, st.optim[i]))
      throw DataError("its state has no optimizer of chunk " + std::to_string(part.chunk));
  }
  torch::serialize::InputArchive ch;
  if (!archive.try_read("channels", ch)) throw DataError("its state has no channel state");
  for (const auto& key : ch.keys()) {
    at::Tensor t;
    ch.read(key, t);
    st.channels[key] = t;
  }
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
  LoadedState st;  // every check before anything changes
  read_parts(archive, st);
  at::Tensor rng;
  if (!archive.try_read("torch_rng", rng)) throw DataError("its state has no entry 'torch_rng'");
  for (auto& [dst, src] : st.copies) dst.copy_(src);
  for (size_t i = 0; i < parts_.size(); ++i) {
    Part& part = parts_[i];
    for (size_t j = 0; j < part.params.size(); ++j)
      part.params[j].mutable_grad() = st.has_grad[i][static_cast<int64_t>(j)].item<int64_t>() != 0
                                          ? torch::zeros_like(part.params[j])
                                          : at::Tensor();
    part.optimizer->load(st.optim[i]);
  }
  for_each_channel(
      [&](const std::string& pre, compressors::Channel& c) { c.load_state(pre, st.channels); });
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(rng);
}

void DistEngine::save_state(torch::serialize::OutputArchive& archive) const {
  command(kSave, 0, 0, at::Tensor());
  archive.write("dist.layout",
                torch::tensor(std::vector<int64_t>{layout_.stages, layout_.replicas}));
  archive.write(rank_state_key(0), bytes_tensor(local_state()));
  for (int r = 1; r < layout_.world(); ++r)
    archive.write(rank_state_key(r), bytes_tensor(comm_->recv(r, kStateTag, nullptr)));
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
    if (!archive.try_read(rank_state_key(r), t))
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
