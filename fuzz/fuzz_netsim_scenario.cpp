// libFuzzer target: the netsim scenario reader (netmodel/netsim_scenario.cpp)
// on arbitrary bytes, and the simulation and table of every scenario it
// accepts.
//
// Expected outcomes: a UsageError (the scenario is refused with a message) or
// a scenario that simulates. DataError is tolerated as documented ("a flow
// never finishes"), but for a scenario the reader accepted that is a bug: the
// reader's ranges guarantee every flow a positive rate and a finite finish, so
// it aborts here. Anything else (another exception, a sanitizer report, a
// table row without its newline) is a crash to fix. Inputs are capped at
// 64 KiB so one run stays fast.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "netmodel/netsim.h"

namespace {

[[noreturn]] void invariant_failed(const std::string& what) {
  std::fprintf(stderr, "fuzz_netsim_scenario: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace nm = slowpipe::netmodel;
  if (size > (64u << 10)) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  nm::Scenario scenario;
  try {
    scenario = nm::parse_scenario(text, "fuzz.json");
  } catch (const slowpipe::UsageError&) {
    return 0;
  } catch (const slowpipe::DataError&) {
    return 0;
  }
  std::ostringstream os;
  try {
    nm::run_scenario(scenario, os);
  } catch (const slowpipe::DataError& e) {
    invariant_failed(std::string("an accepted scenario has a flow that never finishes: ") +
                     e.what());
  }
  const std::string out = os.str();
  size_t lines = 0;
  for (char c : out) lines += c == '\n';
  // Summary line, header, one row per flow; the last ends in a newline.
  if (out.empty() || out.back() != '\n' || lines != scenario.flows.size() + 2)
    invariant_failed("table rows cut or missing");
  for (const nm::FlowResult& r : nm::simulate(scenario)) {
    if (!r.finished || !(r.finish_s >= r.start_s))
      invariant_failed("flow '" + r.name + "' never finishes or finishes before it starts");
  }
  return 0;
}
