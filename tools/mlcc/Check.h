//===- Check.h - mlcc check: every kernel call against a reference --------===//
#pragma once

#include "tools/mlcc/Driver.h"

#include <CLI/CLI.hpp>

namespace mlcc {

/// The options that say how a model is compiled (main.cpp): `mlcc` and
/// `mlcc check` share them.
void addCompileOptions(CLI::App &app, DriverOptions &o);

/// `mlcc check ARGS` (argv[0] is "check"): returns the exit status.
int checkMain(int argc, char **argv);

} // namespace mlcc
