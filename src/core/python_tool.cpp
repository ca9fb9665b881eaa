#include "core/python_tool.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "core/data_dir.h"
#include "core/signals.h"

namespace gpt2lab {

namespace fs = std::filesystem;

fs::path python_tool(const std::string& name, const char* env_var) {
  if (const char* env = std::getenv(env_var); env && *env) return env;
  std::error_code ec;
  if (const auto share = installed_share_dir(); share && fs::exists(*share / "tools" / name, ec))
    return *share / "tools" / name;
  // Not found: where an installed program keeps it; run_python_tool says
  // it is missing, naming this path and the variables.
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return exe.parent_path().parent_path() / "share" / "gpt2lab" / "tools" / name;
}

std::string python_interpreter() {
  if (const char* env = std::getenv("GPT2LAB_PYTHON"); env && *env) return env;
  std::error_code ec;
  if (fs::exists("/usr/bin/python3", ec)) return "/usr/bin/python3";
  return "python3";
}

bool run_python_tool(const fs::path& tool, const std::vector<std::string>& args, std::string* message) {
  std::error_code ec;
  if (!fs::exists(tool, ec)) {
    *message = "'" + tool.string() +
               "' not found: set GPT2LAB_REPORT_SCRIPT (the study report) or GPT2LAB_PLOT_SCRIPT (plot) to the "
               "script in tools/ of the gpt2lab source, or install gpt2lab (share/gpt2lab/tools)";
    return false;
  }
  const std::string py = python_interpreter();
  std::vector<std::string> argv_s = {py, tool.string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::string rerun;
  for (const auto& a : argv_s) rerun += (rerun.empty() ? "" : " ") + a;
  std::vector<char*> argv;
  argv.reserve(argv_s.size() + 1);
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    *message = "cannot start " + py;
    return false;
  }
  if (pid == 0) {
    unblock_stop_signals_for_exec();
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "cannot run %s\n", py.c_str());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) break;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 3)
    *message = "matplotlib is missing for " + py + " (Debian: apt-get install python3-matplotlib); run later: " + rerun;
  else if (code == 127)
    *message = "cannot run " + py + " (install python3 or set GPT2LAB_PYTHON)";
  else
    *message = tool.filename().string() + " failed (exit " + std::to_string(code) + "); rerun: " + rerun;
  return false;
}

}  // namespace gpt2lab
