// Resume checkpoints (see resume_checkpoint.h).
#include "sim/internal/resume_checkpoint.h"

#include <fcntl.h>
#include <torch/serialize.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "common/errors.h"
#include "common/file_tree.h"
#include "models/torch/checked_file.h"

namespace slowpipe::sim {
namespace {

namespace fs = std::filesystem;
constexpr const char* kKind = "slowpipe.resume";

std::string step_file(const std::string& run_out, int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "step-%09lld.ckpt", static_cast<long long>(step));
  return (fs::path(checkpoint_dir(run_out)) / name).string();
}

// Checkpoint files, newest first.
std::vector<fs::path> list_checkpoints(const std::string& run_out) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(checkpoint_dir(run_out), ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("step-", 0) == 0 && n.size() > 5 && n.compare(n.size() - 5, 5, ".ckpt") == 0) {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) { return a > b; });
  return out;
}

// Exact bit patterns of doubles and 64-bit integers, as int64 tensors.
at::Tensor pack(const std::vector<int64_t>& v) {
  return torch::tensor(v, torch::kLong);
}
int64_t bits_of(double d) {
  int64_t i;
  std::memcpy(&i, &d, sizeof i);
  return i;
}
double double_of(int64_t i) {
  double d;
  std::memcpy(&d, &i, sizeof d);
  return d;
}

// The trainer's cursor from its ten int64 values (write_resume_checkpoint's
// order), with the compute model's state when the checkpoint holds one.
TrainerCursor read_cursor(const at::Tensor& cur, torch::serialize::InputArchive& archive,
                          const fs::path& p) {
  const auto v = [&cur](int i) { return cur[i].item<int64_t>(); };
  TrainerCursor c;
  c.steps_done = v(0);
  c.epoch = static_cast<int>(v(1));
  c.samples = v(2);
  c.sim_time_s = double_of(v(3));
  c.wall_time_s = double_of(v(4));
  c.train_rows = v(5);
  c.eval_rows = v(6);
  c.net.rng_state = static_cast<uint64_t>(v(7));
  c.net.elapsed_s = double_of(v(8));
  c.net.steps = static_cast<uint64_t>(v(9));
  at::Tensor cs;
  if (archive.try_read("net_compute_state", cs)) {
    if (cs.scalar_type() != torch::kUInt8 || cs.dim() != 1) {
      throw DataError("checkpoint " + p.string() + ": malformed compute-model state");
    }
    const auto* b = cs.data_ptr<uint8_t>();
    c.net.compute_state.assign(b, b + cs.numel());
  }
  return c;
}

}  // namespace

std::string checkpoint_dir(const std::string& run_out) {
  return run_out + ".ckpt";
}

double write_resume_checkpoint(const std::string& run_out, const StepEngine& engine,
                               const TrainerCursor& c, const std::string& fingerprint, int keep) {
  const auto t0 = std::chrono::steady_clock::now();
  torch::serialize::OutputArchive archive;
  engine.save_state(archive);
  archive.write("cursor", pack({c.steps_done, c.epoch, c.samples, bits_of(c.sim_time_s),
                                bits_of(c.wall_time_s), c.train_rows, c.eval_rows,
                                static_cast<int64_t>(c.net.rng_state), bits_of(c.net.elapsed_s),
                                static_cast<int64_t>(c.net.steps)}));
  {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    archive.write("torch_rng", gen.get_state());
  }
  // The compute model's calibration (text), so a resumed run replays the same seconds.
  const std::string& cs = c.net.compute_state;
  archive.write("net_compute_state",
                torch::tensor(std::vector<uint8_t>(cs.begin(), cs.end()), torch::kUInt8));
  std::ostringstream os;
  archive.save_to(os);
  const std::string payload = os.str();

  std::error_code ec;
  fs::create_directories(checkpoint_dir(run_out), ec);
  if (ec) {
    throw UsageError("cannot create the checkpoint folder " + checkpoint_dir(run_out) + ": " +
                     ec.message());
  }
  const std::string path = step_file(run_out, c.steps_done);
  const std::string meta =
      "{\"step\": " + std::to_string(c.steps_done) + ", \"config\": \"" + fingerprint + "\"}";
  if (const char* f = std::getenv("SLOWPIPE_FAULT"); f && std::strstr(f, "checkpoint-write")) {
    // Simulate a kill in the middle of writing: half a file under the
    // temporary name write_file_atomic uses, then the kill (if this is the one).
    const std::string bytes = models::encode_checked_file(kKind, meta, payload);
    std::ofstream(path + ".tmp." + std::to_string(getpid()), std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
    fault_point("checkpoint-write");
    fs::remove(path + ".tmp." + std::to_string(getpid()), ec);
  }
  models::write_checked_file(path, kKind, meta, payload);
  // Prune: the newest `keep` checkpoints stay, and no stale temporary file.
  const auto all = list_checkpoints(run_out);
  for (size_t i = static_cast<size_t>(std::max(keep, 1)); i < all.size(); ++i) {
    fs::remove(all[i], ec);
  }
  for (const auto& e : fs::directory_iterator(checkpoint_dir(run_out), ec)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) fs::remove(e.path(), ec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::optional<TrainerCursor> load_resume_checkpoint(const std::string& run_out, StepEngine& engine,
                                                    const std::string& fingerprint,
                                                    const LogRows& log_rows,
                                                    void (*warn)(const std::string&)) {
  for (const fs::path& p : list_checkpoints(run_out)) {
    models::CheckedFile file;
    try {
      file = models::read_checked_file(p.string(), "--resume", kKind);
    } catch (const std::exception& e) {
      warn(std::string("skipping checkpoint ") + p.string() + ": " + e.what());
      continue;
    }
    if (file.metadata.find("\"config\": \"" + fingerprint + "\"") == std::string::npos) {
      throw UsageError("checkpoint " + p.string() +
                       " was written for another configuration than the run log " + run_out +
                       " holds; remove " + checkpoint_dir(run_out) + " to start over");
    }
    torch::serialize::InputArchive archive;
    std::istringstream is(file.payload);
    try {
      archive.load_from(is);
    } catch (const c10::Error& e) {
      throw DataError("checkpoint " + p.string() +
                      " is not a readable archive: " + e.what_without_backtrace());
    }
    at::Tensor cur, rng;
    if (!archive.try_read("cursor", cur) || cur.numel() != 10 ||
        !archive.try_read("torch_rng", rng)) {
      throw DataError("checkpoint " + p.string() + " lacks the trainer's cursor");
    }
    if (cur[5].item<int64_t>() > log_rows.train || cur[6].item<int64_t>() > log_rows.eval) {
      warn("skipping checkpoint " + p.string() +
           ": the run log holds fewer rows than it counts on");
      continue;
    }
    try {
      engine.load_state(archive);
    } catch (const DataError& e) {
      throw DataError("checkpoint " + p.string() + ": " + e.what());
    }
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(rng);
    }
    return read_cursor(cur, archive, p);
  }
  return std::nullopt;
}

void sync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

void remove_checkpoints(const std::string& run_out) {
  try {
    remove_tree(checkpoint_dir(run_out));  // not fs::remove_all: common/file_tree.h
  } catch (const std::exception&) {
    // Best effort, as before: a checkpoint left behind costs disk, not results.
  }
}

void fault_point(const char* point) {
  const char* spec = std::getenv("SLOWPIPE_FAULT");
  if (!spec) return;
  const char* colon = std::strchr(spec, ':');
  if (!colon || std::strncmp(spec, point, static_cast<size_t>(colon - spec)) != 0 ||
      std::strlen(point) != static_cast<size_t>(colon - spec)) {
    return;
  }
  static std::string counted;  // the setting being counted (a new one starts over)
  static long count = 0;
  if (counted != spec) {
    counted = spec;
    count = 0;
  }
  if (++count != std::atol(colon + 1)) return;
  if (std::strncmp(point, "error-", 6) == 0) {
    throw std::runtime_error(std::string("injected failure (SLOWPIPE_FAULT=") + spec + ")");
  }
  std::raise(SIGKILL);
}

}  // namespace slowpipe::sim
