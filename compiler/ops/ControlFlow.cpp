//===- ControlFlow.cpp - If, Loop and Scan by compile-time expansion ------===//
//
// mlcc compiles static shapes, so control flow is resolved at compile time:
//
//  - If with a constant condition becomes its chosen branch. With a run-time
//    condition both branches are compiled, each under a guard
//    (ir::Node::Guard: the condition, or its negation), so that a run
//    computes only the branch taken; each output is then selected with
//    Where. The branches must agree in shape (checked once inferred).
//  - Loop needs a compile-time trip count, or a graph input whose values
//    --input-range bounds (ir::Value::Range), and is unrolled to the most.
//    Without scan outputs, its condition and trip count may be known only
//    at run time: iteration t runs under the guard "every condition so far
//    was true and t is below the trip count" and each carried value is
//    Where(that guard, the body's value, the value before), so a run stops
//    computing where the loop ends (mlcc.internal.LoopCarry, which becomes
//    the body's value when the guard folds to true: a condition known at
//    compile time leaves neither guards nor selections, and carried values
//    may change shape then). With scan outputs (whose
//    length would be the run's number of iterations) the condition must
//    stay true: mlcc.internal.AssertTrue nodes check each iteration's
//    condition once constant folding has run.
//  - Scan (opset 9+) is unrolled over the scan axis.
//  - A Loop's or Scan's number of iterations may follow bounded dimensions
//    (ir::Graph::TripRules, found by compiling at several values): it
//    unrolls to the most the range allows, iteration t guarded by "t is
//    below the count", which mlcc.internal.TripCount computes from the
//    dimensions when the library runs; its scan outputs are Sliced to the
//    count. Iterations beyond this compile's own count are copies of its
//    last one (Graph::SpareIterations), so that every value of the
//    dimensions gives the same nodes.
//
// The expansions are ordinary nodes (Gather, Unsqueeze, Concat, Where, Not,
// And, Identity) placed where the control-flow node was; inference
// continues with them. The internal check nodes have no outputs and
// disappear in dead-code elimination.
//
//===----------------------------------------------------------------------===//
#include "compiler/ir/Inline.h"
#include "compiler/ops/Lowering.h"

#include <algorithm>

namespace mlcc::ops {

namespace {

using Nodes = std::vector<std::unique_ptr<ir::Node>>;

/// Upper bound on nodes created by unrolling one Loop or Scan.
constexpr size_t MaxUnrolledNodes = 200000;

const std::shared_ptr<ir::Graph> &subgraph(const ir::Node &n, const char *name) {
  const ir::Attribute *a = n.attr(name);
  if (!a || a->Kind != ir::AttrKind::Graph || !a->G)
    n.error() << "missing graph attribute '" << name << "'";
  return a->G;
}

/// Builds nodes for an expansion. Nodes get opset 13 semantics (Unsqueeze
/// with an axes input, ...), whatever the model imports.
class Emitter {
public:
  Emitter(ir::Graph &g, const ir::Node &owner, Nodes &out)
      : G(g), Owner(owner), Out(out) {}

  ir::Node *node(const std::string &op, std::vector<ir::Value *> ins,
                 std::vector<ir::Value *> outs, const std::string &domain = "") {
    auto n = std::make_unique<ir::Node>();
    n->Name = G.uniqueNodeName(Owner.Name + "/" + op);
    n->OpType = op;
    n->Domain = domain;
    n->Opset = domain.empty() ? 13 : 1;
    n->Inputs = std::move(ins);
    for (ir::Value *o : outs)
      o->Producer = n.get();
    n->Outputs = std::move(outs);
    Out.push_back(std::move(n));
    return Out.back().get();
  }

  /// A new value produced by a new node.
  ir::Value *fresh(const std::string &hint) {
    return G.addValue(G.uniqueValueName(Owner.Name + "/" + hint));
  }

  ir::Value *constant(Tensor t, const std::string &hint) {
    ir::Value *v = G.addValue(G.uniqueValueName(Owner.Name + "/" + hint),
                              {t.dtype(), t.shape()});
    v->Const = std::make_shared<Tensor>(std::move(t));
    return v;
  }

  ir::Value *int64s(const std::vector<int64_t> &v, Shape shape, const std::string &hint) {
    return constant(Tensor::fromInts(DType::I64, std::move(shape), v), hint);
  }

  ir::Value *op1(const std::string &op, std::vector<ir::Value *> ins,
                 const std::string &hint,
                 std::map<std::string, ir::Attribute> attrs = {}) {
    ir::Value *v = fresh(hint);
    node(op, std::move(ins), {v})->Attrs = std::move(attrs);
    return v;
  }

  /// `c` as a boolean scalar (a condition may have shape [1]).
  ir::Value *scalar(ir::Value *c) {
    return op1("Reshape", {c, int64s({}, {0}, "scalar_shape")}, "cond");
  }

  /// The guard "`outer` and `c`" (`outer` null: always).
  ir::Value *conjoin(ir::Value *outer, ir::Value *c) {
    return outer ? op1("And", {outer, c}, "guard") : c;
  }

  /// Appends an inlined graph whose nodes run under `guard`.
  void appendGuarded(ir::InlinedGraph &&inl, ir::Value *guard) {
    for (auto &m : inl.Nodes)
      if (!m->Guard)
        m->Guard = guard;
    append(std::move(inl));
  }

  /// Makes `result` the value of the owner's output i.
  void bindOutput(size_t i, ir::Value *result) {
    if (!Owner.hasOutput(i))
      return;
    node("Identity", {result}, {Owner.Outputs[i]});
  }

  void append(ir::InlinedGraph &&inl) {
    for (auto &n : inl.Nodes)
      Out.push_back(std::move(n));
    if (Out.size() > MaxUnrolledNodes)
      Owner.error(ErrorKind::Unsupported)
          << "unrolling it would create more than " << MaxUnrolledNodes << " nodes";
  }

  ir::Graph &G;
  const ir::Node &Owner;
  Nodes &Out;
};


ir::Attribute stringAttr(const std::string &s) {
  ir::Attribute a;
  a.Kind = ir::AttrKind::String;
  a.S = s;
  return a;
}

// --- If -----------------------------------------------------------------

Nodes expandIf(ir::Node &n, ir::Graph &g) {
  Nodes out;
  Emitter e(g, n, out);
  const auto &thenG = subgraph(n, "then_branch");
  const auto &elseG = subgraph(n, "else_branch");
  if (thenG->Outputs.size() != n.Outputs.size() || elseG->Outputs.size() != n.Outputs.size())
    n.error() << "its branches must have " << n.Outputs.size() << " outputs";
  ir::Value *cond = n.Inputs.empty() ? nullptr : n.Inputs[0];
  if (!cond)
    n.error() << "input 0 (cond) is required";
  if (cond->Const) {
    bool take = cond->Const->numel() > 0 && cond->Const->intAt(0) != 0;
    g.Decisions.push_back({n.Name, n.where() + ": the " + (take ? "then" : "else") + " branch"});
    ir::InlinedGraph inl = ir::inlineGraph(g, n, take ? *thenG : *elseG, {},
                                           n.Name + (take ? "/then/" : "/else/"));
    std::vector<ir::Value *> results = inl.Outputs;
    e.append(std::move(inl));
    for (size_t i = 0; i < results.size(); ++i)
      e.bindOutput(i, results[i]);
    return out;
  }
  ir::InlinedGraph t = ir::inlineGraph(g, n, *thenG, {}, n.Name + "/then/");
  ir::InlinedGraph f = ir::inlineGraph(g, n, *elseG, {}, n.Name + "/else/");
  std::vector<ir::Value *> tv = t.Outputs, fv = f.Outputs;
  // Each branch runs only when its condition holds (inside an outer
  // branch or iteration, when that one's holds too).
  ir::Value *c = e.scalar(cond);
  ir::Value *thenGuard = e.conjoin(n.Guard, c);
  ir::Value *elseGuard = e.conjoin(n.Guard, e.op1("Not", {c}, "else_cond"));
  e.appendGuarded(std::move(t), thenGuard);
  e.appendGuarded(std::move(f), elseGuard);
  for (size_t i = 0; i < tv.size(); ++i) {
    if (!n.hasOutput(i))
      continue;
    ir::Node *check = e.node("AssertSameType", {tv[i], fv[i], cond}, {}, "mlcc.internal");
    check->Attrs["owner"] = stringAttr(n.where());
    e.bindOutput(i, e.op1("Where", {cond, tv[i], fv[i]}, "select"));
  }
  return out;
}

// --- Loop ---------------------------------------------------------------

/// How a Loop or Scan unrolls.
struct Unroll {
  int64_t Trips = 0;             ///< iterations unrolled
  ir::Value *RunTrips = nullptr; ///< the count, known at run time (null: Trips)
  /// With a TripRule: the count at this compile's dimension values;
  /// iterations from it on are spare (see the file comment). -1: none.
  int64_t Known = -1;
};

/// The name prefix of iteration t's values and nodes.
std::string iterationPrefix(const ir::Node &n, int64_t t) {
  return n.Name + "/it" + std::to_string(t) + "/";
}

/// The iteration that iteration t computes: t, or for a spare iteration
/// (registered here) the last one of this compile's count.
int64_t iterationAt(ir::Graph &g, const ir::Node &n, const Unroll &u, int64_t t) {
  if (u.Known < 0 || t < u.Known)
    return t;
  g.SpareIterations.push_back(iterationPrefix(n, t));
  return std::max<int64_t>(u.Known - 1, 0);
}

/// The hint of a value an expansion makes for iteration t: under the
/// iteration's prefix with a TripRule, so that it has the same name at
/// every value of the dimensions and a spare iteration's is known as such.
std::string iterationHint(const Unroll &u, int64_t t, const std::string &hint) {
  return u.Known >= 0 ? "it" + std::to_string(t) + "/" + hint : hint;
}

/// The run-time count of a TripRule (mlcc.internal.TripCount).
ir::Value *tripCount(Emitter &e, const ir::TripRule &r) {
  ir::Value *v = e.fresh("trips");
  ir::Node *c = e.node("TripCount", {}, {v}, "mlcc.internal");
  c->Attrs["coeffs"] = ir::intsAttr(r.Coeffs);
  c->Attrs["offset"] = ir::intAttr(r.Offset);
  return v;
}

/// A carried value after iteration t of `n`, which runs while `active`
/// (mlcc.internal.LoopCarry, see expandLoopCarry).
ir::Value *carry(Emitter &e, const ir::Node &n, int64_t t, ir::Value *active, ir::Value *next,
                 ir::Value *before) {
  ir::Value *v = e.fresh("carry");
  ir::Node *c = e.node("LoopCarry", {active, next, before}, {v}, "mlcc.internal");
  c->Attrs["owner"] = stringAttr(n.where());
  c->Attrs["iteration"] = ir::intAttr(t);
  return v;
}

/// Scan outputs: each iteration's values stacked on `axis`, reversed with
/// `reverse`, cut to `known` entries when the count is known at run time
/// (Unroll::Known).
ir::Value *stack(Emitter &e, std::vector<ir::Value *> parts, int64_t axis, bool reverse,
                 int64_t known) {
  ir::Value *ax = e.int64s({axis}, {1}, "axis");
  for (ir::Value *&v : parts)
    v = e.op1("Unsqueeze", {v, ax}, "scan");
  if (reverse)
    std::reverse(parts.begin(), parts.end());
  ir::Value *all = e.op1("Concat", parts, "scan", {{"axis", ir::intAttr(axis)}});
  if (known < 0)
    return all;
  return e.op1("Slice", {all, e.int64s({0}, {1}, "start"), e.int64s({known}, {1}, "trips"), ax},
               "scan");
}

/// A Loop unrolled with guards, each iteration running only while the loop
/// has not ended (see the file comment). Scan outputs need a condition
/// that stays true (their length is the number of iterations).
Nodes expandGuardedLoop(ir::Node &n, Emitter &e, const ir::Graph &body, const Unroll &u,
                        std::vector<ir::Value *> state, size_t scans) {
  ir::Value *active = n.hasInput(1) ? e.scalar(n.Inputs[1])
                                    : e.constant(Tensor::fromInts(DType::Bool, {}, {1}), "cond");
  ir::Value *count = u.RunTrips ? e.scalar(u.RunTrips) : nullptr;
  // "and iteration t is within the run's trip count"
  auto within = [&](ir::Value *a, int64_t t) {
    if (!count)
      return a;
    ir::Value *at = e.int64s({t}, {}, "iter"); // M is int64 (the schema checks it)
    ir::Value *less = e.op1("Less", {at, count}, "within");
    return a ? e.op1("And", {a, less}, "active") : less;
  };
  active = within(active, 0);
  std::vector<std::vector<ir::Value *>> scanned(scans);
  // With scan outputs the condition stays true (checked below).
  ir::Value *always = scans ? e.constant(Tensor::fromInts(DType::Bool, {}, {1}), "cond") : nullptr;
  for (int64_t t = 0; t < u.Trips; ++t) {
    int64_t at = iterationAt(e.G, n, u, t);
    ir::Value *cond = scans ? always : active;
    std::vector<ir::Value *> args = {e.int64s({at}, {}, iterationHint(u, t, "iter")), cond};
    args.insert(args.end(), state.begin(), state.end());
    ir::InlinedGraph inl = ir::inlineGraph(e.G, n, body, args, iterationPrefix(n, t));
    std::vector<ir::Value *> res = inl.Outputs;
    e.appendGuarded(std::move(inl), e.conjoin(n.Guard, active));
    for (size_t i = 0; i < state.size(); ++i)
      state[i] = carry(e, n, t, active, res[1 + i], state[i]);
    for (size_t k = 0; k < scans; ++k)
      scanned[k].push_back(res[1 + state.size() + k]);
    if (scans) { // the count of scanned values must not depend on the run
      ir::Node *check = e.node("AssertTrue", {res[0]}, {}, "mlcc.internal");
      check->Attrs["owner"] = stringAttr(n.where());
      check->Attrs["iteration"] = ir::intAttr(t + 1);
      active = within(nullptr, t + 1);
    } else {
      active = within(e.op1("And", {active, e.scalar(res[0])}, "active"), t + 1);
    }
  }
  for (size_t i = 0; i < state.size(); ++i)
    e.bindOutput(i, state[i]);
  for (size_t k = 0; k < scans; ++k)
    e.bindOutput(state.size() + k, stack(e, scanned[k], 0, false, u.Known));
  return std::move(e.Out);
}

const ir::TripRule *tripRule(const ir::Graph &g, const ir::Node &n) {
  auto it = g.TripRules.find(n.Name);
  return it == g.TripRules.end() ? nullptr : &it->second;
}

Nodes expandLoop(ir::Node &n, ir::Graph &g) {
  Nodes out;
  Emitter e(g, n, out);
  const auto &body = subgraph(n, "body");
  if (!n.hasInput(0))
    n.error(ErrorKind::Unsupported)
        << "a Loop without a trip count (a while loop) is not supported: its "
           "number of iterations must be known at compile time";
  // A trip count known only at run time: a graph input whose values
  // --input-range bounds (ir::Value::Range); the loop unrolls to the most.
  // A trip count that follows bounded dimensions (TripRule): unrolled to
  // the most, the count computed when the library runs.
  Unroll u;
  const ir::TripRule *rule = tripRule(g, n);
  if (!n.Inputs[0]->Const && n.Inputs[0]->Range) {
    u.RunTrips = n.Inputs[0];
    u.Trips = n.Inputs[0]->Range->second;
  } else {
    int64_t trips = n.constInputInts(0, "the loop is unrolled at compile time; a graph input "
                                        "may instead be bounded with --input-range NAME=MIN..MAX")[0];
    g.TripCounts[n.Name] = trips; // with a rule too: BoundedDims checks it
    if (rule) {
      u.Known = std::max<int64_t>(trips, 0);
      u.Trips = rule->Most;
      u.RunTrips = tripCount(e, *rule);
      if (u.Known > u.Trips)
        n.error() << "its trip count " << trips << " is above the most its bounded dimensions "
                  << "give (" << u.Trips << ")";
    } else {
      u.Trips = trips;
      g.Decisions.push_back({n.Name, n.where() + ": " + std::to_string(trips) + " iterations"});
    }
  }
  size_t carried = n.Inputs.size() - 2;
  if (body->Inputs.size() != carried + 2 || body->Outputs.size() < carried + 1)
    n.error() << "its body has " << body->Inputs.size() << " inputs and "
              << body->Outputs.size() << " outputs for " << carried
              << " loop-carried values";
  size_t scans = body->Outputs.size() - 1 - carried;
  int64_t trips = std::max<int64_t>(u.Trips, 0);
  u.Trips = trips;
  std::vector<ir::Value *> state(n.Inputs.begin() + 2, n.Inputs.end());
  if (scans == 0)
    return expandGuardedLoop(n, e, *body, u, std::move(state), 0);
  if (u.RunTrips && !rule)
    n.error(ErrorKind::Unsupported)
        << "its trip count '" << u.RunTrips->Name << "' is known only at run time, and its "
        << "scan outputs would have that many elements: a Loop with scan outputs needs a trip "
           "count known at compile time or computed from bounded dimensions (--dim)";
  bool condTrue = true;
  if (n.hasInput(1))
    condTrue = n.constInputInts(1, "the number of its scan outputs' elements is the number of "
                                   "iterations, which its condition decides")[0] != 0;
  if (rule) {
    if (!condTrue)
      n.error(ErrorKind::Unsupported)
          << "its condition is false, and its trip count follows a bounded dimension";
    return expandGuardedLoop(n, e, *body, u, std::move(state), scans);
  }
  if (!condTrue) {
    trips = 0;
    g.Decisions.push_back({n.Name, n.where() + ": its condition is false"});
  }
  if (trips == 0)
    n.error(ErrorKind::Unsupported) << "a Loop that runs zero times with scan outputs is not supported";

  std::vector<std::vector<ir::Value *>> scanned(scans);
  ir::Value *cond = e.constant(Tensor::fromInts(DType::Bool, {}, {1}), "cond");
  for (int64_t t = 0; t < trips; ++t) {
    if (t > 0) { // iteration t runs only if the previous condition is true
      ir::Node *check = e.node("AssertTrue", {cond}, {}, "mlcc.internal");
      check->Attrs["owner"] = stringAttr(n.where());
      check->Attrs["iteration"] = ir::intAttr(t);
    }
    std::vector<ir::Value *> args = {e.int64s({t}, {}, "iter"), cond};
    args.insert(args.end(), state.begin(), state.end());
    ir::InlinedGraph inl =
        ir::inlineGraph(g, n, *body, args, n.Name + "/it" + std::to_string(t) + "/");
    std::vector<ir::Value *> res = inl.Outputs;
    e.append(std::move(inl));
    cond = res[0];
    for (size_t i = 0; i < carried; ++i)
      state[i] = res[1 + i];
    for (size_t k = 0; k < scans; ++k)
      scanned[k].push_back(res[1 + carried + k]);
  }
  for (size_t i = 0; i < carried; ++i)
    e.bindOutput(i, state[i]);
  for (size_t k = 0; k < scans; ++k)
    e.bindOutput(carried + k, stack(e, scanned[k], 0, false, -1));
  return out;
}

// --- Scan ---------------------------------------------------------------

Nodes expandScan(ir::Node &n, ir::Graph &g) {
  if (n.Opset < 9)
    n.error(ErrorKind::Unsupported) << "Scan before opset 9 (with a batch axis) is not supported";
  Nodes out;
  Emitter e(g, n, out);
  const auto &body = subgraph(n, "body");
  int64_t numScan = n.requireInt("num_scan_inputs");
  int64_t states = (int64_t)n.Inputs.size() - numScan;
  if (numScan < 1 || states < 0 || (int64_t)body->Inputs.size() != states + numScan)
    n.error() << "num_scan_inputs " << numScan << " does not fit " << n.Inputs.size()
              << " inputs and a body of " << body->Inputs.size() << " inputs";
  int64_t scansOut = (int64_t)body->Outputs.size() - states;
  if (scansOut < 0)
    n.error() << "its body has too few outputs";
  std::vector<int64_t> inAxes = n.attrInts("scan_input_axes", std::vector<int64_t>((size_t)numScan, 0));
  std::vector<int64_t> inDirs = n.attrInts("scan_input_directions", std::vector<int64_t>((size_t)numScan, 0));
  std::vector<int64_t> outAxes = n.attrInts("scan_output_axes", std::vector<int64_t>((size_t)scansOut, 0));
  std::vector<int64_t> outDirs = n.attrInts("scan_output_directions", std::vector<int64_t>((size_t)scansOut, 0));
  if ((int64_t)inAxes.size() != numScan || (int64_t)inDirs.size() != numScan ||
      (int64_t)outAxes.size() != scansOut || (int64_t)outDirs.size() != scansOut)
    n.error() << "the scan axis/direction attributes have the wrong length";

  int64_t length = -1;
  for (int64_t j = 0; j < numScan; ++j) {
    const Shape &s = n.inShape((size_t)(states + j));
    int64_t ax = normalizeAxis(n, inAxes[(size_t)j], (int64_t)s.size(), "scan_input_axes entry");
    inAxes[(size_t)j] = ax;
    if (length >= 0 && s[(size_t)ax] != length)
      n.error() << "scan inputs have different lengths (" << length << " and "
                << s[(size_t)ax] << ")";
    length = s[(size_t)ax];
  }
  if (length == 0 && scansOut > 0)
    n.error(ErrorKind::Unsupported) << "a Scan over zero elements with scan outputs is not supported";

  // A length that follows bounded dimensions (TripRule): unrolled to the
  // most, iteration t guarded by "t is below the run's length".
  Unroll u;
  u.Trips = length;
  ir::Value *runLength = nullptr;
  g.TripCounts[n.Name] = length; // with a rule too: BoundedDims checks it
  if (const ir::TripRule *rule = tripRule(g, n)) {
    for (size_t j = 0; j < inDirs.size(); ++j)
      if (inDirs[j])
        n.error(ErrorKind::Unsupported)
            << "scan input " << j << " runs backwards over a bounded dimension: not supported "
               "(its first element would be at a position known only at run time)";
    for (size_t k = 0; k < outDirs.size(); ++k)
      if (outDirs[k])
        n.error(ErrorKind::Unsupported)
            << "scan output " << k << " is stacked backwards over a bounded dimension: not "
               "supported";
    u.Known = length;
    u.Trips = rule->Most;
    u.RunTrips = tripCount(e, *rule);
    if (u.Known > u.Trips)
      n.error() << "its length " << length << " is above the most its bounded dimensions give ("
                << u.Trips << ")";
    runLength = e.scalar(u.RunTrips);
  }
  std::vector<ir::Value *> state(n.Inputs.begin(), n.Inputs.begin() + states);
  std::vector<std::vector<ir::Value *>> scanned((size_t)scansOut);
  for (int64_t t = 0; t < u.Trips; ++t) {
    int64_t it = iterationAt(g, n, u, t);
    ir::Value *active = runLength ? e.op1("Less", {e.int64s({t}, {}, "iter"), runLength}, "active")
                                  : nullptr;
    // Without a rule the iterations run under the Scan's own guard, which
    // the expansion's nodes take (see the file comment).
    ir::Value *guard = active ? e.conjoin(n.Guard, active) : nullptr;
    std::vector<ir::Value *> args = state;
    for (int64_t j = 0; j < numScan; ++j) {
      int64_t at = inDirs[(size_t)j] ? length - 1 - it : it;
      ir::Value *elem = e.fresh(iterationHint(u, t, "elem"));
      e.node("Gather", {n.Inputs[(size_t)(states + j)], e.int64s({at}, {}, iterationHint(u, t, "at"))},
             {elem})->Attrs = {{"axis", ir::intAttr(inAxes[(size_t)j])}};
      if (guard)
        e.Out.back()->Guard = guard;
      args.push_back(elem);
    }
    ir::InlinedGraph inl = ir::inlineGraph(g, n, *body, args, iterationPrefix(n, t));
    std::vector<ir::Value *> res = inl.Outputs;
    if (guard)
      e.appendGuarded(std::move(inl), guard);
    else
      e.append(std::move(inl));
    for (int64_t i = 0; i < states; ++i)
      state[(size_t)i] = active ? carry(e, n, t, active, res[(size_t)i], state[(size_t)i])
                                : res[(size_t)i];
    for (int64_t k = 0; k < scansOut; ++k)
      scanned[(size_t)k].push_back(res[(size_t)(states + k)]);
  }
  for (int64_t i = 0; i < states; ++i)
    e.bindOutput((size_t)i, state[(size_t)i]);
  for (int64_t k = 0; k < scansOut; ++k)
    e.bindOutput((size_t)(states + k), stack(e, scanned[(size_t)k], outAxes[(size_t)k],
                                             outDirs[(size_t)k] != 0, u.Known));
  return out;
}

// --- internal nodes -----------------------------------------------------

/// mlcc.internal.LoopCarry(active, next, before): a carried value after an
/// iteration that runs only while `active`. Expanded once its inputs are
/// inferred: `next` when `active` folded to true (the value may change shape
/// from one iteration to the next then, as a loop that grows a tensor does),
/// `before` when false, else Where(active, next, before), of one type.
Nodes expandLoopCarry(ir::Node &n, ir::Graph &g) {
  Nodes out;
  Emitter e(g, n, out);
  ir::Value *active = n.Inputs[0], *next = n.Inputs[1], *before = n.Inputs[2];
  std::string owner = n.attrString("owner", "a Loop");
  if (active->Const) {
    bool runs = active->Const->intAt(0) != 0;
    std::string decided = owner + ": iteration " + std::to_string(n.attrInt("iteration", 0)) +
                          (runs ? " runs" : " does not run");
    if (g.Decisions.empty() || g.Decisions.back().Text != decided) // once per iteration
      g.Decisions.push_back({n.Name, decided});
    e.node("Identity", {runs ? next : before}, {n.Outputs[0]});
    return out;
  }
  if (next->Type != before->Type)
    fail(ErrorKind::Unsupported)
        << owner << ": a carried value is " << before->Type.str() << " before an iteration and "
        << next->Type.str() << " after it; with a condition or trip count known only at run "
        << "time its shape would depend on the run";
  e.node("Where", {active, next, before}, {n.Outputs[0]});
  return out;
}

// --- internal checks ----------------------------------------------------

void inferAssertTrue(ir::Node &n) {
  std::string owner = n.attrString("owner", "a Loop");
  int64_t it = n.attrInt("iteration", 0);
  TensorPtr c = n.constInput(0, "a Loop's condition must be known at compile time to unroll it");
  if (c->numel() < 1 || c->intAt(0) == 0)
    fail(ErrorKind::Unsupported)
        << owner << ": the loop stops at iteration " << it << " of its trip count; "
        << "loops that end early are not supported";
}

void inferAssertSameType(ir::Node &n) {
  if (n.inType(0) == n.inType(1))
    return;
  n.constInput(2, "the If branches produce different shapes, so the condition "
                  "must be known at compile time");
}

// --- the run-time trip count ----------------------------------------------

/// mlcc.internal.TripCount: sum of coeffs[k] * bounded dimension k, plus
/// offset, as an int64 scalar computed when the library runs.
void inferTripCount(ir::Node &n) { n.setOutput(0, DType::I64, {}); }

void lowerTripCount(LowerCtx &c) {
  const ir::Node &n = c.node();
  std::vector<int64_t> coeffs = n.attrInts("coeffs", {});
  kir::Expr count = kir::indexConst(n.attrInt("offset", 0));
  for (size_t k = 0; k < coeffs.size(); ++k)
    if (coeffs[k])
      count = count + kir::indexConst(coeffs[k]) * c.dimValue(k, coeffs.size());
  c.out(0).store({}, kir::cast(DType::I64, count));
}

OpSchema internalCheck(const char *name, std::function<void(ir::Node &)> infer) {
  OpSchema s;
  s.Domain = "mlcc.internal";
  s.Name = name;
  s.Infer = std::move(infer);
  s.Foldable = false;
  return s;
}

} // namespace

MLCC_OPS(ControlFlow) {
  R.add({.Name = "If", .SinceVersion = 1, .Expand = expandIf});
  R.add({.Name = "Loop", .SinceVersion = 1, .Expand = expandLoop});
  R.add({.Name = "Scan", .SinceVersion = 8, .Expand = expandScan});
  R.add({.Domain = "mlcc.internal", .Name = "LoopCarry", .SinceVersion = 1,
         .Expand = expandLoopCarry});
  R.add({.Domain = "mlcc.internal", .Name = "TripCount", .SinceVersion = 1,
         .Infer = inferTripCount, .Lower = lowerTripCount, .Foldable = false,
         .RunTimeExtents = true});
  R.add(internalCheck("AssertTrue", inferAssertTrue));
  R.add(internalCheck("AssertSameType", inferAssertSameType));
}

} // namespace mlcc::ops
