#include "gpt2lab/train/schedule.h"

#include <algorithm>
#include <cmath>

#include "gpt2lab/core/error.h"

namespace gpt2lab {

ScheduleKind parse_schedule(const std::string& s) {
  if (s == "cosine") return ScheduleKind::cosine;
  if (s == "linear") return ScheduleKind::linear;
  if (s == "constant") return ScheduleKind::constant;
  throw Error("schedule: '" + s + "' is not a schedule (use cosine, linear or constant)");
}

const char* to_string(ScheduleKind k) {
  switch (k) {
    case ScheduleKind::cosine: return "cosine";
    case ScheduleKind::linear: return "linear";
    case ScheduleKind::constant: return "constant";
  }
  return "?";
}

double LrSchedule::at(long step) const {
  if (step < warmup) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (kind == ScheduleKind::constant) return lr;
  const long span = std::max(1L, steps - warmup);
  const double ratio = std::clamp(static_cast<double>(step - warmup) / static_cast<double>(span), 0.0, 1.0);
  if (kind == ScheduleKind::linear) return lr - (lr - min_lr) * ratio;
  const double coeff = 0.5 * (1.0 + std::cos(M_PI * ratio));
  return min_lr + coeff * (lr - min_lr);
}

}  // namespace gpt2lab
