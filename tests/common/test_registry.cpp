// Registry<Entry>: the name -> entry table every plug-in family uses.
#include <catch2/catch.hpp>
#include <cctype>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/registry.h"

namespace {

struct Thing {
  std::string name;
  std::string description;
  int value = 0;
};

slowpipe::Registry<Thing> sample() {
  slowpipe::Registry<Thing> r("thing");
  r.add({"alpha", "the first", 1});
  r.add({"beta", "the second", 2});
  r.add({"gamma", "the third", 3});
  return r;
}

}  // namespace

TEST_CASE("Registry: entries in registration order, found by name") {
  const auto r = sample();
  CHECK(r.names() == std::vector<std::string>{"alpha", "beta", "gamma"});
  CHECK(r.size() == 3);
  REQUIRE(r.find("beta") != nullptr);
  CHECK(r.find("beta")->value == 2);
  CHECK(r.find("delta") == nullptr);
  CHECK(r.find("") == nullptr);
  CHECK(r.at("x.key", "gamma").description == "the third");
  std::vector<int> values;
  for (const Thing& t : r) values.push_back(t.value);
  CHECK(values == std::vector<int>{1, 2, 3});
  CHECK(r.known() == "alpha, beta, gamma");
  CHECK(r.known(" | ") == "alpha | beta | gamma");
}

TEST_CASE("Registry: an unknown name is a UsageError naming the key and listing the names") {
  const auto r = sample();
  CHECK_THROWS_AS(r.at("x.key", "delta"), slowpipe::UsageError);
  CHECK_THROWS_WITH(r.at("x.key", "delta"),
                    "bad value for 'x.key': unknown thing 'delta' (known: alpha, beta, gamma)");
  CHECK_THROWS_WITH(r.unknown("x.key", "delta:3"), Catch::Contains("unknown thing 'delta:3'"));
}

TEST_CASE("Registry: a duplicate or empty name is a programming error") {
  auto r = sample();
  CHECK_THROWS_AS(r.add({"beta", "again", 9}), std::logic_error);
  CHECK_THROWS_WITH(r.add({"beta", "again", 9}), "thing registered twice: beta");
  CHECK_THROWS_AS(r.add({"", "nameless", 0}), std::logic_error);
  CHECK(r.size() == 3);
  CHECK(r.find("beta")->value == 2);  // the first registration stays
}

TEST_CASE("Registry: found entries stay valid when more are added") {
  auto r = sample();
  const Thing* alpha = r.find("alpha");
  for (int i = 0; i < 1000; ++i) r.add({"t" + std::to_string(i), "filler", i});
  CHECK(r.find("alpha") == alpha);
  CHECK(alpha->value == 1);
  CHECK(r.names().back() == "t999");
}

TEST_CASE("Registry: a key function folds a pattern into one entry, a label lists it") {
  // As the codec family does: q1..q8 are the entry "q".
  slowpipe::Registry<Thing> r(
      "codec",
      [](const std::string& n) {
        return n.size() >= 2 && n[0] == 'q' && std::isdigit(static_cast<unsigned char>(n[1]))
                   ? std::string("q")
                   : n;
      },
      [](const Thing& t) { return t.name == "q" ? std::string("q1..q8") : t.name; });
  r.add({"none", "fp32", 0});
  r.add({"q", "quantizer", 1});
  CHECK(r.find("q4") == r.find("q"));
  CHECK(r.find("q4")->value == 1);
  CHECK(r.find("qx") == nullptr);
  CHECK(r.known() == "none, q1..q8");
  CHECK(r.names() == std::vector<std::string>{"none", "q"});
  CHECK_THROWS_WITH(r.at("k", "zz"), Catch::Contains("(known: none, q1..q8)"));
}

TEST_CASE("Registry: built-ins given to the constructor go through add") {
  const slowpipe::Registry<Thing> r("thing", {{"a", "one", 1}, {"b", "two", 2}});
  CHECK(r.names() == std::vector<std::string>{"a", "b"});
  using Dup = slowpipe::Registry<Thing>;
  CHECK_THROWS_AS(Dup("thing", {{"a", "one", 1}, {"a", "again", 2}}), std::logic_error);
}

namespace {

int fills = 0;
void register_thing(Thing thing);

void register_builtin_things() {
  ++fills;
  register_thing({"one", "a built-in", 1});
  register_thing({"two", "another built-in", 2});
}

slowpipe::Registry<Thing>& things() {
  static slowpipe::LazyRegistry<Thing> lazy("thing", &register_builtin_things);
  return lazy.get();
}

void register_thing(Thing thing) {
  things().add(std::move(thing));
}

}  // namespace

TEST_CASE("LazyRegistry: built-ins fill once on first use, through the family's register") {
  CHECK(fills == 0);
  register_thing({"outside", "added by outside code", 3});  // the first use fills first
  CHECK(fills == 1);
  CHECK(things().names() == std::vector<std::string>{"one", "two", "outside"});
  CHECK(things().size() == 3);
  CHECK(fills == 1);
  CHECK_THROWS_AS(register_thing({"one", "again", 4}), std::logic_error);
}
