// The JSON reader of netsim scenarios (netsim_scenario.cpp): a strict RFC 8259
// parser into a flat tape of nodes, one per value and per member name, in
// document order. It exists because a scenario of 100,000 flows spent most of
// its reading time in a general-purpose DOM (a heap node, map and string per
// value); here a node is 16 bytes, strings are views into the text (escapes
// are decoded in place, which only ever shortens them) and numbers are
// converted once, with std::from_chars.
//
// Accepts exactly what nlohmann-json's strict parser accepts (a differential
// test checks this, tests/netmodel/test_netsim_json.cpp): RFC 8259 values;
// whitespace of space, tab, CR and LF; an optional UTF-8 byte order mark at
// the very start; well-formed UTF-8 in strings; \u escapes with paired
// surrogates; nothing after the top-level value. As in nlohmann, a number
// without fraction or exponent is an integer, so "-0" is +0, and a number
// beyond the range of a double is an error ("number overflow"). One
// difference: a NUL byte is refused wherever it is (nlohmann took it for the
// end of the text and ignored what followed). On top of plain JSON, for
// scenarios: a key given twice in one object, and nesting deeper than
// kMaxJsonDepth, are errors. Every error is a UsageError that
// starts with the source name; syntax errors say "not valid JSON" and give the
// line and column (in bytes) of the offending byte.
//
// Leaves out: writing JSON, comments, NaN and Infinity, texts of 1 GiB or more.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace slowpipe::netmodel::json {

constexpr int kMaxJsonDepth = 32;  // deeper nesting is never a valid scenario

enum class Kind : uint8_t { kNull, kFalse, kTrue, kNumber, kString, kArray, kObject };

// One value or member name. A container is followed by its children (an
// object's as name, value, name, value, ...); `end` is the index one past its
// last descendant, so the next sibling of node i is node nodes[i].end.
struct Node {
  uint32_t kind : 3;    // Kind
  uint32_t count : 29;  // an object's members, an array's elements
  uint32_t end;         // one past the subtree
  union {
    double number;  // kNumber
    struct {
      uint32_t offset, length;  // kString: the decoded bytes in the text
    } str;
  };
};
static_assert(sizeof(Node) == 16, "a tape node is 16 bytes");

class Value;

class Document {
 public:
  // Parses `text` (kept, and modified in place) as one JSON value; throws
  // UsageError naming `source` (see the file comment).
  Document(std::string text, const std::string& source);
  inline Value root() const;

 private:
  friend class Value;
  friend class Parser;
  std::string text_;
  std::vector<Node> nodes_;
};

// A view of one node of a Document, which must outlive it.
class Value {
 public:
  Value() = default;  // refers to nothing until assigned
  Value(const Document& doc, uint32_t index) : doc_(&doc), index_(index) {}
  Kind kind() const { return static_cast<Kind>(node().kind); }
  bool is_object() const { return kind() == Kind::kObject; }
  bool is_array() const { return kind() == Kind::kArray; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_number() const { return kind() == Kind::kNumber; }
  // Members of an object, elements of an array; 0 for a scalar.
  size_t size() const { return node().count; }
  double number() const { return node().number; }  // a kNumber's value
  std::string_view string() const {                // a kString's bytes
    return {doc_->text_.data() + node().str.offset, node().str.length};
  }

  // Children in order: the first of an array's elements or of an object's
  // member names; next() is the next sibling; a member name's value() is the
  // node after it. A walk ends at index() == end_of_children().
  Value first_child() const { return Value(*doc_, index_ + 1); }
  Value next() const { return Value(*doc_, node().end); }
  Value value() const { return Value(*doc_, index_ + 1); }
  uint32_t end_of_children() const { return node().end; }
  uint32_t index() const { return index_; }

  // An object's member named `key`: its value, or nothing (found false).
  bool find(std::string_view key, Value& out) const {
    for (Value name = first_child(); name.index_ != node().end; name = name.value().next()) {
      if (name.string() == key) {
        out = name.value();
        return true;
      }
    }
    return false;
  }
  bool contains(std::string_view key) const {
    Value unused = *this;
    return find(key, unused);
  }

 private:
  const Node& node() const { return doc_->nodes_[index_]; }
  const Document* doc_ = nullptr;
  uint32_t index_ = 0;
};

Value Document::root() const {
  return Value(*this, 0);
}

// Calls fn(name, value) for each member of an object, in document order.
template <class Fn>
void for_each_member(const Value& object, Fn&& fn) {
  for (Value name = object.first_child(); name.index() != object.end_of_children();) {
    const Value value = name.value();
    fn(name.string(), value);
    name = value.next();
  }
}

// Calls fn(element) for each element of an array, in order.
template <class Fn>
void for_each_element(const Value& array, Fn&& fn) {
  for (Value e = array.first_child(); e.index() != array.end_of_children(); e = e.next()) fn(e);
}

}  // namespace slowpipe::netmodel::json
