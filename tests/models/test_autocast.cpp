// The autocast scope of a stage's forward (models/torch/internal/autocast.h):
// bf16 turns autocast on for the device, fp32 leaves the thread's state
// alone, and the state before the outermost scope comes back.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

#include <catch2/catch.hpp>

#include "models/torch/internal/autocast.h"

TEST_CASE("AutocastScope: bf16 matmuls inside, the thread's state restored after") {
  REQUIRE_FALSE(at::autocast::is_cpu_enabled());
  {
    const slowpipe::models::AutocastScope outer(at::kBFloat16, c10::Device("cpu"));
    CHECK(at::autocast::is_cpu_enabled());
    CHECK(at::autocast::get_autocast_cpu_dtype() == at::kBFloat16);
    {
      const slowpipe::models::AutocastScope inner(at::kFloat, c10::Device("cpu"));
      CHECK(at::autocast::is_cpu_enabled());  // kFloat leaves the state alone
    }
    {
      const slowpipe::models::AutocastScope nested(at::kBFloat16, c10::Device("cpu"));
      CHECK(at::autocast::is_cpu_enabled());
    }
    CHECK(at::autocast::is_cpu_enabled());  // the inner bf16 scope restored "on"
    const at::Tensor y = at::mm(at::ones({4, 4}), at::ones({4, 4}));
    CHECK(y.scalar_type() == at::kBFloat16);
  }
  CHECK_FALSE(at::autocast::is_cpu_enabled());
  const slowpipe::models::AutocastScope off(at::kFloat, c10::Device("cpu"));
  CHECK(at::mm(at::ones({4, 4}), at::ones({4, 4})).scalar_type() == at::kFloat);
}
