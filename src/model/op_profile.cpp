#include "model/op_profile.h"

#include <chrono>

namespace gpt2lab::op_profile {

bool g_enabled = false;

namespace {
using Clock = std::chrono::steady_clock;
Clock::time_point g_last;
std::vector<Entry> g_table;
}  // namespace

void enable(bool on) {
  g_enabled = on;
  reset();
}

void reset() {
  g_table.clear();
  g_last = Clock::now();
}

void lap_slow(const char* name) {
  const Clock::time_point now = Clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - g_last).count();
  g_last = now;
  if (!name) return;
  // A few dozen names at most: a linear search costs less than the clock read.
  for (Entry& e : g_table) {
    if (e.name == name) {
      e.ms += ms;
      ++e.calls;
      return;
    }
  }
  g_table.push_back({name, ms, 1});
}

std::vector<Entry> entries() { return g_table; }

}  // namespace gpt2lab::op_profile
