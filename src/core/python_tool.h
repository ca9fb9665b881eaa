// The Python tools gpt2lab runs (tools/report for a study, tools/plot for
// runs): where they are and how they are started. matplotlib lives in
// Python, so drawing does too; the C++ side only finds and launches it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gpt2lab {

// tools/NAME: $ENV_VAR if set, else share/gpt2lab/tools/NAME beside the
// program (see core/data_dir.h), never the source tree's by a compiled-in
// path.
std::filesystem::path python_tool(const std::string& name, const char* env_var);

// $GPT2LAB_PYTHON, else Debian's /usr/bin/python3 (the one with
// python3-matplotlib; a virtualenv's python3 first on PATH usually lacks it),
// else python3 on PATH.
std::string python_interpreter();

// Runs `python TOOL ARGS...` and waits. Returns true on exit 0; otherwise
// `message` says what failed and the command to rerun (exit 3 = matplotlib
// missing, by the tools' convention).
bool run_python_tool(const std::filesystem::path& tool, const std::vector<std::string>& args, std::string* message);

}  // namespace gpt2lab
