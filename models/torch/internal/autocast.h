// The scope of a stage's forward under the run's dtype (run.dtype, docs/
// compute-clock.md, "bf16 training"): with bf16, libtorch's autocast for the
// device runs matmuls and convolutions in bf16 while parameters, the
// optimizer's state and the reductions autocast keeps in fp32 stay fp32 (the
// master weights). Nested scopes share one autocast weight cache, cleared when
// the outermost ends, as torch.autocast does. Restores the thread's previous
// autocast state.
#pragma once

#include <ATen/autocast_mode.h>

namespace slowpipe::models {

class AutocastScope {
 public:
  // `dtype` kBFloat16 turns autocast on for `device`'s type; kFloat leaves it.
  AutocastScope(at::ScalarType dtype, const c10::Device& device)
      : on_(dtype == at::kBFloat16), cuda_(device.is_cuda()) {
    if (!on_) return;
    if (cuda_) {
      was_enabled_ = at::autocast::is_enabled();
      was_dtype_ = at::autocast::get_autocast_gpu_dtype();
      at::autocast::set_enabled(true);
      at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    } else {
      was_enabled_ = at::autocast::is_cpu_enabled();
      was_dtype_ = at::autocast::get_autocast_cpu_dtype();
      at::autocast::set_cpu_enabled(true);
      at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    }
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    if (cuda_) {
      at::autocast::set_enabled(was_enabled_);
      at::autocast::set_autocast_gpu_dtype(was_dtype_);
    } else {
      at::autocast::set_cpu_enabled(was_enabled_);
      at::autocast::set_autocast_cpu_dtype(was_dtype_);
    }
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool on_, cuda_;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

}  // namespace slowpipe::models
