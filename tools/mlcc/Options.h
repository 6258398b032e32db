//===- Options.h - The command line's shared options and mlcc check -------===//
#pragma once

#include "mlcc/Compiler.h"

#include <CLI/CLI.hpp>

namespace mlcc {

/// The options that say how a model is compiled (main.cpp): `mlcc` and
/// `mlcc check` share them.
void addCompileOptions(CLI::App &app, CompileOptions &o);

/// `mlcc check ARGS` (argv[0] is "check"): returns the exit status.
int checkMain(int argc, char **argv);

/// `mlcc cycles ARGS` (argv[0] is "cycles"): returns the exit status.
int cyclesMain(int argc, char **argv);

} // namespace mlcc
