#include "tools/conformance/Compare.h"

#include <cmath>
#include <optional>
#include <sstream>

namespace mlcc::test {

std::string compareTensor(const Tensor &expected, const std::string &actualBytes,
                          const Tolerance &tol) {
  DType t = expected.dtype();
  int64_t n = expected.numel();
  const int64_t want = storageBytes(t, n);
  if ((int64_t)actualBytes.size() != want) {
    std::ostringstream os;
    os << "size mismatch: got " << actualBytes.size() << " bytes, expected "
       << want << " (" << dtypeName(t) << shapeToString(expected.shape()) << ")";
    return os.str();
  }
  // Packed elements are compared by value (the last byte's unused bits are
  // not part of the tensor).
  std::optional<Tensor> packed;
  if (isSubByte(t))
    packed.emplace(t, expected.shape(),
                   std::vector<uint8_t>(actualBytes.begin(), actualBytes.end()));
  size_t esize = dtypeSize(t);
  int64_t bad = 0, first = -1;
  double firstA = 0, firstE = 0;
  for (int64_t i = 0; i < n; ++i) {
    const void *p = actualBytes.data() + i * (int64_t)esize;
    bool ok;
    double a, e;
    if (isFloat(t)) {
      a = packed ? packed->doubleAt(i) : loadScalarDouble(t, p);
      e = expected.doubleAt(i);
      if (std::isnan(e))
        ok = std::isnan(a);
      else if (std::isinf(e))
        ok = a == e;
      else
        ok = std::fabs(a - e) <= tol.Atol + tol.Rtol * std::fabs(e);
    } else {
      int64_t ai = packed ? packed->intAt(i) : loadScalarInt(t, p), ei = expected.intAt(i);
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
