//===- Rnn.cpp - RNN, GRU, LSTM -------------------------------------------===//
//
// One kernel runs the whole recurrence. The hidden (and cell) state of the
// batch lives in scratch buffers in the compute type; each time step and
// batch element computes its gate pre-activations
//   W x_t + R h_(t-1) + Wb + Rb
// into a scratch row, applies the activations and updates the state in
// place (every gate is computed before the state changes).
//
// Directions: forward, reverse or bidirectional (two passes, direction 1
// reversed). With sequence_lens, batch element b runs sequence_lens[b]
// steps (a reverse pass starts at its last valid step); Y is zero past the
// end of a sequence and Y_h / Y_c hold the state after its last step.
//
// Gate orders (ONNX): GRU z, r, h; LSTM i, o, f, c; peepholes i, o, f.
// layout 1 swaps the sequence and batch axes of X and Y and puts the
// batch first in initial_h/initial_c/Y_h/Y_c. The sequence and batch may
// follow bounded dimensions (--dim): the steps and batch elements run to
// their extents when the kernel runs.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>
#include <cctype>

namespace mlcc::ops {

using namespace kir;

namespace {

enum class Cell { Rnn, Gru, Lstm };

struct Activation {
  std::string Name; ///< lower case
  double Alpha = 0, Beta = 0;
};

struct RnnShape {
  int64_t S, B, I, H, D, Gates;
  bool Layout1;
  std::string Direction;
  std::vector<Activation> Acts; ///< per direction: ActsPerDir entries each
  size_t ActsPerDir;
  std::optional<double> Clip;
};

std::string lower(std::string s) {
  for (char &ch : s)
    ch = (char)std::tolower((unsigned char)ch);
  return s;
}

std::vector<Activation> parseActivations(const ir::Node &n, size_t perDir,
                                         int64_t dirs,
                                         const std::vector<std::string> &dflt) {
  std::vector<std::string> names;
  if (const ir::Attribute *a = n.attr("activations"))
    names = a->Strings;
  if (names.empty()) {
    for (int64_t d = 0; d < dirs; ++d)
      names.insert(names.end(), dflt.begin(), dflt.end());
  } else if (names.size() == perDir && dirs == 2) {
    std::vector<std::string> twice = names;
    names.insert(names.end(), twice.begin(), twice.end());
  }
  if (names.size() != perDir * (size_t)dirs)
    n.error() << "activations needs " << perDir * (size_t)dirs << " entries, has "
              << names.size();
  std::vector<double> alphas = n.attrFloats("activation_alpha");
  std::vector<double> betas = n.attrFloats("activation_beta");
  size_t ai = 0, bi = 0;
  std::vector<Activation> acts;
  for (const std::string &name : names) {
    Activation a;
    a.Name = lower(name);
    auto alpha = [&](double d) { a.Alpha = ai < alphas.size() ? alphas[ai++] : d; };
    auto beta = [&](double d) { a.Beta = bi < betas.size() ? betas[bi++] : d; };
    if (a.Name == "relu" || a.Name == "tanh" || a.Name == "sigmoid" ||
        a.Name == "softsign" || a.Name == "softplus") {
    } else if (a.Name == "affine") {
      alpha(1.0);
      beta(0.0);
    } else if (a.Name == "leakyrelu") {
      alpha(0.01);
    } else if (a.Name == "thresholdedrelu") {
      alpha(1.0);
    } else if (a.Name == "scaledtanh") {
      alpha(1.0);
      beta(1.0);
    } else if (a.Name == "hardsigmoid") {
      alpha(0.2);
      beta(0.5);
    } else if (a.Name == "elu") {
      alpha(1.0);
    } else {
      n.error(ErrorKind::Unsupported) << "activation '" << name << "' is not supported";
    }
    acts.push_back(a);
  }
  return acts;
}

Expr applyActivation(const Activation &a, const Expr &x) {
  const std::string &f = a.Name;
  if (f == "sigmoid")
    return 1.0 / (1.0 + exp(-x));
  if (f == "tanh")
    return tanh(x);
  if (f == "relu")
    return max(x, 0.0);
  if (f == "affine")
    return x * a.Alpha + a.Beta;
  if (f == "leakyrelu")
    return select(ge(x, 0.0), x, x * a.Alpha);
  if (f == "thresholdedrelu")
    return select(gt(x, a.Alpha), x, constLike(x, 0));
  if (f == "scaledtanh")
    return tanh(x * a.Beta) * a.Alpha;
  if (f == "hardsigmoid")
    return min(max(x * a.Alpha + a.Beta, 0.0), 1.0);
  if (f == "elu")
    return select(ge(x, 0.0), x, (exp(x) - 1.0) * a.Alpha);
  if (f == "softsign")
    return x / (1.0 + abs(x));
  if (f == "softplus")
    return log(1.0 + exp(x));
  return x;
}

RnnShape rnnShape(const ir::Node &n, Cell cell) {
  RnnShape s;
  const Shape &x = n.inShape(0);
  if (x.size() != 3)
    n.error() << "X must have rank 3, got " << shapeToString(x);
  s.Layout1 = n.attrInt("layout", 0) != 0;
  s.S = s.Layout1 ? x[1] : x[0];
  s.B = s.Layout1 ? x[0] : x[1];
  s.I = x[2];
  s.Direction = n.attrString("direction", "forward");
  if (s.Direction != "forward" && s.Direction != "reverse" &&
      s.Direction != "bidirectional")
    n.error() << "direction must be forward, reverse or bidirectional, got '"
              << s.Direction << "'";
  s.D = s.Direction == "bidirectional" ? 2 : 1;
  s.Gates = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
  // With the plan's GateRows packed, W and R are held transposed.
  Shape w = n.inShape(1), r = n.inShape(2);
  if (n.Plan.GateRows && n.Plan.PackedInput == 1 && w.size() == 3 && r.size() == 3) {
    std::swap(w[1], w[2]);
    std::swap(r[1], r[2]);
  }
  if (w.size() != 3 || w[0] != s.D || w[2] != s.I || w[1] % s.Gates)
    n.error() << "W has shape " << shapeToString(w) << ", expected [" << s.D
              << ", " << s.Gates << "*hidden_size, " << s.I << "]";
  s.H = n.attrInt("hidden_size", w[1] / s.Gates);
  // hidden_size must equal W's rows / gates (checked without multiplying
  // a huge attribute: found by the fuzzer, signed overflow).
  if (s.H < 1 || s.H != w[1] / s.Gates)
    n.error() << "W has shape " << shapeToString(w) << ", which does not fit "
              << "hidden_size " << s.H;
  if (r != Shape{s.D, s.Gates * s.H, s.H})
    n.error() << "R has shape " << shapeToString(r) << ", expected ["
              << s.D << ", " << s.Gates * s.H << ", " << s.H << "]";
  if (n.hasInput(3) && n.inShape(3) != Shape{s.D, 2 * s.Gates * s.H})
    n.error() << "B has shape " << shapeToString(n.inShape(3)) << ", expected ["
              << s.D << ", " << 2 * s.Gates * s.H << "]";
  if (n.hasInput(4)) {
    requireDType(n, 4, {DType::I32, DType::I64});
    if (n.inShape(4) != Shape{s.B})
      n.error() << "sequence_lens has shape " << shapeToString(n.inShape(4))
                << ", expected [" << s.B << "]";
  }
  Shape state = s.Layout1 ? Shape{s.B, s.D, s.H} : Shape{s.D, s.B, s.H};
  if (n.hasInput(5) && n.inShape(5) != state)
    n.error() << "initial_h has shape " << shapeToString(n.inShape(5))
              << ", expected " << shapeToString(state);
  if (cell == Cell::Lstm) {
    if (n.hasInput(6) && n.inShape(6) != state)
      n.error() << "initial_c has shape " << shapeToString(n.inShape(6))
                << ", expected " << shapeToString(state);
    if (n.hasInput(7) && n.inShape(7) != Shape{s.D, 3 * s.H})
      n.error() << "P has shape " << shapeToString(n.inShape(7)) << ", expected ["
                << s.D << ", " << 3 * s.H << "]";
  }
  if (n.hasAttr("clip")) {
    s.Clip = n.attrFloat("clip", 0);
    if (!(*s.Clip > 0))
      n.error() << "clip must be positive";
  }
  switch (cell) {
  case Cell::Rnn:
    s.ActsPerDir = 1;
    s.Acts = parseActivations(n, 1, s.D, {"Tanh"});
    break;
  case Cell::Gru:
    s.ActsPerDir = 2;
    s.Acts = parseActivations(n, 2, s.D, {"Sigmoid", "Tanh"});
    break;
  case Cell::Lstm:
    s.ActsPerDir = 3;
    s.Acts = parseActivations(n, 3, s.D, {"Sigmoid", "Tanh", "Tanh"});
    break;
  }
  return s;
}

void inferRnn(ir::Node &n, Cell cell) {
  requireFloat(n, 0);
  for (size_t i : {1u, 2u, 3u, 5u, 6u, 7u})
    if (n.hasInput(i) && n.inDType(i) != n.inDType(0) &&
        (cell == Cell::Lstm || i < 6))
      n.error() << "input " << i << " must have the type of X";
  size_t maxIn = cell == Cell::Lstm ? 8 : 6;
  if (n.Inputs.size() > maxIn)
    n.error() << "has " << n.Inputs.size() << " inputs, at most " << maxIn;
  size_t maxOut = cell == Cell::Lstm ? 3 : 2;
  if (n.Outputs.size() > maxOut)
    n.error() << "has " << n.Outputs.size() << " outputs, at most " << maxOut;
  RnnShape s = rnnShape(n, cell);
  DType t = n.inDType(0);
  n.setOutput(0, t, s.Layout1 ? Shape{s.B, s.S, s.D, s.H} : Shape{s.S, s.D, s.B, s.H});
  Shape state = s.Layout1 ? Shape{s.B, s.D, s.H} : Shape{s.D, s.B, s.H};
  n.setOutput(1, t, state);
  if (cell == Cell::Lstm)
    n.setOutput(2, t, state);
}

void lowerRnn(LowerCtx &c, Cell cell) {
  const ir::Node &node = c.node();
  RnnShape s = rnnShape(node, cell);
  TensorRef x = c.in(0), w = c.in(1), r = c.in(2);
  std::optional<TensorRef> bias, seqLens, h0, c0, peep, y, yh, yc;
  if (c.hasIn(3))
    bias = c.in(3);
  if (c.hasIn(4))
    seqLens = c.in(4);
  if (c.hasIn(5))
    h0 = c.in(5);
  if (cell == Cell::Lstm && c.hasIn(6))
    c0 = c.in(6);
  if (cell == Cell::Lstm && c.hasIn(7))
    peep = c.in(7);
  if (c.hasOut(0))
    y = c.out(0);
  if (c.hasOut(1))
    yh = c.out(1);
  if (cell == Cell::Lstm && c.hasOut(2))
    yc = c.out(2);
  if (!y && !yh && !yc)
    return;
  if (s.B == 0)
    return;
  bool gruLinearBeforeReset =
      cell == Cell::Gru && node.attrInt("linear_before_reset", 0) != 0;
  bool inputForget = cell == Cell::Lstm && node.attrInt("input_forget", 0) != 0;

  KernelBuilder &b = c.b();
  DType t = x.computeType();
  int64_t B = s.B, I = s.I, H = s.H, G = s.Gates;
  TensorRef hs = c.scratch("h_state", t, {B, H});
  std::optional<TensorRef> cs;
  if (cell == Cell::Lstm)
    cs = c.scratch("c_state", t, {B, H});
  TensorRef gates = c.scratch("gates", t, {G * H});
  // The recurrent products R h (+ Rb) of a step, apart from the input's.
  TensorRef hgates = c.scratch("hgates", t, {G * H});
  // The weights transposed, [D, I, G*H] and [D, H, G*H], so that a step's
  // gate pre-activations are vectors along the gate rows (each weight read
  // once a step, contiguously) instead of a dot product and a horizontal
  // sum per row: folded at compile time (the plan's GateRows), else
  // transposed here on every call (weights computed at run time).
  TensorRef wt, rt;
  if (node.Plan.GateRows && node.Plan.PackedInput == 1) {
    wt = w;
    rt = r;
  } else {
    wt = c.scratch("w_t", t, {s.D, I, G * H});
    rt = c.scratch("r_t", t, {s.D, H, G * H});
    b.loop("d", s.D, [&](Expr d) {
      b.loop("row", G * H, [&](Expr row) {
        b.loop("i", I, [&](Expr i) { wt.store({d, i, row}, w.load({d, row, i})); });
        b.loop("k", H, [&](Expr k) { rt.store({d, k, row}, r.load({d, row, k})); });
      });
    });
  }

  // The sequence and batch extents when the kernel runs: either axis may
  // follow a bounded dimension (--dim), the buffers keeping their layout at
  // its MAX.
  const Expr steps = x.extent(s.Layout1 ? 1 : 0), batch = x.extent(s.Layout1 ? 0 : 1);
  auto xAt = [&](Expr tt, Expr bb, Expr i) {
    return s.Layout1 ? x.load({bb, tt, i}) : x.load({tt, bb, i});
  };
  auto stateIdx = [&](int64_t d, Expr bb, Expr j) {
    return s.Layout1 ? std::vector<Expr>{bb, indexConst(d), j}
                     : std::vector<Expr>{indexConst(d), bb, j};
  };
  auto yIdx = [&](Expr tt, int64_t d, Expr bb, Expr j) {
    return s.Layout1 ? std::vector<Expr>{bb, tt, indexConst(d), j}
                     : std::vector<Expr>{tt, indexConst(d), bb, j};
  };
  auto clip = [&](Expr v) {
    return s.Clip ? clamp(v, constant(t, -*s.Clip), constant(t, *s.Clip)) : v;
  };

  for (int64_t d = 0; d < s.D; ++d) {
    bool reverse = s.Direction == "reverse" || d == 1;
    const Activation *act = &s.Acts[(size_t)d * s.ActsPerDir];
    Expr dE = indexConst(d);
    auto recurrentBias = [&](Expr row) {
      return bias ? bias->load({dE, row + G * H}) : constant(t, 0);
    };
    // inputRows: gates = W x_t + Wb over every gate row; recurrentRows:
    // hgates = R v + Rb over the rows [rowBegin, rowEnd), v = h (or, for a
    // GRU's h rows without linear_before_reset, r * h); both as sums of
    // rows of the transposed weights.
    // dst[row] = init(row) + sum over k < K of v(k) * wk[d, k, row] for
    // the rows [rowBegin, rowEnd): with the plan's GateBlock, a block of
    // rows at a time in local accumulators (the vectorized row loop's
    // vectors stay in registers across k); else in dst itself.
    auto rowSums = [&](const TensorRef &dst, const TensorRef &wk, int64_t rowBegin,
                       int64_t rowEnd, int64_t K, const std::function<Expr(Expr row)> &init,
                       const std::function<Expr(Expr k)> &v) {
      const int64_t block = node.Plan.GateBlock;
      if (block <= 0) {
        b.loop("row", indexConst(rowBegin), indexConst(rowEnd),
               [&](Expr row) { dst.store({row}, init(row)); });
        b.loop("k", K, [&](Expr k) {
          Local vk = b.local("vk", v(k));
          b.loop("row", indexConst(rowBegin), indexConst(rowEnd), [&](Expr row) {
            dst.store({row}, dst.load({row}) + vk.get() * wk.load({dE, k, row}));
          });
        });
        return;
      }
      for (int64_t r0 = rowBegin; r0 < rowEnd; r0 += block) {
        const int64_t n = std::min(block, rowEnd - r0);
        Local acc = b.local("acc", t, n);
        b.loop("row", n, [&](Expr r) { b.set(acc, r, init(r + r0)); });
        b.loop("k", K, [&](Expr k) {
          Local vk = b.local("vk", v(k));
          b.loop("row", n, [&](Expr r) {
            b.set(acc, r, acc.get(r) + vk.get() * wk.load({dE, k, r + r0}));
          });
        });
        b.loop("row", n, [&](Expr r) { dst.store({r + r0}, acc.get(r)); });
      }
    };
    auto inputRows = [&](Expr tt, Expr bb) {
      rowSums(gates, wt, 0, G * H, I,
              [&](Expr row) { return bias ? bias->load({dE, row}) : constant(t, 0); },
              [&](Expr i) { return xAt(tt, bb, i); });
    };
    auto recurrentRows = [&](int64_t rowBegin, int64_t rowEnd,
                             const std::function<Expr(Expr k)> &v) {
      rowSums(hgates, rt, rowBegin, rowEnd, H, recurrentBias, v);
    };

    // Initial state.
    b.loopTo("b", batch, [&](Expr bb) {
      b.loop("j", H, [&](Expr j) {
        hs.store({bb, j}, h0 ? h0->load(stateIdx(d, bb, j)) : constant(t, 0));
        if (cs)
          cs->store({bb, j}, c0 ? c0->load(stateIdx(d, bb, j)) : constant(t, 0));
      });
    });

    b.loopTo("s", steps, [&](Expr step) {
      b.loopTo("b", batch, [&](Expr bb) {
        Local len = b.local(
            "len", seqLens ? clamp(toIndex(seqLens->load({bb})), indexConst(0), steps)
                           : steps);
        b.ifThen(lt(step, len.get()), [&] {
          Local tt = b.local("t", reverse ? len.get() - 1 - step : step);
          inputRows(tt.get(), bb);
          auto hPrev = [&](Expr k) { return hs.load({bb, k}); };
          // Full pre-activations W x + R h + biases for the generic rows,
          // through fin.
          auto fullRows = [&](int64_t rowBegin, int64_t rowEnd,
                              const std::function<Expr(Expr row, Expr pre)> &fin) {
            recurrentRows(rowBegin, rowEnd, hPrev);
            b.loop("row", indexConst(rowBegin), indexConst(rowEnd), [&](Expr row) {
              gates.store({row}, fin(row, gates.load({row}) + hgates.load({row})));
            });
          };
          if (cell == Cell::Rnn) {
            fullRows(0, H, [&](Expr, Expr pre) {
              return applyActivation(act[0], clip(pre));
            });
            b.loop("j", H, [&](Expr j) { hs.store({bb, j}, gates.load({j})); });
          } else if (cell == Cell::Gru) {
            // z and r, activated.
            fullRows(0, 2 * H, [&](Expr, Expr pre) {
              return applyActivation(act[0], clip(pre));
            });
            // h: (R_h h + Rb_h) * r with linear_before_reset, else
            // R_h (r * h) + Rb_h.
            if (gruLinearBeforeReset)
              recurrentRows(2 * H, 3 * H, hPrev);
            else
              recurrentRows(2 * H, 3 * H,
                            [&](Expr k) { return gates.load({k + H}) * hs.load({bb, k}); });
            // The candidate n into hgates' h rows (a loop that stores one
            // buffer and reads another vectorizes), then h = (1 - z) n + z h.
            b.loop("j", H, [&](Expr j) {
              Expr row = j + 2 * H;
              Expr hr = gruLinearBeforeReset ? hgates.load({row}) * gates.load({j + H})
                                             : hgates.load({row});
              hgates.store({row}, applyActivation(act[1], clip(gates.load({row}) + hr)));
            });
            b.loop("j", H, [&](Expr j) {
              Expr z = gates.load({j});
              hs.store({bb, j}, (1.0 - z) * hgates.load({j + 2 * H}) + z * hs.load({bb, j}));
            });
          } else {
            fullRows(0, 4 * H, [&](Expr, Expr pre) { return pre; });
            // c = f c + i g, then h = o act(c): two loops without locals
            // (each vectorizes), the second reading the new c.
            auto peepAt = [&](Expr j, int64_t gi) {
              return peep ? peep->load({dE, j + gi * H}) : constant(t, 0);
            };
            b.loop("j", H, [&](Expr j) {
              Expr cPrev = cs->load({bb, j});
              Expr ig = applyActivation(act[0], clip(gates.load({j}) + peepAt(j, 0) * cPrev));
              Expr fg = inputForget
                            ? 1.0 - ig
                            : applyActivation(act[0], clip(gates.load({j + 2 * H}) +
                                                           peepAt(j, 2) * cPrev));
              Expr cg = applyActivation(act[1], clip(gates.load({j + 3 * H})));
              cs->store({bb, j}, fg * cPrev + ig * cg);
            });
            b.loop("j", H, [&](Expr j) {
              Expr cNew = cs->load({bb, j});
              Expr og = applyActivation(act[0], clip(gates.load({j + H}) + peepAt(j, 1) * cNew));
              hs.store({bb, j}, og * applyActivation(act[2], cNew));
            });
          }
          if (y)
            b.loop("j", H, [&](Expr j) {
              y->store(yIdx(tt.get(), d, bb, j), hs.load({bb, j}));
            });
        }, [&] {
          // Past the end of this sequence: Y is zero.
          if (y)
            b.loop("j", H, [&](Expr j) {
              y->store(yIdx(step, d, bb, j), constant(t, 0));
            });
        });
      });
    });

    b.loopTo("b", batch, [&](Expr bb) {
      b.loop("j", H, [&](Expr j) {
        if (yh)
          yh->store(stateIdx(d, bb, j), hs.load({bb, j}));
        if (yc)
          yc->store(stateIdx(d, bb, j), cs->load({bb, j}));
      });
    });
  }
}

} // namespace

MLCC_OPS(Rnn) {
  const std::pair<const char *, Cell> cells[] = {
      {"RNN", Cell::Rnn}, {"GRU", Cell::Gru}, {"LSTM", Cell::Lstm}};
  for (auto [name, cell] : cells)
    R.add({.Name = name, .SinceVersion = 1, .Fusion = FusionClass::Opaque,
           .Infer = [cell](ir::Node &n) { inferRnn(n, cell); },
           .Lower = [cell](LowerCtx &c) { lowerRnn(c, cell); }, .RunTimeExtents = true});
}

} // namespace mlcc::ops
