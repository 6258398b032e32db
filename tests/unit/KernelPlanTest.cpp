// ir::KernelPlan: what plan-kernels decides for a node, typed.
#include "compiler/ir/Graph.h"

#include <catch2/catch.hpp>

using namespace mlcc;

TEST_CASE("an empty plan prints nothing and equals the default", "[plan]") {
  ir::KernelPlan p;
  CHECK(p.empty());
  CHECK(p.str().empty());
  ir::Node n;
  CHECK(n.Plan.empty());
}

TEST_CASE("a plan prints what it decides", "[plan]") {
  ir::KernelPlan p;
  p.Register = ir::KernelPlan::Tile{16, 32, 6, 64, 96};
  p.PackedInput = 3;
  CHECK(!p.empty());
  CHECK(p.str() == "plan{tile=6x32 lanes=16, blocks=64x96, packed=3}");
  ir::KernelPlan q = p;
  CHECK(q == p);
  q.Register->Rows = 4;
  CHECK(!(q == p));

  ir::KernelPlan w;
  w.Register = ir::KernelPlan::Tile{8, 8, 4, 0, 0};
  w.PackedInput = 3;
  w.Wino = ir::KernelPlan::Winograd{4, 2, 30, 16};
  CHECK(w.str() == "plan{tile=4x8 lanes=8, packed=3, winograd=4 rows=2 pitch=30 skew=16}");

  ir::KernelPlan d;
  d.Dot4Lanes = 16;
  d.Dot4Input = 9;
  d.Dot = ir::KernelPlan::IntTile{6, 4, 16, 8};
  d.FixedRequant = true;
  d.FixedRequantInput = 11;
  CHECK(d.str() == "plan{dot4=16 packed=9, dot_tile=6x64 lanes=16 tail_groups=8, fixed_requant=11}");
  ir::KernelPlan g;
  g.PerOutput = true;
  g.Taps = ir::KernelPlan::IntTile{1, 2, 16, 1};
  g.Int = ir::KernelPlan::IntTile{4, 1, 16, 1};
  CHECK(g.str() == "plan{dot4_taps=1x32 lanes=16, int_tile=4x16 lanes=16, per_output}");
  ir::KernelPlan dw;
  dw.Depthwise = ir::KernelPlan::Plane{2048, 16};
  CHECK(dw.str() == "plan{plane<=2048 grid_round=16}");
}

TEST_CASE("a plan prints the schedule choices that are not the defaults", "[plan]") {
  ir::KernelPlan p;
  CHECK(p.UnrolledTaps == 3);
  CHECK_FALSE(p.SmallFixedRequant);
  CHECK(ir::KernelPlan::Tile{}.ParallelPanels == 16);
  CHECK(ir::KernelPlan::Tile{}.ParallelRowUnits == 8);
  p.Register = ir::KernelPlan::Tile{8, 16, 4, 0, 0};
  CHECK(p.str() == "plan{tile=4x16 lanes=8}");
  p.Register->ParallelPanels = 2;
  CHECK(p.str() == "plan{tile=4x16 lanes=8, parallel_panels>=2 row_units<8}");
  ir::KernelPlan q;
  q.Int = ir::KernelPlan::IntTile{4, 1, 16, 1};
  q.FixedRequant = true;
  // Not printed: QGemm's and QLinearConv's plans print as before.
  q.SmallFixedRequant = true;
  CHECK(q.str() == "plan{int_tile=4x16 lanes=16, fixed_requant=-1}");
  q.UnrolledTaps = 0;
  CHECK(q.str() == "plan{int_tile=4x16 lanes=16, unrolled_taps=0, fixed_requant=-1}");
}
