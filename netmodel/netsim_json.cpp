// The strict JSON parser of netsim scenarios: text -> tape (internal/netsim_json.h).
// Recursive descent, at most kMaxJsonDepth levels deep; strings are checked
// (UTF-8, control characters, escapes) and decoded in place in one pass.
#include "netmodel/internal/netsim_json.h"

#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <unordered_set>
#include <utility>

#include "common/errors.h"

namespace slowpipe::netmodel::json {

constexpr size_t kMaxTextBytes = size_t{1} << 30;  // offsets and counts fit the tape's fields

// Builds a Document's tape from its text.
class Parser {
 public:
  Parser(Document& doc, const std::string& source)
      : s_(doc.text_.data()),
        n_(doc.text_.size()),
        nodes_(doc.nodes_),
        source_(source),
        open_(kMaxJsonDepth + 1) {}

  void run() {
    if (n_ >= 3 && std::memcmp(s_, "\xEF\xBB\xBF", 3) == 0) pos_ = 3;  // a UTF-8 byte order mark
    skip_ws();
    value(0);
    skip_ws();
    if (pos_ != n_) expected("the end of the text after the top-level value");
  }

 private:
  // The keys of one open object, to refuse a key given twice: a short list
  // scanned linearly, a hash set once the object has many members.
  struct OpenObject {
    std::vector<std::string_view> keys;
    std::unordered_set<std::string_view> many;
  };
  static constexpr size_t kLinearKeys = 16;

  [[noreturn]] void fail_at(size_t pos, const std::string& why) const {
    throw UsageError(source_ + ": not valid JSON: line " + std::to_string(line_) + ", column " +
                     std::to_string(pos - line_start_ + 1) + ": " + why);
  }
  std::string found(size_t pos) const {
    if (pos >= n_) return "the end of the text";
    const auto c = static_cast<unsigned char>(s_[pos]);
    if (c > 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
    static const char* const kHex = "0123456789abcdef";
    return std::string("byte 0x") + kHex[c >> 4] + kHex[c & 15];
  }
  [[noreturn]] void expected(const char* what) const {
    fail_at(pos_, std::string("expected ") + what + ", found " + found(pos_));
  }

  // Whitespace; newlines only ever occur here in a valid prefix, so the line
  // count of an error's position is exact.
  void skip_ws() {
    for (;; ++pos_) {
      const char c = s_[pos_];  // s_[n_] is the string's terminating NUL
      if (c == ' ' || c == '\t' || c == '\r') continue;
      if (c != '\n') return;
      ++line_;
      line_start_ = pos_ + 1;
    }
  }

  uint32_t push(Kind kind) {
    Node node{};
    node.kind = static_cast<uint32_t>(kind);
    nodes_.push_back(node);
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  void close(uint32_t index, size_t count) {
    nodes_[index].count = static_cast<uint32_t>(count);
    nodes_[index].end = static_cast<uint32_t>(nodes_.size());
  }

  void value(int depth) {
    switch (pos_ < n_ ? s_[pos_] : '\0') {
      case '{':
        return object(depth + 1);
      case '[':
        return array(depth + 1);
      case '"':
        return close(string_node(), 0);
      case 't':
        return literal("true", Kind::kTrue);
      case 'f':
        return literal("false", Kind::kFalse);
      case 'n':
        return literal("null", Kind::kNull);
      default:
        if (s_[pos_] == '-' || (s_[pos_] >= '0' && s_[pos_] <= '9')) return number();
        expected("a value (object, array, string, number, true, false or null)");
    }
  }

  void literal(const char* word, Kind kind) {
    const size_t len = std::strlen(word);
    if (n_ - pos_ < len || std::memcmp(s_ + pos_, word, len) != 0)
      fail_at(pos_, std::string("invalid literal (expected '") + word + "')");
    pos_ += len;
    close(push(kind), 0);
  }

  void enter(int depth) const {
    if (depth > kMaxJsonDepth) {
      throw UsageError(source_ + ": nested deeper than " + std::to_string(kMaxJsonDepth) +
                       " levels");
    }
  }

  void array(int depth) {
    enter(depth);
    const uint32_t self = push(Kind::kArray);
    ++pos_;
    skip_ws();
    size_t count = 0;
    if (pos_ < n_ && s_[pos_] == ']') {
      ++pos_;
      return close(self, 0);
    }
    for (;;) {
      value(depth);
      ++count;
      skip_ws();
      if (pos_ < n_ && s_[pos_] == ',') {
        ++pos_;
        skip_ws();
        continue;
      }
      if (pos_ < n_ && s_[pos_] == ']') break;
      expected("',' or ']' after an array element");
    }
    ++pos_;
    close(self, count);
  }

  void object(int depth) {
    enter(depth);
    const uint32_t self = push(Kind::kObject);
    open_[depth].keys.clear();
    if (!open_[depth].many.empty()) open_[depth].many.clear();
    ++pos_;
    skip_ws();
    size_t count = 0;
    if (pos_ < n_ && s_[pos_] == '}') {
      ++pos_;
      return close(self, 0);
    }
    for (;;) {
      if (pos_ >= n_ || s_[pos_] != '"')
        expected(count ? "a member name (a string)" : "a member name (a string) or '}'");
      const uint32_t key = string_node();
      close(key, 0);
      add_key(open_[depth], nodes_[key]);
      skip_ws();
      if (pos_ >= n_ || s_[pos_] != ':') expected("':' after a member name");
      ++pos_;
      skip_ws();
      value(depth);
      ++count;
      skip_ws();
      if (pos_ < n_ && s_[pos_] == ',') {
        ++pos_;
        skip_ws();
        continue;
      }
      if (pos_ < n_ && s_[pos_] == '}') break;
      expected("',' or '}' after an object member");
    }
    ++pos_;
    close(self, count);
  }

  void add_key(OpenObject& open, const Node& key) {
    const std::string_view k(s_ + key.str.offset, key.str.length);
    bool fresh = true;
    if (open.keys.size() < kLinearKeys) {
      for (const auto& seen : open.keys) fresh = fresh && seen != k;
      open.keys.push_back(k);
      if (open.keys.size() == kLinearKeys) open.many.insert(open.keys.begin(), open.keys.end());
    } else {
      fresh = open.many.insert(k).second;
    }
    if (!fresh)
      throw UsageError(source_ + ": duplicate key '" + std::string(k) + "' in one object");
  }

  uint32_t string_node();
  size_t utf8_length(size_t pos) const;
  size_t escape(size_t& read, size_t write);
  unsigned hex4(size_t pos) const;
  void number();
  [[noreturn]] void expected_digit(const char* after) const {
    fail_at(pos_, std::string("expected a digit ") + after + ", found " + found(pos_));
  }
  double number_value(size_t start, bool integer) const;

  char* s_;
  size_t n_;
  size_t pos_ = 0;
  size_t line_ = 1, line_start_ = 0;
  std::vector<Node>& nodes_;
  const std::string& source_;
  std::vector<OpenObject> open_;  // by depth, 1..kMaxJsonDepth
};

// The string at pos_ (on its opening quote) as a node; the text decoded in place.
uint32_t Parser::string_node() {
  const size_t start = ++pos_;
  size_t read = start;
  // Fast path: no escape yet, the decoded bytes are the text's.
  for (;;) {
    const auto c = static_cast<unsigned char>(s_[read]);
    if (c == '"' || c == '\\') break;
    if (c < 0x20) {
      if (read >= n_) fail_at(start - 1, "a string without its closing quote");
      fail_at(read, "a control character in a string (write it as an escape, e.g. \\n)");
    }
    read += c < 0x80 ? 1 : utf8_length(read);
  }
  size_t write = read;
  while (s_[read] != '"') {
    const auto c = static_cast<unsigned char>(s_[read]);
    if (c == '\\') {
      write = escape(read, write);
      continue;
    }
    if (c < 0x20) {
      if (read >= n_) fail_at(start - 1, "a string without its closing quote");
      fail_at(read, "a control character in a string (write it as an escape, e.g. \\n)");
    }
    const size_t len = c < 0x80 ? 1 : utf8_length(read);
    std::memmove(s_ + write, s_ + read, len);
    read += len, write += len;
  }
  pos_ = read + 1;
  const uint32_t self = push(Kind::kString);
  nodes_[self].str = {static_cast<uint32_t>(start), static_cast<uint32_t>(write - start)};
  return self;
}

// The length of the well-formed UTF-8 sequence at `pos` (a byte >= 0x80),
// RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF.
size_t Parser::utf8_length(size_t pos) const {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s_[pos + i]); };
  const unsigned c = b(0);
  size_t len = 0;
  unsigned lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    fail_at(pos, "invalid UTF-8 in a string (" + found(pos) + ")");
  }
  // Stops at the first bad byte; the text's terminating NUL is one.
  bool ok = b(1) >= lo && b(1) <= hi;
  for (size_t i = 2; ok && i < len; ++i) ok = b(i) >= 0x80 && b(i) <= 0xBF;
  if (!ok) fail_at(pos, "invalid UTF-8 in a string (" + found(pos) + " starts a bad sequence)");
  return len;
}

unsigned Parser::hex4(size_t pos) const {
  unsigned v = 0;
  for (size_t i = 0; i < 4; ++i) {
    const char c = pos + i < n_ ? s_[pos + i] : '\0';
    unsigned d;
    if (c >= '0' && c <= '9') {
      d = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      d = static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      d = static_cast<unsigned>(c - 'A' + 10);
    } else {
      fail_at(pos + i, "expected four hex digits after \\u, found " + found(pos + i));
    }
    v = v * 16 + d;
  }
  return v;
}

// Decodes the escape at `read` (on its backslash) to `write`; returns the new
// write position. The decoded form is never longer than the escape.
size_t Parser::escape(size_t& read, size_t write) {
  const char e = read + 1 < n_ ? s_[read + 1] : '\0';
  static const char kFrom[] = "\"\\/bfnrt", kTo[] = "\"\\/\b\f\n\r\t";
  if (const char* m = e ? std::strchr(kFrom, e) : nullptr) {
    s_[write] = kTo[m - kFrom];
    read += 2;
    return write + 1;
  }
  if (e != 'u') {
    const auto c = static_cast<unsigned char>(e);
    fail_at(read, c > 0x20 && c < 0x7f ? std::string("invalid escape '\\") + e + "' in a string"
                                       : "a backslash before " + found(read + 1) + " in a string");
  }
  unsigned cp = hex4(read + 2);
  const size_t at = read;
  read += 6;
  if (cp >= 0xDC00 && cp <= 0xDFFF) fail_at(at, "a \\u escape of a lone low surrogate");
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    if (!(read + 1 < n_ && s_[read] == '\\' && s_[read + 1] == 'u'))
      fail_at(at, "a high surrogate \\u escape without its low surrogate");
    const unsigned low = hex4(read + 2);
    if (low < 0xDC00 || low > 0xDFFF)
      fail_at(at, "a high surrogate \\u escape without its low surrogate");
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    read += 6;
  }
  auto put = [&](unsigned byte) { s_[write++] = static_cast<char>(byte); };
  if (cp < 0x80) {
    put(cp);
  } else if (cp < 0x800) {
    put(0xC0 | cp >> 6), put(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    put(0xE0 | cp >> 12), put(0x80 | (cp >> 6 & 0x3F)), put(0x80 | (cp & 0x3F));
  } else {
    put(0xF0 | cp >> 18), put(0x80 | (cp >> 12 & 0x3F)), put(0x80 | (cp >> 6 & 0x3F));
    put(0x80 | (cp & 0x3F));
  }
  return write;
}

// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
void Parser::number() {
  const size_t start = pos_;
  // The text's terminating NUL is not a digit: the loops stop at the end.
  auto digits = [&](const char* after) {
    const size_t first = pos_;
    while (s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    if (pos_ == first) expected_digit(after);
  };
  if (s_[pos_] == '-') ++pos_;
  if (s_[pos_] == '0') {
    ++pos_;
  } else {
    digits("in a number");
  }
  bool integer = true;
  if (pos_ < n_ && s_[pos_] == '.') {
    ++pos_;
    digits("after the decimal point");
    integer = false;
  }
  if (pos_ < n_ && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
    ++pos_;
    if (pos_ < n_ && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
    digits("in the exponent");
    integer = false;
  }
  const double v = number_value(start, integer);
  const uint32_t self = push(Kind::kNumber);
  nodes_[self].number = v;
  close(self, 0);
}

// The double nearest to the number [start, pos_) (what nlohmann stores: an
// integer's exact value rounded to a double, +0 for "-0"); a number beyond a
// double's range is an error, one that underflows is 0.
double Parser::number_value(size_t start, bool integer) const {
  double v = 0;
  const auto r = std::from_chars(s_ + start, s_ + pos_, v);
  if (r.ec == std::errc::result_out_of_range) {
    // Overflow or underflow: strtod tells which (inf or 0). It reads the
    // locale's decimal point, so the copy carries that one.
    std::string copy(s_ + start, pos_ - start);
    for (char& c : copy) c = c == '.' ? *std::localeconv()->decimal_point : c;
    v = std::strtod(copy.c_str(), nullptr);
  }
  if (!std::isfinite(v)) {
    const std::string token(s_ + start, std::min<size_t>(pos_ - start, 40));
    fail_at(start, "number overflow parsing '" + token + (pos_ - start > 40 ? "...'" : "'"));
  }
  if (integer && v == 0) v = 0;  // "-0" is the integer 0
  return v;
}

Document::Document(std::string text, const std::string& source) : text_(std::move(text)) {
  if (text_.size() >= kMaxTextBytes)
    throw UsageError(source + ": a JSON text of 1 GiB or more is not read");
  // A generated scenario takes about 9 bytes of text a node; the reserve
  // avoids copying the tape as it grows, and pages never written cost no memory.
  nodes_.reserve(text_.size() / 6 + 16);
  Parser(*this, source).run();
}

}  // namespace slowpipe::netmodel::json
