#include "compiler/kernel/Schedule.h"

namespace mlcc::kir {

void scheduleProgram(Program &p, const TargetDesc &t) {
  for (auto &k : p.Kernels) {
    if (hasSubByte(k)) { // stores share bytes: in order, one element at a time
      k = expandSubByte(collapse(k));
      continue;
    }
    k = vectorize(collapse(k), t);
    if (t.VectorBytes > 0) // application processors; not microcontrollers
      k = parallelize(k);
  }
}

} // namespace mlcc::kir
