#include "compiler/kernel/Schedule.h"

namespace mlcc::kir {

void scheduleProgram(Program &p, const TargetDesc &t) {
  for (auto &k : p.Kernels) {
    k = vectorize(collapse(k), t);
    if (t.VectorBytes > 0) // application processors; not microcontrollers
      k = parallelize(k);
  }
}

} // namespace mlcc::kir
