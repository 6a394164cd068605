// The strict JSON reader of netsim scenarios (netmodel/internal/netsim_json.h)
// against nlohmann-json, the reader it replaced: on random documents and
// random damage to them, it accepts exactly what nlohmann's strict parser plus
// the old checks (no key twice in one object, at most 32 levels) accepted,
// builds the same values (numbers bit for bit), and fails for the same kind of
// reason. Known, intended difference: a NUL byte is refused wherever it is
// (nlohmann reads it as the end of the text and ignores what follows).
#include <catch2/catch.hpp>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/errors.h"
#include "netmodel/internal/netsim_json.h"

namespace js = slowpipe::netmodel::json;
using Json = nlohmann::json;

namespace {

enum class Verdict { kAccepted, kSyntax, kDuplicateKey, kTooDeep };

// The old reader: nlohmann's SAX DOM builder plus the duplicate-key and depth checks.
class ReferenceChecker : public nlohmann::json_sax<Json> {
 public:
  explicit ReferenceChecker(Json& doc) : dom_(doc, true) {}
  Verdict verdict = Verdict::kAccepted;
  bool null() override { return dom_.null(); }
  bool boolean(bool v) override { return dom_.boolean(v); }
  bool number_integer(number_integer_t v) override { return dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) override { return dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) override {
    return dom_.number_float(v, s);
  }
  bool string(string_t& v) override { return dom_.string(v); }
  bool binary(binary_t& v) override { return dom_.binary(v); }
  bool start_object(std::size_t n) override {
    open_.emplace_back();
    return enter() && dom_.start_object(n);
  }
  bool key(string_t& v) override {
    if (!open_.back().insert(v).second) return stop(Verdict::kDuplicateKey);
    return dom_.key(v);
  }
  bool end_object() override {
    open_.pop_back(), --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) override {
    open_.emplace_back();
    return enter() && dom_.start_array(n);
  }
  bool end_array() override {
    open_.pop_back(), --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return stop(Verdict::kSyntax);
  }

 private:
  bool stop(Verdict v) {
    verdict = v;
    return false;
  }
  bool enter() { return ++depth_ <= js::kMaxJsonDepth || stop(Verdict::kTooDeep); }
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  std::vector<std::set<std::string>> open_;
  int depth_ = 0;
};

Verdict reference(const std::string& text, Json& doc) {
  if (text.find('\0') != std::string::npos) return Verdict::kSyntax;  // the intended difference
  ReferenceChecker checker(doc);
  const bool ok = Json::sax_parse(text, &checker);
  return ok ? Verdict::kAccepted : checker.verdict;
}

Verdict verdict_of(const std::string& message) {
  if (message.find(": not valid JSON: line ") != std::string::npos) return Verdict::kSyntax;
  if (message.find(": duplicate key '") != std::string::npos) return Verdict::kDuplicateKey;
  if (message.find(": nested deeper than 32 levels") != std::string::npos) return Verdict::kTooDeep;
  FAIL("unexpected message: " << message);
  return Verdict::kSyntax;
}

bool same_bits(double a, double b) {
  uint64_t x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y;
}

// The tape value `v` holds what nlohmann built.
bool same_value(const js::Value& v, const Json& j) {
  switch (v.kind()) {
    case js::Kind::kNull:
      return j.is_null();
    case js::Kind::kFalse:
      return j.is_boolean() && !j.get<bool>();
    case js::Kind::kTrue:
      return j.is_boolean() && j.get<bool>();
    case js::Kind::kNumber:
      return j.is_number() && same_bits(v.number(), j.get<double>());
    case js::Kind::kString:
      return j.is_string() && v.string() == j.get<std::string>();
    case js::Kind::kArray: {
      if (!j.is_array() || j.size() != v.size()) return false;
      size_t i = 0;
      bool same = true;
      js::for_each_element(v, [&](const js::Value& e) { same = same && same_value(e, j[i++]); });
      return same;
    }
    case js::Kind::kObject: {
      if (!j.is_object() || j.size() != v.size()) return false;
      bool same = true;
      js::for_each_member(v, [&](std::string_view key, const js::Value& m) {
        const auto it = j.find(std::string(key));
        same = same && it != j.end() && same_value(m, *it);
      });
      return same;
    }
  }
  return false;
}

// Random JSON-like text: mostly valid, with the corners a reader gets wrong.
class TextGen {
 public:
  explicit TextGen(uint64_t seed) : rng_(seed) {}
  std::string document() {
    std::string s;
    if (pick(20) == 0) s += pick(2) ? "\xEF\xBB\xBF" : "\xEF\xBB";
    ws(s);
    if (pick(25) == 0) {  // a chain around the depth limit
      std::string closers;
      for (size_t i = 28 + pick(9); i > 0; --i) {
        const bool array = pick(2);
        s += array ? "[" : "{\"k\":";
        closers += array ? ']' : '}';
      }
      value(s, 36);
      s.append(closers.rbegin(), closers.rend());
    } else {
      value(s, 0);
    }
    ws(s);
    return s;
  }
  std::string damaged(std::string s) {
    static const char kBytes[] = ",:[]{}\"\\ 0a1-.eE+u\t\n\xff\xc3\x80";
    for (int k = 1 + static_cast<int>(pick(3)); k > 0 && !s.empty(); --k) {
      const size_t at = pick(s.size());
      switch (pick(4)) {
        case 0:
          s.erase(at, 1);
          break;
        case 1:
          s.insert(at, 1, kBytes[pick(sizeof kBytes - 1)]);
          break;
        case 2:
          s[at] = kBytes[pick(sizeof kBytes - 1)];
          break;
        default:
          s.resize(at);
          break;
      }
    }
    return s;
  }

 private:
  size_t pick(size_t n) { return static_cast<size_t>(rng_() % n); }
  void ws(std::string& s) {
    static const char* const kWs[] = {"", "", " ", "\n", "\t", "\r\n  "};
    s += kWs[pick(6)];
  }
  void value(std::string& s, int depth) {
    size_t k = pick(6);  // 0, 1: containers, rarer below the third level
    if (depth > 36 || (depth > 3 && k < 2 && pick(2))) k = 2 + pick(4);
    if (k == 0 || k == 1) return container(s, depth, k == 0);
    if (k == 2 || k == 3) return string(s);
    if (k == 4) return number(s);
    static const char* const kLiterals[] = {"true", "false", "null", "tru", "nul", "True"};
    s += kLiterals[pick(8) == 0 ? 3 + pick(3) : pick(3)];
  }
  void container(std::string& s, int depth, bool object) {
    s += object ? '{' : '[';
    // Now and then a long one (the hash-set path of the duplicate check), or a deep chain.
    const size_t n = pick(30) == 0 ? 20 + pick(20) : pick(5);
    for (size_t i = 0; i < n; ++i) {
      ws(s);
      if (object) {
        key(s);
        ws(s);
        s += ':';
        ws(s);
      }
      value(s, depth + (pick(3) == 0 ? 0 : 1) + (pick(40) == 0 ? 30 : 0));
      ws(s);
      if (i + 1 < n) s += ',';
    }
    ws(s);
    s += object ? '}' : ']';
  }
  void key(std::string& s) {
    static const char* const kKeys[] = {"\"a\"", "\"b\"",       "\"name\"",    "\"n\\u0061me\"",
                                        "\"\"",  "\"\\u00e9\"", "\"\xc3\xa9\""};
    if (pick(3) == 0) return string(s);
    s += kKeys[pick(7)];
  }
  void string(std::string& s) {
    static const char* const kPieces[] = {
        "a", "Z", " ", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u00e9",
        "\\u4E2D", "\\ud83d\\ude00", "\\u0000", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80",
        "\x7f", "'", "/", "\\u0041",
        // invalid ones, rarer
        "\xff", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\\ud800", "\\udc00",
        "\\ud800\\u0041", "\\u12g4", "\\q", "\t", "\x01"};
    constexpr size_t kValid = 22, kAll = sizeof kPieces / sizeof kPieces[0];
    s += '"';
    for (size_t i = pick(6); i > 0; --i) s += kPieces[pick(12) == 0 ? pick(kAll) : pick(kValid)];
    s += '"';
  }
  void number(std::string& s) {
    static const char* const kNumbers[] = {
        "0", "-0", "-0.0", "0.0", "123", "-45", "1.5e3", "1E+2", "2.5e-3", "0.1", "1e308",
        "1.7976931348623157e308", "4.9e-324", "2.4703282292062327e-324", "1e-400", "-1e-400",
        "18446744073709551615", "18446744073709551616", "-9223372036854775808",
        "-9223372036854775809", "9007199254740993", "123456789012345678901234567890", "1e400",
        "-1e400", "1.7976931348623159e308",
        // invalid
        "01", "1.", ".5", "+1", "1e", "-", "1.5.3", "0x10", "1e+", "--1", "Infinity", "NaN"};
    constexpr size_t kValid = 25, kAll = sizeof kNumbers / sizeof kNumbers[0];
    if (pick(4) == 0) {  // random digits
      if (pick(2)) s += '-';
      s += std::to_string(rng_() >> pick(60));
      if (pick(2)) s += "." + std::to_string(rng_() % 100000);
      if (pick(3) == 0) s += "e" + std::to_string(static_cast<int>(pick(700)) - 350);
      return;
    }
    s += kNumbers[pick(10) == 0 ? pick(kAll) : pick(kValid)];
  }
  std::mt19937_64 rng_;
};

// Parses `text` both ways and checks that they agree.
void check_agrees(const std::string& text) {
  Json ref;
  const Verdict want = reference(text, ref);
  INFO("text: " << text);
  try {
    const js::Document doc(text, "t.json");
    REQUIRE(want == Verdict::kAccepted);
    CHECK(same_value(doc.root(), ref));
  } catch (const slowpipe::UsageError& e) {
    INFO("message: " << e.what());
    CHECK(verdict_of(e.what()) == want);
  }
}

std::string error_of(const std::string& text) {
  try {
    js::Document doc(text, "t.json");
  } catch (const slowpipe::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("Netsim JSON: accepts and refuses what nlohmann did, with the same values") {
  TextGen gen(20261126);
  size_t verdicts[4] = {}, bytes = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string doc = gen.document();
    const std::string text = i % 2 ? gen.damaged(doc) : doc;
    Json unused;
    ++verdicts[static_cast<int>(reference(text, unused))];
    bytes += text.size();
    check_agrees(text);
  }
  // Every outcome is well represented (else the comparison proves little).
  WARN("accepted " << verdicts[0] << ", syntax " << verdicts[1] << ", duplicate key " << verdicts[2]
                   << ", too deep " << verdicts[3] << "; " << bytes << " bytes");
  CHECK(verdicts[static_cast<int>(Verdict::kAccepted)] > 3000);
  CHECK(verdicts[static_cast<int>(Verdict::kSyntax)] > 3000);
  CHECK(verdicts[static_cast<int>(Verdict::kDuplicateKey)] > 100);
  CHECK(verdicts[static_cast<int>(Verdict::kTooDeep)] > 100);
}

TEST_CASE("Netsim JSON: numbers as nlohmann read them") {
  auto number = [](const std::string& text) {
    const js::Document doc("[" + text + "]", "t.json");
    return doc.root().first_child().number();
  };
  CHECK(!std::signbit(number("-0")));  // an integer: +0
  CHECK(std::signbit(number("-0.0")));
  CHECK(number("9007199254740993") == 9007199254740992.0);  // nearest, ties to even
  CHECK(number("18446744073709551616") == 18446744073709551616.0);
  CHECK(number("1e-400") == 0);
  CHECK(number("4.9e-324") > 0);
  CHECK_THAT(error_of("[1e400]"), Catch::Contains("number overflow parsing '1e400'"));
  CHECK_THAT(error_of("[-1" + std::string(400, '0') + "]"),
             Catch::Contains("number overflow") && Catch::Contains("...'"));
}

TEST_CASE("Netsim JSON: strings are decoded in place") {
  const js::Document doc(R"(["a\"b\\c\/d\n", "\u00e9\u4e2d\ud83d\ude00", "caf)"
                         "\xc3\xa9"
                         R"(", ""])",
                         "t.json");
  std::vector<std::string> got;
  js::for_each_element(doc.root(), [&](const js::Value& v) { got.emplace_back(v.string()); });
  REQUIRE(got.size() == 4);
  CHECK(got[0] == "a\"b\\c/d\n");
  CHECK(got[1] == "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80");
  CHECK(got[2] == "caf\xc3\xa9");
  CHECK(got[3].empty());
}

TEST_CASE("Netsim JSON: errors give the line and column, and say what was found") {
  CHECK_THAT(error_of("{\n  \"a\": 1\n  \"b\": 2}"),
             Catch::StartsWith("t.json: not valid JSON: line 3, column 3: expected ',' or '}'") &&
                 Catch::Contains("found '\"'"));
  CHECK_THAT(error_of(""),
             Catch::Contains("line 1, column 1") && Catch::Contains("found the end of the text"));
  CHECK_THAT(error_of("[\"abc"), Catch::Contains("without its closing quote"));
  CHECK_THAT(error_of("[\"a\tb\"]"), Catch::Contains("control character"));
  CHECK_THAT(error_of("[\"\\q\"]"), Catch::Contains("invalid escape '\\q'"));
  CHECK_THAT(error_of("[\"\\ud800\"]"), Catch::Contains("without its low surrogate"));
  CHECK_THAT(error_of("[\"\xff\"]"),
             Catch::Contains("invalid UTF-8") && Catch::Contains("byte 0xff"));
  CHECK_THAT(error_of("[tru]"), Catch::Contains("invalid literal (expected 'true')"));
  CHECK_THAT(error_of("[1] x"), Catch::Contains("after the top-level value"));
  CHECK_THAT(error_of(std::string("[1]\0x", 5)),
             Catch::Contains("found byte 0x00"));  // nlohmann stopped reading there
  CHECK_THAT(error_of("\xEF\xBB[1]"), Catch::Contains("found byte 0xef"));
  CHECK(error_of("\xEF\xBB\xBF[1]").empty());  // a whole byte order mark is skipped
}

TEST_CASE("Netsim JSON: duplicate keys and depth, in short and long objects") {
  CHECK_THAT(error_of(R"({"a": 1, "b": {"a": 2}, "a": 3})"),
             Catch::Equals("t.json: duplicate key 'a' in one object"));
  CHECK_THAT(error_of(R"({"name": 1, "n\u0061me": 2})"), Catch::Contains("duplicate key 'name'"));
  std::string many = "{";
  for (int i = 0; i < 100; ++i) many += "\"k" + std::to_string(i) + "\": 1, ";
  CHECK(error_of(many + "\"last\": 1}").empty());
  CHECK_THAT(error_of(many + "\"k57\": 1}"), Catch::Contains("duplicate key 'k57'"));
  // The same key in sibling objects is fine, also after a long one at that depth.
  CHECK(error_of("[" + many + "\"x\": 1}, {\"k57\": 1, \"x\": 2}]").empty());
  const std::string deep32 = std::string(32, '[') + std::string(32, ']');
  CHECK(error_of(deep32).empty());
  CHECK_THAT(error_of("[" + deep32 + "]"), Catch::Contains("nested deeper than 32 levels"));
}
