//===- Options.h - The command line's shared options and mlcc check -------===//
#pragma once

#include "mlcc/Compiler.h"

#include <CLI/CLI.hpp>

namespace mlcc {

/// The options that say how a model is compiled (main.cpp): `mlcc` and
/// `mlcc check` share them.
void addCompileOptions(CLI::App &app, CompileOptions &o);

/// The exit status of a command line CLI11 refused: --help and --version
/// print and give 0; anything else is bad usage, one line on stderr
/// ("mlcc: error: ..."), 2.
int parseErrorStatus(CLI::App &app, const CLI::ParseError &e);

/// `mlcc check ARGS` (argv[0] is "check"): returns the exit status.
int checkMain(int argc, char **argv);

/// `mlcc cycles ARGS` (argv[0] is "cycles"): returns the exit status.
int cyclesMain(int argc, char **argv);

} // namespace mlcc
