//===- DimOptions.cpp - --dim NAME=MIN..MAX as options ---------------------===//
#include "compiler/driver/DimOptions.h"

#include "compiler/support/Error.h"

#include <cstdlib>

namespace mlcc {

namespace {

/// Parses "MIN..MAX"; false when `text` is not a range.
bool parseRange(const std::string &name, const std::string &text, int64_t &lo, int64_t &hi) {
  auto dots = text.find("..");
  if (dots == std::string::npos)
    return false;
  auto number = [&](const std::string &s, int64_t &v) {
    char *end = nullptr;
    long long x = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end || x < 0)
      fail(ErrorKind::Usage) << "--dim " << name << "=" << text
                             << ": expected a range MIN..MAX of non-negative integers";
    v = x;
  };
  number(text.substr(0, dots), lo);
  number(text.substr(dots + 2), hi);
  if (lo > hi)
    fail(ErrorKind::Usage) << "--dim " << name << "=" << text << ": the range is empty (MIN "
                           << lo << " is greater than MAX " << hi << ")";
  return true;
}

} // namespace

std::string flagText(const ir::BoundedDim &d) {
  return "--dim " + d.Name + "=" + std::to_string(d.Min) + ".." + std::to_string(d.Max);
}

void failRangeHere(const ir::BoundedDim &d) {
  fail(ErrorKind::Unsupported)
      << flagText(d) << ": this step loads the model at one value of each dimension (--dim "
      << d.Name << "=VALUE)";
  std::abort(); // not reached: fail throws
}

std::vector<ir::BoundedDim> boundedDims(const CompileOptions &o) {
  std::vector<ir::BoundedDim> dims;
  for (const std::string &d : o.Dims) {
    auto eq = d.find('=');
    if (eq == std::string::npos)
      continue; // loadOptions names the error
    ir::BoundedDim b;
    b.Name = d.substr(0, eq);
    if (parseRange(b.Name, d.substr(eq + 1), b.Min, b.Max))
      dims.push_back(b);
  }
  return dims;
}

CompileOptions atValues(const CompileOptions &o, const std::vector<ir::BoundedDim> &dims,
                       const std::vector<int64_t> &values) {
  CompileOptions p = o;
  for (std::string &d : p.Dims) {
    auto eq = d.find('=');
    if (eq == std::string::npos)
      continue;
    for (size_t k = 0; k < dims.size(); ++k)
      if (d.substr(0, eq) == dims[k].Name)
        d = dims[k].Name + "=" + std::to_string(values[k]);
  }
  return p;
}

} // namespace mlcc
