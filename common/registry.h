// Registry<Entry>: the one name -> entry table behind every plug-in family
// (codecs, feedback schemes, models, data sets, network presets, devices,
// model shapes, compute models, timing presets). An Entry is the family's own
// struct with at least `name` and `description` (one line) and whatever the
// family builds with (a factory, flags, figures). The same names appear in the
// CLI, config files, HDF5 attributes and plot labels.
//
// Entries keep their registration order (listings, messages) and their
// addresses (a deque: `find` and `at` results stay valid when more are added).
// A family may normalise the name before lookup (`key_of`: codec "q4" is the
// entry "q") and list an entry under another label (`label_of`: "q1..q8").
// Built-ins are added on first use, never from static initialisers (a static
// library may drop those): a family that outside code can extend keeps a
// LazyRegistry (below), whose fill adds the built-ins through the family's own
// register_* function, the same path an experiment's entries take. Not
// thread-safe while entries are being added.
#pragma once

#include <deque>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/errors.h"

namespace slowpipe {

template <class Entry>
class Registry {
 public:
  using KeyFn = std::function<std::string(const std::string& name)>;
  using LabelFn = std::function<std::string(const Entry& entry)>;

  // `noun` names one entry in messages ("model", "compute model").
  explicit Registry(std::string noun, KeyFn key_of = {}, LabelFn label_of = {})
      : noun_(std::move(noun)), key_of_(std::move(key_of)), label_of_(std::move(label_of)) {}
  // The same, with a family's built-in entries added in order (through add).
  Registry(std::string noun, std::initializer_list<Entry> builtins, KeyFn key_of = {},
           LabelFn label_of = {})
      : Registry(std::move(noun), std::move(key_of), std::move(label_of)) {
    for (const Entry& e : builtins) add(e);
  }

  // Adds an entry; an empty or already registered name throws std::logic_error
  // (a programming error, not a user's).
  const Entry& add(Entry entry) {
    if (entry.name.empty()) throw std::logic_error(noun_ + " registered with an empty name");
    if (find_exact(entry.name)) throw std::logic_error(noun_ + " registered twice: " + entry.name);
    entries_.push_back(std::move(entry));
    return entries_.back();
  }

  // The entry `name` (normalised by key_of) names, or nullptr.
  const Entry* find(const std::string& name) const {
    return find_exact(key_of_ ? key_of_(name) : name);
  }

  // The entry `name` names; else UsageError "bad value for 'KEY': unknown NOUN
  // 'NAME' (known: A, B, C)", KEY being the option the name came from.
  const Entry& at(const std::string& key, const std::string& name) const {
    if (const Entry* e = find(name)) return *e;
    unknown(key, name);
  }

  // The UsageError of `at` for `what` (a name, or a whole spec holding one).
  [[noreturn]] void unknown(const std::string& key, const std::string& what) const {
    throw UsageError("bad value for '" + key + "': unknown " + noun_ + " '" + what +
                     "' (known: " + known() + ")");
  }

  // The labels of every entry, in registration order, joined by `sep`.
  std::string known(const std::string& sep = ", ") const {
    std::string out;
    for (const Entry& e : entries_) out += (out.empty() ? "" : sep) + label(e);
    return out;
  }
  // How an entry is listed: label_of, else its name.
  std::string label(const Entry& e) const { return label_of_ ? label_of_(e) : e.name; }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Entry& e : entries_) out.push_back(e.name);
    return out;
  }
  const std::deque<Entry>& entries() const { return entries_; }
  typename std::deque<Entry>::const_iterator begin() const { return entries_.begin(); }
  typename std::deque<Entry>::const_iterator end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }
  const std::string& noun() const { return noun_; }

 private:
  const Entry* find_exact(const std::string& name) const {
    for (const Entry& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }

  std::string noun_;
  KeyFn key_of_;
  LabelFn label_of_;
  std::deque<Entry> entries_;
};

// A Registry filled with its family's built-ins on first use. `fill` adds them
// (through the family's register_*, which reaches get() again while the fill
// runs and then sees the entries added so far). Keep one in a function-local
// static of the family's source:
//   Registry<ModelEntry>& filled() {
//     static LazyRegistry<ModelEntry> models("model", &register_builtins);
//     return models.get();
//   }
template <class Entry>
class LazyRegistry {
 public:
  using KeyFn = typename Registry<Entry>::KeyFn;
  using LabelFn = typename Registry<Entry>::LabelFn;
  LazyRegistry(std::string noun, std::function<void()> fill, KeyFn key_of = {},
               LabelFn label_of = {})
      : registry_(std::move(noun), std::move(key_of), std::move(label_of)),
        fill_(std::move(fill)) {}
  Registry<Entry>& get() {
    if (!started_) {
      started_ = true;
      fill_();
    }
    return registry_;
  }

 private:
  Registry<Entry> registry_;
  std::function<void()> fill_;
  bool started_ = false;
};

}  // namespace slowpipe
