// The command-line program as a library: the command tree and cli::run.
#include "cli/app.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>

#include "cli/command.h"
#include "cli/output.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/version.h"

namespace gpt2lab::cli {

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

void add_threads_flag(CLI::App* sub, int& threads) {
  sub->add_option("--threads", threads, "Threads for kernels and BLAS (0 = all cores)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
}

namespace {

// CLI11 converts numbers leniently: hex (0x10), and 64-bit values that
// saturate silently (--steps 2^63 became 2^63 - 1). Every numeric option
// gets a strict check of the text first: plain decimal (with a fraction and
// exponent for reals), within the 64-bit range; the option's own range
// check (and the library's validation) then applies as before.
std::string strict_number(const std::string& s, const std::string& type) {
  const char* b = s.data();
  const char* e = s.data() + s.size();
  bool ok = false;
  if (type == "UINT") {
    uint64_t v;
    const auto r = std::from_chars(b, e, v);
    ok = r.ec == std::errc() && r.ptr == e;
  } else if (type == "INT") {
    int64_t v;
    const auto r = std::from_chars(b, e, v);
    ok = r.ec == std::errc() && r.ptr == e;
  } else {
    double v;
    const auto r = std::from_chars(b, e, v, std::chars_format::general);
    ok = r.ec == std::errc() && r.ptr == e;
  }
  if (ok && !s.empty()) return "";
  return "'" + s + "' is not a " + (type == "FLOAT" ? std::string("decimal number") : "decimal integer") +
         (type == "FLOAT" ? "" : " within 64 bits");
}

void add_strict_number_checks(CLI::App* app) {
  for (CLI::Option* opt : app->get_options()) {
    const std::string type = opt->get_type_name();
    if (type != "INT" && type != "UINT" && type != "FLOAT") continue;
    opt->check(CLI::Validator([type](std::string& s) { return strict_number(s, type); }, ""));
  }
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) add_strict_number_checks(sub);
}

int report_lost_output() {
  std::fprintf(stderr, "gpt2lab: error: cannot write standard output: %s (disk full, or the reader went away?)\n",
               errno ? std::strerror(errno) : "write failed");
  return 1;
}

}  // namespace

CLI::Validator uint64_text() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        uint64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || end != s.data() + s.size())
          return "'" + s + "' is not an integer in [0, 18446744073709551615]";
        return "";
      },
      "UINT64");
}

void build_app(CLI::App& app) {
  app.require_subcommand(1);
  // A repeated flag takes its last value, as most command lines do (a
  // script appends an override); list options still collect every value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_version_flag("--version", GPT2LAB_VERSION);
  auto& commands = registry();
  std::sort(commands.begin(), commands.end(), [](const Command& a, const Command& b) { return a.order < b.order; });
  for (auto& c : commands) c.add(app);
  add_strict_number_checks(&app);
}

int run(int argc, char** argv) {
  CLI::App app{"gpt2lab " GPT2LAB_VERSION ": train, sample and study GPT-2 models (Pre-LN/Post-LN, init schemes)",
               "gpt2lab"};
  build_app(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    if (!close_stdout() && code == 0) return report_lost_output();
    return code;
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "gpt2lab: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "gpt2lab: error: out of memory\n");
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path that cannot be resolved or listed (the working directory was
    // deleted, a permission): the user's environment, not our bug.
    std::fflush(stdout);
    std::fprintf(stderr, "gpt2lab: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt2lab: internal error: %s\n", e.what());
    return 3;
  }
  // Every command's output is checked here once more: printf's errors are
  // sticky on the stream, and the last buffer is only written at the flush.
  if (!close_stdout()) return report_lost_output();
  return 0;
}

}  // namespace gpt2lab::cli
