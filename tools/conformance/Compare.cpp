#include "tools/conformance/Compare.h"

#include <cmath>
#include <sstream>

namespace mlcc::test {

std::string compareTensor(const Tensor &expected, const std::string &actualBytes,
                          const Tolerance &tol) {
  DType t = expected.dtype();
  size_t esize = dtypeSize(t);
  int64_t n = expected.numel();
  if (actualBytes.size() != (size_t)n * esize) {
    std::ostringstream os;
    os << "size mismatch: got " << actualBytes.size() << " bytes, expected "
       << n * (int64_t)esize << " (" << dtypeName(t)
       << shapeToString(expected.shape()) << ")";
    return os.str();
  }
  int64_t bad = 0, first = -1;
  double firstA = 0, firstE = 0;
  for (int64_t i = 0; i < n; ++i) {
    const void *p = actualBytes.data() + i * (int64_t)esize;
    bool ok;
    double a, e;
    if (isFloat(t)) {
      a = loadScalarDouble(t, p);
      e = expected.doubleAt(i);
      if (std::isnan(e))
        ok = std::isnan(a);
      else if (std::isinf(e))
        ok = a == e;
      else
        ok = std::fabs(a - e) <= tol.Atol + tol.Rtol * std::fabs(e);
    } else {
      int64_t ai = loadScalarInt(t, p), ei = expected.intAt(i);
      ok = ai == ei;
      a = (double)ai;
      e = (double)ei;
    }
    if (!ok) {
      if (first < 0) {
        first = i;
        firstA = a;
        firstE = e;
      }
      ++bad;
    }
  }
  if (!bad)
    return "";
  std::ostringstream os;
  os.precision(9);
  os << bad << " of " << n << " elements differ; first at flat index " << first
     << ": got " << firstA << ", expected " << firstE;
  if (isFloat(t))
    os << " (rtol " << tol.Rtol << ", atol " << tol.Atol << ")";
  return os.str();
}

} // namespace mlcc::test
