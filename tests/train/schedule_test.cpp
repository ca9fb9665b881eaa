// The learning-rate schedules against their formulas at the points where
// they change shape: warmup's first and last step, the end of warmup, the
// middle and end of the decay, past the end, min_lr, and a resumed run
// (the schedule is a function of the step alone, so a run resumed at step
// s gets what an uninterrupted one gets).
#include <gtest/gtest.h>

#include <cmath>

#include "gpt2lab/core/error.h"
#include "gpt2lab/train/schedule.h"

namespace gpt2lab {
namespace {

LrSchedule make(ScheduleKind kind, long warmup, long steps, double lr = 1e-3, double min_lr = 1e-4) {
  LrSchedule s;
  s.kind = kind;
  s.lr = lr;
  s.min_lr = min_lr;
  s.warmup = warmup;
  s.steps = steps;
  return s;
}

TEST(Schedule, WarmupIsLinearFromLrOverWarmup) {
  for (ScheduleKind k : {ScheduleKind::cosine, ScheduleKind::linear, ScheduleKind::constant}) {
    const LrSchedule s = make(k, 10, 110);
    EXPECT_DOUBLE_EQ(s.at(0), 1e-4) << to_string(k);  // lr·1/10: step 0 already moves
    EXPECT_DOUBLE_EQ(s.at(4), 5e-4) << to_string(k);
    EXPECT_DOUBLE_EQ(s.at(9), 1e-3) << to_string(k);  // the last warmup step reaches lr
  }
}

TEST(Schedule, CosineFallsFromLrToMinLr) {
  const LrSchedule s = make(ScheduleKind::cosine, 10, 110);
  EXPECT_DOUBLE_EQ(s.at(10), 1e-3);               // ratio 0
  EXPECT_DOUBLE_EQ(s.at(60), 1e-4 + 0.5 * 9e-4);  // ratio 1/2: cos(π/2) = 0
  EXPECT_NEAR(s.at(35), 1e-4 + 0.5 * (1 + std::cos(M_PI * 0.25)) * 9e-4, 1e-18);
  EXPECT_DOUBLE_EQ(s.at(110), 1e-4);  // ratio 1
  EXPECT_DOUBLE_EQ(s.at(500), 1e-4);  // past the end: stays at min_lr
}

TEST(Schedule, LinearFallsFromLrToMinLr) {
  const LrSchedule s = make(ScheduleKind::linear, 0, 100);
  EXPECT_DOUBLE_EQ(s.at(0), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(25), 1e-3 - 9e-4 * 0.25);
  EXPECT_DOUBLE_EQ(s.at(100), 1e-4);
  EXPECT_DOUBLE_EQ(s.at(1000), 1e-4);
}

TEST(Schedule, ConstantStaysAtLrAfterWarmup) {
  const LrSchedule s = make(ScheduleKind::constant, 5, 100);
  for (long step : {5L, 50L, 99L, 100L, 10000L}) EXPECT_DOUBLE_EQ(s.at(step), 1e-3) << step;
}

TEST(Schedule, MinLrEqualToLrIsConstant) {
  const LrSchedule s = make(ScheduleKind::cosine, 0, 100, 3e-4, 3e-4);
  for (long step : {0L, 33L, 100L}) EXPECT_DOUBLE_EQ(s.at(step), 3e-4) << step;
}

TEST(Schedule, WarmupAsLongAsTheRunNeverDividesByZero) {
  const LrSchedule s = make(ScheduleKind::cosine, 100, 100);
  EXPECT_DOUBLE_EQ(s.at(99), 1e-3);
  EXPECT_TRUE(std::isfinite(s.at(100)));
  EXPECT_DOUBLE_EQ(s.at(101), 1e-4);  // the span is clamped to one step
}

TEST(Schedule, ResumedMidScheduleEqualsUninterrupted) {
  // A resumed run rebuilds the schedule from its recorded options and asks
  // for the step it is at; nothing else carries over.
  const LrSchedule whole = make(ScheduleKind::cosine, 20, 300);
  const LrSchedule resumed = make(ScheduleKind::cosine, 20, 300);
  for (long step = 150; step < 300; ++step) ASSERT_EQ(whole.at(step), resumed.at(step)) << step;
}

TEST(Schedule, NamesRoundTripAndUnknownIsRefused) {
  for (ScheduleKind k : {ScheduleKind::cosine, ScheduleKind::linear, ScheduleKind::constant})
    EXPECT_EQ(parse_schedule(to_string(k)), k);
  EXPECT_THROW(parse_schedule("exponential"), Error);
}

}  // namespace
}  // namespace gpt2lab
