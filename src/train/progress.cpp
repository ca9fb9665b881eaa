#include "gpt2lab/train/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

namespace gpt2lab {

namespace {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

class StderrProgress {
 public:
  explicit StderrProgress(long log_every) : log_every_(log_every), tty_(isatty(STDERR_FILENO)) {}

  void operator()(const TrainEvent& e) {
    using K = TrainEvent::Kind;
    switch (e.kind) {
      case K::note: return line("note: " + e.text);
      case K::start: return line("train: " + e.text);
      case K::eval: {
        char text[64];
        std::snprintf(text, sizeof text, "step %ld: val loss %.4f", e.step, e.val_loss);
        return line(text);
      }
      case K::step: return step(e);
      case K::diverged:
        return line("train: diverged at step " + std::to_string(e.step) + " (" + e.text +
                    "); last good checkpoint kept");
      case K::interrupted: return line("train: interrupted, checkpoint saved at step " + std::to_string(e.step));
      case K::complete:
        return line("train: run already complete at step " + std::to_string(e.step) + " (raise --steps to continue)");
      case K::done: {
        char loss[64];
        std::snprintf(loss, sizeof loss, "loss %.4f", e.loss);
        return line("train: done, " + std::to_string(e.step) + " steps, " + loss +
                    (e.val_loss >= 0 ? ", val loss " + std::to_string(e.val_loss) : "") + "; checkpoint in " + e.text);
      }
    }
  }

 private:
  // A message after a rewritten progress line starts on a line of its own.
  void line(const std::string& text) {
    if (in_place_) std::fputc('\n', stderr);
    in_place_ = false;
    std::fprintf(stderr, "%s\n", text.c_str());
  }

  // On a terminal the live line is rewritten in place, within its width,
  // and every log_every-th step stays as a line of the history; elsewhere
  // only those lines are written.
  void step(const TrainEvent& e) {
    char text[256];
    std::snprintf(text, sizeof text, "step %ld/%ld | loss %.4f | lr %.2e | grad %.3f | %.0f tok/s | ETA %s", e.step,
                  e.steps, e.loss, e.lr, e.grad_norm, e.tokens_per_s, format_duration(e.eta_s).c_str());
    const bool logged = log_every_ > 0 && (e.step % log_every_ == 0 || e.step == e.steps || e.first);
    if (!tty_) {
      if (logged) std::fprintf(stderr, "%s\n", text);
      return;
    }
    const int width = terminal_width();
    std::string shown(text);
    if (static_cast<int>(shown.size()) > width - 1) shown.resize(static_cast<size_t>(std::max(width - 1, 1)));
    // \r then the text, then clear what a longer earlier line left (\033[K).
    std::fprintf(stderr, "\r%s\033[K%s", shown.c_str(), logged ? "\n" : "");
    in_place_ = !logged;
  }

  static int terminal_width() {
    winsize ws{};
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 80;
  }

  long log_every_;
  bool tty_;
  bool in_place_ = false;
};

}  // namespace

ProgressFn stderr_progress(long log_every) {
  auto printer = std::make_shared<StderrProgress>(log_every);
  return [printer](const TrainEvent& e) { (*printer)(e); };
}

}  // namespace gpt2lab
