// Opt-in time per op of a training step, for finding what to speed up
// (train_bench --profile). A lap clock: each lap(name) charges the time since
// the previous lap to `name`, so one line after each op times it. Off by
// default, and then a lap is one test of a global bool.
//
// Only for serial code (never inside a parallel region): the clock and the
// table are not synchronized.
#pragma once

#include <string>
#include <vector>

namespace gpt2lab::op_profile {

struct Entry {
  std::string name;
  double ms = 0;  // total since the last reset
  long calls = 0;
};

extern bool g_enabled;

// Turns timing on or off, and clears the table and the clock.
void enable(bool on);
void reset();
void lap_slow(const char* name);
// Entries in order of first appearance.
std::vector<Entry> entries();

// Charges the time since the previous lap to `name`; a null name only
// restarts the clock (time that belongs to no op).
inline void lap(const char* name) {
  if (g_enabled) lap_slow(name);
}

}  // namespace gpt2lab::op_profile
