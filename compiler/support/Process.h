//===- Process.h - Running a helper program -------------------------------===//
#pragma once

#include <string>
#include <vector>

namespace mlcc {

/// Runs argv[0] (searched in PATH) with the arguments, without a shell.
/// Returns the exit status (or 128+signal); `output` receives stdout and
/// stderr combined when non-null.
int runProcess(const std::vector<std::string> &argv, std::string *output = nullptr,
               const std::string &cwd = "");

} // namespace mlcc
