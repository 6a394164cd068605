// Recursive-descent parser for the spec grammar in spec.h. Positions are
// 1-based character offsets into the spec text, as users count them.
#include "compressors/codecs/spec.h"

#include <cctype>

#include "common/errors.h"

namespace slowpipe::compressors {

void spec_error(const std::string& text, size_t pos, const std::string& what) {
  throw UsageError("bad spec '" + text + "' at position " + std::to_string(pos) + ": " + what);
}

namespace {

bool is_name_char(char c) {
  return std::islower(static_cast<unsigned char>(c)) ||
         std::isdigit(static_cast<unsigned char>(c)) || c == '_';
}
bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  SpecTree parse() {
    SpecTree tree;
    tree.text = text_;
    if (text_.empty()) fail("expected a codec name such as 'q4' or 'none', got an empty spec");
    // A scheme is a name directly followed by '('.
    size_t name_end = i_;
    while (name_end < text_.size() && is_name_char(text_[name_end])) ++name_end;
    if (name_end < text_.size() && text_[name_end] == '(') {
      tree.scheme_pos = i_ + 1;
      tree.scheme = text_.substr(i_, name_end - i_);
      if (tree.scheme.empty()) fail("expected a scheme name before '('");
      i_ = name_end + 1;
      parse_codec(tree);
      if (i_ >= text_.size() || text_[i_] != ')')
        fail("expected ')' closing '" + tree.scheme + "('");
      ++i_;
    } else {
      tree.scheme = "direct";
      parse_codec(tree);
    }
    if (i_ < text_.size()) fail("expected end of spec");
    return tree;
  }

 private:
  void parse_codec(SpecTree& tree) {
    tree.stages.push_back(parse_stage());
    if (i_ < text_.size() && text_[i_] == '+') {
      tree.plus_pos = i_ + 1;
      ++i_;
      tree.stages.push_back(parse_stage());
      if (i_ < text_.size() && text_[i_] == '+')
        fail("expected at most two stages (sparsifier '+' value codec)");
    }
  }

  SpecStage parse_stage() {
    SpecStage stage;
    stage.pos = i_ + 1;
    size_t start = i_;
    while (i_ < text_.size() && is_name_char(text_[i_])) ++i_;
    if (i_ == start) fail("expected a codec name (lower-case letters and digits)");
    if (!std::islower(static_cast<unsigned char>(text_[start]))) {
      i_ = start;
      fail("expected a codec name starting with a letter");
    }
    stage.name = text_.substr(start, i_ - start);
    if (i_ < text_.size() && text_[i_] == '(') fail("a scheme can only wrap the whole spec");
    while (i_ < text_.size() && text_[i_] == ':') {
      ++i_;
      stage.args.push_back(parse_arg());
    }
    return stage;
  }

  SpecArg parse_arg() {
    SpecArg arg;
    arg.pos = i_ + 1;
    std::string first = parse_word("an argument after ':'");
    if (i_ < text_.size() && text_[i_] == '=') {
      ++i_;
      arg.key = first;
      arg.value = parse_word("a value after '='");
    } else {
      arg.value = first;
    }
    return arg;
  }

  std::string parse_word(const std::string& what) {
    size_t start = i_;
    while (i_ < text_.size() && is_word_char(text_[i_])) ++i_;
    if (i_ == start) fail("expected " + what);
    return text_.substr(start, i_ - start);
  }

  [[noreturn]] void fail(const std::string& expected) {
    std::string got = i_ < text_.size() ? "'" + std::string(1, text_[i_]) + "'" : "end of spec";
    spec_error(text_, i_ + 1, expected + ", got " + got);
  }

  const std::string& text_;
  size_t i_ = 0;
};

}  // namespace

SpecTree parse_spec(const std::string& text) {
  return Parser(text).parse();
}

}  // namespace slowpipe::compressors
