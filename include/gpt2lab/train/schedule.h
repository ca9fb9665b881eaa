// Learning-rate schedules: linear warmup lr * (step + 1) / warmup, then
// cosine (to min_lr at `steps`), linear (to min_lr) or constant.
#pragma once

#include <string>

namespace gpt2lab {

enum class ScheduleKind { cosine, linear, constant };
ScheduleKind parse_schedule(const std::string& s);  // throws Error
const char* to_string(ScheduleKind k);

struct LrSchedule {
  ScheduleKind kind = ScheduleKind::cosine;
  double lr = 6e-4, min_lr = 6e-5;
  long warmup = 0, steps = 1000;

  // Learning rate for 0-based step.
  double at(long step) const;
};

}  // namespace gpt2lab
