// The shape check of `slowpipe codec`; see inspection_shape.h.
#include "compressors/codecs/inspection_shape.h"

#include <fmt/format.h>
#include <unistd.h>

#include <string>

#include "common/errors.h"

namespace slowpipe::compressors {

void check_inspection_shape(const std::vector<int64_t>& shape) {
  if (shape.empty()) throw UsageError("--shape: expected B,T,C or similar");
  std::string text;
  for (int64_t d : shape) text += (text.empty() ? "" : ",") + std::to_string(d);
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0) throw UsageError("--shape " + text + ": every dimension must be positive");
    if (n > kMaxInspectionElements / d)
      n = kMaxInspectionElements + 1;  // stop before int64 overflow
    else
      n *= d;
  }
  // The tensor, its decoded copy, the message and a temporary: about 16 bytes
  // per element; half the physical memory at most.
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const double memory = pages > 0 && page > 0 ? static_cast<double>(pages) * page : 0.0;
  const double need = 16.0 * static_cast<double>(n);
  if (n > kMaxInspectionElements || (memory > 0 && need > memory / 2))
    throw UsageError(fmt::format(
        "--shape {}: too large to inspect ({} elements; the limit is {} elements and about "
        "16 bytes each within half the physical memory, {:.1f} GB here)",
        text,
        n > kMaxInspectionElements ? "over " + std::to_string(kMaxInspectionElements)
                                   : std::to_string(n),
        kMaxInspectionElements, memory / 2 / 1e9));
}

}  // namespace slowpipe::compressors
