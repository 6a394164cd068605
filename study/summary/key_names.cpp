#include "study/summary/key_names.h"

#include <algorithm>

namespace slowpipe::study {

std::vector<std::string> short_key_names(const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  for (const auto& k : keys) {
    const auto dot = k.rfind('.');
    const std::string last = dot == std::string::npos ? k : k.substr(dot + 1);
    const bool generic = last == "preset" || last == "name" || last == "path";
    out.push_back(generic ? k.substr(0, k.find('.')) : last);
  }
  // A clash: both take the whole key (a whole key, dotted, never equals a short one).
  std::vector<bool> clash(out.size(), false);
  for (size_t i = 0; i < out.size(); ++i) {
    for (size_t j = 0; j < out.size(); ++j) clash[i] = clash[i] || (i != j && out[i] == out[j]);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (clash[i]) out[i] = keys[i];
  }
  return out;
}

std::string short_key_name(const std::string& key, const std::vector<std::string>& keys) {
  const auto it = std::find(keys.begin(), keys.end(), key);
  if (it == keys.end()) return short_key_names({key}).front();
  return short_key_names(keys)[static_cast<size_t>(it - keys.begin())];
}

}  // namespace slowpipe::study
