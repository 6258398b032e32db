//===- BoundedDims.cpp - --dim NAME=MIN..MAX: dimensions known at run time -===//
#include "compiler/driver/BoundedDims.h"

#include "compiler/ops/DimNumbers.h"
#include "compiler/support/Error.h"

#include <cstdlib>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>

namespace mlcc {

namespace {

/// Where a value comes from, for messages.
std::string origin(const ir::Value &v) {
  if (v.Producer)
    return "node '" + v.Producer->Name + "' (" + v.Producer->OpType + ")";
  return v.isConstant() ? "an initializer" : "a graph input";
}

/// The values the graph's nodes, inputs and outputs refer to.
std::vector<ir::Value *> liveValues(const ir::Graph &g) {
  std::vector<ir::Value *> out;
  std::set<const ir::Value *> seen;
  auto add = [&](ir::Value *v) {
    if (v && seen.insert(v).second)
      out.push_back(v);
  };
  for (ir::Value *v : g.Inputs)
    add(v);
  for (const auto &n : g.Nodes) {
    for (ir::Value *v : n->Inputs)
      add(v);
    for (ir::Value *v : n->Outputs)
      add(v);
  }
  for (ir::Value *v : g.Outputs)
    add(v);
  return out;
}

/// Whether `small`'s elements are those of `large` at the same indices
/// (`small` no larger on any axis): a tensor computed from a dimension
/// whose smaller instances are the larger one's leading part.
bool prefixOf(const Tensor &small, const Tensor &large) {
  if (small.dtype() != large.dtype() || small.rank() != large.rank() ||
      isSubByte(small.dtype())) // (packed elements: not compared, not a prefix)
    return false;
  const size_t rank = small.rank(), esize = dtypeSize(small.dtype());
  for (size_t a = 0; a < rank; ++a)
    if (small.shape()[a] > large.shape()[a])
      return false;
  std::vector<uint8_t> s = small.denseBytes(), l = large.denseBytes();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t e = 0; e < small.numel(); ++e) {
    int64_t at = 0;
    for (size_t a = 0; a < rank; ++a)
      at = at * large.shape()[a] + idx[a];
    if (std::memcmp(&s[(size_t)e * esize], &l[(size_t)at * esize], esize) != 0)
      return false;
    for (size_t a = rank; a-- > 0;)
      if (++idx[a] < small.shape()[a])
        break;
      else
        idx[a] = 0;
  }
  return true;
}

/// Whether `name` is a value of a spare iteration of `g` (see
/// ir::Graph::SpareIterations): its extents say nothing about `g`'s
/// dimension values.
bool spare(const ir::Graph &g, const std::string &name) {
  for (const std::string &p : g.SpareIterations)
    if (name.compare(0, p.size(), p) == 0)
      return true;
  return false;
}

/// `po` for the compiles that compare values of the dimensions.
PipelineOptions probeOptions(PipelineOptions po) {
  po.Status = nullptr;
  po.DumpIr.clear();
  po.TimePasses = false;
  po.GraphOnly = true;
  return po;
}

/// The graph with dimension k at values[k]; an error names those values
/// that are not their MAX (the model compiles at MAX but not there).
std::unique_ptr<ir::Graph> compileAt(const CompileOptions &o, const llvmgen::TargetSpec &target,
                                     const PipelineOptions &po,
                                     const std::vector<ir::BoundedDim> &dims,
                                     const std::vector<int64_t> &vs, const std::string &flags) {
  try {
    return compileModel(atValues(o, dims, vs), target, po).Graph;
  } catch (const CompileError &e) {
    std::string at;
    for (size_t k = 0; k < dims.size(); ++k)
      if (vs[k] != dims[k].Max)
        at += (at.empty() ? "" : ", ") + dims[k].Name + "=" + std::to_string(vs[k]);
    throw CompileError(e.kind(), flags + ": at " + at + ": " + e.what());
  }
}

/// Each dimension at its MAX.
std::vector<int64_t> maxesOf(const std::vector<ir::BoundedDim> &dims) {
  std::vector<int64_t> maxes;
  for (const ir::BoundedDim &d : dims)
    maxes.push_back(d.Max);
  return maxes;
}

/// The other values of dimension `d` compiled to compare with MAX: MAX - 1,
/// and MAX - 2 where the range has it (three values show a line), then with
/// `withMin` MIN where it is below those.
std::vector<int64_t> probeValues(const ir::BoundedDim &d, bool withMin) {
  std::vector<int64_t> at = {d.Max - 1};
  if (d.Max - 2 >= d.Min)
    at.push_back(d.Max - 2);
  if (withMin && d.Min < d.Max - 2)
    at.push_back(d.Min);
  return at;
}

/// Every varying dimension at MAX - 1 at once (the others at MAX), and how
/// many vary: a product of two dimensions has other slopes there than each
/// dimension alone.
std::vector<int64_t> jointValues(const std::vector<ir::BoundedDim> &dims, size_t &varying) {
  std::vector<int64_t> joint = maxesOf(dims);
  varying = 0;
  for (size_t k = 0; k < dims.size(); ++k)
    if (dims[k].Min < dims[k].Max)
      joint[k] = dims[k].Max - 1, ++varying;
  return joint;
}

/// The numbers a value computed from dimension `k` derives from, traced
/// back through what infer-and-fold computed (ir::Graph::Folds) at MAX and
/// at the probes' values `at` to the values whose every element is an
/// affine function of the dimension: each gets its coefficients for `k` in
/// `rules`. False where a number does not lead there (not folded, or not
/// affine where it starts to vary).
class NumberTracer {
public:
  NumberTracer(const ir::Graph &g, const std::vector<std::unique_ptr<ir::Graph>> &probes,
               const std::vector<int64_t> &at, int64_t max, size_t k, size_t dims,
               std::map<std::string, ir::NumberRule> &rules)
      : G(g), Probes(probes), At(at), Max(max), K(k), Dims(dims), Rules(rules) {}

  bool trace(const std::string &name) {
    if (!Seen.insert(name).second)
      return true;
    auto rec = G.Folds.find(name);
    if (rec == G.Folds.end()) {
      // An initializer or a constant the model holds: the same at every value.
      for (const ir::Value *in : G.Inputs)
        if (in->Name == name)
          return false;
      return true;
    }
    const Tensor &t0 = *rec->second.Value;
    std::vector<const Tensor *> ts;
    bool same = true;
    for (const auto &q : Probes) {
      auto r = q->Folds.find(name);
      if (r == q->Folds.end())
        return false;
      ts.push_back(r->second.Value.get());
      same &= r->second.Value->shape() == t0.shape() &&
              r->second.Value->denseBytes() == t0.denseBytes();
    }
    if (same)
      return true;
    if (std::optional<std::vector<int64_t>> slopes = affine(t0, ts)) {
      ir::NumberRule &r = Rules[name];
      r.Coeffs.resize((size_t)t0.numel() * Dims, 0);
      r.Offsets.assign((size_t)t0.numel(), 0);
      for (size_t e = 0; e < slopes->size(); ++e)
        r.Coeffs[e * Dims + K] = (*slopes)[e];
      return true;
    }
    for (const std::string &in : rec->second.Inputs)
      if (!in.empty() && !trace(in))
        return false;
    return true;
  }

private:
  /// Each element's slope where every element of `t0` (at MAX) and `ts`
  /// (at At) is a whole number on a line through them.
  std::optional<std::vector<int64_t>> affine(const Tensor &t0, const std::vector<const Tensor *> &ts) {
    if (t0.numel() > 256)
      return std::nullopt; // an mlcc.DimAffine node computes each element
    std::vector<int64_t> slopes((size_t)t0.numel(), 0);
    for (const Tensor *t : ts)
      if (t->shape() != t0.shape() || t->dtype() != t0.dtype())
        return std::nullopt;
    for (int64_t e = 0; e < t0.numel(); ++e) {
      double v0 = t0.doubleAt(e);
      if (v0 != std::floor(v0))
        return std::nullopt;
      for (size_t p = 0; p < ts.size(); ++p) {
        double v = ts[p]->doubleAt(e), steps = (double)(Max - At[p]);
        double slope = (v0 - v) / steps;
        if (v != std::floor(v) || slope != std::floor(slope) ||
            (p > 0 && (int64_t)slope != slopes[(size_t)e]))
          return std::nullopt;
        slopes[(size_t)e] = (int64_t)slope;
      }
    }
    return slopes;
  }

  const ir::Graph &G;
  const std::vector<std::unique_ptr<ir::Graph>> &Probes;
  const std::vector<int64_t> &At;
  int64_t Max;
  size_t K, Dims;
  std::map<std::string, ir::NumberRule> &Rules;
  std::set<std::string> Seen;
};

} // namespace

bool addTripRules(const CompileOptions &o, const llvmgen::TargetSpec &target, PipelineOptions &po,
                  const ir::Graph &g, const std::vector<ir::BoundedDim> &dims) {
  if (g.TripCounts.empty())
    return false;
  const PipelineOptions probePo = probeOptions(po);
  const std::vector<int64_t> maxes = maxesOf(dims);
  std::map<std::string, ir::TripRule> rules;
  // A MIN where the model compiles only with the rules the other values
  // show (a Loop with scan outputs that runs no time there): the rules are
  // checked there in the next round.
  std::optional<CompileError> minError;
  for (size_t k = 0; k < dims.size(); ++k) {
    const ir::BoundedDim &d = dims[k];
    if (d.Min == d.Max)
      continue;
    const std::string flag = flagText(d);
    // A count must be affine in the dimension and hold at MIN as well.
    std::vector<int64_t> at = probeValues(d, true);
    std::vector<std::vector<int64_t>> values;
    std::vector<std::unique_ptr<ir::Graph>> probes;
    for (size_t p = 0; p < at.size(); ++p) {
      values.push_back(maxes);
      values.back()[k] = at[p];
      try {
        probes.push_back(compileAt(o, target, probePo, dims, values.back(), flag));
      } catch (const CompileError &e) {
        if (p != 2) // MAX-1 and MAX-2 compile where MAX does
          throw;
        minError = e;
        at.pop_back();
      }
    }
    for (const auto &[name, count] : g.TripCounts) {
      // The counts where the loop runs as at those values; past them it is
      // absent (inside a loop that runs fewer times there: a later round
      // finds it) or in a spare iteration (a copy of another, which runs at
      // none of those values).
      std::vector<int64_t> counts;
      bool spareDiffers = false;
      for (const auto &q : probes) {
        auto it = q->TripCounts.find(name);
        if (it == q->TripCounts.end())
          break;
        if (spare(*q, name)) {
          spareDiffers |= it->second != count;
          continue;
        }
        counts.push_back(it->second); // a leading part: smaller values spare more
      }
      std::string seen = std::to_string(count) + " times at " + d.Name + "=" + std::to_string(d.Max);
      for (size_t p = 0; p < counts.size(); ++p)
        seen += (p + 1 < counts.size() ? ", " : " and ") + std::to_string(counts[p]) + " at " +
                std::to_string(at[p]);
      auto notAffine = [&] {
        fail(ErrorKind::Unsupported)
            << flag << ": node '" << name << "' runs " << seen
            << ": its number of iterations is not an affine function of " << d.Name;
      };
      // A rule of an earlier round: its count at each value.
      auto known = po.TripRules.find(name);
      if (known != po.TripRules.end()) {
        for (size_t p = 0; p < counts.size(); ++p) {
          int64_t want = known->second.Offset;
          for (size_t j = 0; j < dims.size(); ++j)
            want += known->second.Coeffs[j] * values[p][j];
          if (counts[p] != want)
            notAffine();
        }
        continue;
      }
      if (counts.empty() || counts[0] == count) {
        // The same count wherever the loop runs as itself, but not in the
        // spare copies: a rule of that count keeps the graph the same.
        if (spareDiffers)
          rules[name].Coeffs.resize(dims.size(), 0);
        continue;
      }
      const int64_t slope = count - counts[0];
      for (size_t p = 1; p < counts.size(); ++p)
        if (counts[p] != count - slope * (d.Max - at[p]))
          notAffine();
      if (slope < 0)
        fail(ErrorKind::Unsupported)
            << flag << ": node '" << name << "' runs " << seen << ": a number of "
            << "iterations that falls as " << d.Name << " grows is not supported";
      ir::TripRule &r = rules[name];
      r.Coeffs.resize(dims.size(), 0);
      r.Coeffs[k] = slope;
    }
  }
  if (rules.empty() && minError)
    throw *minError;
  for (auto &[name, r] : rules) {
    r.Most = r.Offset = g.TripCounts.at(name);
    for (size_t k = 0; k < dims.size(); ++k)
      r.Offset -= r.Coeffs[k] * dims[k].Max;
  }
  // A count that multiplies two dimensions (see jointValues).
  size_t varying = 0;
  const std::vector<int64_t> joint = jointValues(dims, varying);
  if (varying > 1 && !rules.empty()) {
    std::string flags;
    for (const ir::BoundedDim &d : dims)
      flags += (flags.empty() ? "" : " ") + flagText(d);
    std::unique_ptr<ir::Graph> q = compileAt(o, target, probePo, dims, joint, flags);
    for (const auto &[name, r] : rules) {
      int64_t want = r.Offset;
      for (size_t k = 0; k < dims.size(); ++k)
        want += r.Coeffs[k] * joint[k];
      auto it = q->TripCounts.find(name);
      if (it != q->TripCounts.end() && it->second != want)
        fail(ErrorKind::Unsupported)
            << flags << ": node '" << name << "' runs " << it->second << " times with every "
            << "dimension at MAX-1, not the " << want << " each dimension alone gives: not an "
            << "affine function of the dimensions (a product of two?)";
    }
  }
  for (auto &[name, r] : rules)
    po.TripRules[name] = r;
  return !rules.empty();
}

bool attachBoundedExtents(const CompileOptions &o, const llvmgen::TargetSpec &target,
                          PipelineOptions po, ir::Graph &g,
                          const std::vector<ir::BoundedDim> &dims,
                          std::map<std::string, ir::NumberRule> &numbers) {
  g.BoundedDims = dims;
  // Numbers computed from the dimensions that nodes read as data, found in
  // this round (ir::NumberRule).
  std::map<std::string, ir::NumberRule> found;
  po = probeOptions(po);
  // Every value runs the kernels planned at MAX: the probes take those
  // plans (a tile chosen for fewer rows would pack other panels).
  for (const auto &n : g.Nodes)
    po.FixedPlans[n->Name] = n->Plan.asPlanned();
  const std::vector<ir::Value *> values = liveValues(g);
  // Per value and axis, each dimension's coefficient.
  std::map<const ir::Value *, std::vector<std::vector<int64_t>>> coeffs;
  // Which nodes read each value, and at which input.
  std::map<const ir::Value *, std::vector<std::pair<const ir::Node *, size_t>>> readers;
  for (const auto &n : g.Nodes)
    for (size_t i = 0; i < n->Inputs.size(); ++i)
      if (n->Inputs[i])
        readers[n->Inputs[i]].push_back({n.get(), i});
  const std::vector<int64_t> maxes = maxesOf(dims);
  auto compileAt = [&](const std::vector<int64_t> &vs, const std::string &flags) {
    return mlcc::compileAt(o, target, po, dims, vs, flags);
  };
  for (size_t k = 0; k < dims.size(); ++k) {
    const ir::BoundedDim &d = dims[k];
    if (d.Min == d.Max)
      continue;
    const std::string flag = flagText(d);
    // The probes (an extent must be affine in the dimension).
    const std::vector<int64_t> at = probeValues(d, false);
    std::vector<std::unique_ptr<ir::Graph>> probes;
    for (int64_t v : at) {
      std::vector<int64_t> vs = maxes;
      vs[k] = v;
      probes.push_back(compileAt(vs, flag));
    }
    auto where = [&](size_t p) { return d.Name + "=" + std::to_string(at[p]); };
    // What control flow decided from constants (ir::Graph::Decisions) must
    // be the same at every value: at the probes, and at MIN, where a test
    // such as seq > 1 changes that the probes near MAX do not see.
    // Those of a spare iteration of `q` (see ir::Graph::SpareIterations) are
    // copies made for the graph's structure and left out.
    auto sameDecisions = [&](const ir::Graph &q, int64_t value) {
      auto kept = [&](const std::vector<ir::Graph::Decision> &ds) {
        std::vector<ir::Graph::Decision> out;
        for (const ir::Graph::Decision &x : ds)
          if (!spare(q, x.Node))
            out.push_back(x);
        return out;
      };
      const std::vector<ir::Graph::Decision> mine = kept(g.Decisions), theirs = kept(q.Decisions);
      size_t i = 0;
      while (i < theirs.size() && i < mine.size() && theirs[i] == mine[i])
        ++i;
      if (i == theirs.size() && i == mine.size())
        return;
      auto text = [&](const std::vector<ir::Graph::Decision> &ds) {
        return i < ds.size() ? ds[i].Text : std::string("no such decision");
      };
      fail(ErrorKind::Unsupported)
          << flag << ": control flow is decided from " << d.Name << " at compile time: "
          << text(mine) << " at " << d.Name << "=" << d.Max << ", but "
          << text(theirs) << " at " << d.Name << "=" << value
          << "; a bounded dimension needs the same decisions at every value (narrow the "
             "range, or compile a library for each part)";
    };
    for (size_t p = 0; p < probes.size(); ++p)
      sameDecisions(*probes[p], at[p]);
    std::unique_ptr<ir::Graph> atMin;
    if (d.Min < d.Max - 2) {
      std::vector<int64_t> vs = maxes;
      vs[k] = d.Min;
      atMin = compileAt(vs, flag);
      sameDecisions(*atMin, d.Min);
    }
    for (size_t p = 0; p < probes.size(); ++p) {
      const ir::Graph &q = *probes[p];
      bool same = q.Nodes.size() == g.Nodes.size();
      size_t differs = 0;
      for (; same && differs < g.Nodes.size(); ++differs)
        if (q.Nodes[differs]->Name != g.Nodes[differs]->Name ||
            q.Nodes[differs]->OpType != g.Nodes[differs]->OpType)
          same = false;
      if (!same)
        fail(ErrorKind::Unsupported)
            << flag << ": the optimized graph differs between " << d.Name << "=" << d.Max
            << " and " << where(p) << " ("
            << (q.Nodes.size() != g.Nodes.size()
                    ? std::to_string(g.Nodes.size()) + " nodes against " +
                          std::to_string(q.Nodes.size())
                    : "node '" + g.Nodes[differs - 1]->Name + "' against '" +
                          q.Nodes[differs - 1]->Name + "'")
            << "); a bounded dimension needs one graph for every value";
    }
    for (ir::Value *v : values) {
      // The probes where `v` is computed for that value of the dimension
      // (not a spare iteration's copy); a leading part of them, as a
      // smaller value has more spare iterations.
      std::vector<const ir::Value *> pv;
      for (size_t p = 0; p < probes.size() && !spare(*probes[p], v->Name); ++p) {
        const ir::Value *x = probes[p]->findValue(v->Name);
        if (!x || x->Type.rank() != v->Type.rank() || x->Type.Type != v->Type.Type ||
            x->isConstant() != v->isConstant())
          fail(ErrorKind::Unsupported)
              << flag << ": value '" << v->Name << "' of " << origin(*v) << " is "
              << v->Type.str() << " at " << d.Name << "=" << d.Max << " but "
              << (x ? x->Type.str() + (x->isConstant() ? " (a constant)" : "") : "absent")
              << " at " << where(p) << "; its rank and type must not depend on " << d.Name;
        pv.push_back(x);
      }
      if (pv.empty())
        continue; // computed at MAX only: its extents are MAX's
      std::vector<int64_t> slope(v->Type.rank(), 0);
      for (size_t a = 0; a < v->Type.rank(); ++a) {
        const int64_t e0 = v->Type.Dims[a];
        slope[a] = e0 - pv[0]->Type.Dims[a];
        if (pv.size() > 1 && e0 - pv[1]->Type.Dims[a] != 2 * slope[a])
          fail(ErrorKind::Unsupported)
              << flag << ": axis " << a << " of value '" << v->Name << "' (" << origin(*v)
              << ") is " << e0 << ", " << pv[0]->Type.Dims[a] << " and "
              << pv[1]->Type.Dims[a] << " at " << d.Name << "=" << d.Max << ", " << at[0]
              << " and " << at[1] << ": not an affine function of " << d.Name;
        if (slope[a] != 0) {
          auto &c = coeffs[v];
          c.resize(v->Type.rank(), std::vector<int64_t>(dims.size(), 0));
          c[a][k] = slope[a];
        }
      }
      if (!v->isConstant())
        continue;
      // A constant computed from the dimension: fine where every smaller
      // instance is the largest one's leading part (a Range over the
      // sequence), or where nodes read it only as a shape or bounds; else
      // the numbers it comes from are computed at run time where they are
      // affine in the dimension (the next round compiles them so).
      bool traced = false;
      for (size_t p = 0; p < pv.size(); ++p) {
        if (pv[p]->Const->shape() != v->Const->shape() ||
            pv[p]->Const->denseBytes() != v->Const->denseBytes())
          v->FromDims = true;
        if (prefixOf(*pv[p]->Const, *v->Const))
          continue;
        bool dataRead = g.isGraphOutput(v);
        for (const auto &[n, i] : readers[v])
          dataRead |= !ops::isShapeOperand(*n, i);
        if (dataRead && !traced) {
          std::map<std::string, ir::NumberRule> rules;
          NumberTracer tracer(g, probes, at, d.Max, k, dims.size(), rules);
          if (tracer.trace(v->Name) && !rules.empty()) {
            bool fresh = false;
            for (auto &[name, r] : rules)
              if (!numbers.count(name)) {
                fresh = true;
                // This dimension's coefficients (several values may lead to
                // the same number: set, not added; other dimensions' stay).
                ir::NumberRule &mine = found[name];
                if (mine.Coeffs.empty())
                  mine = r;
                else
                  for (size_t c = k; c < r.Coeffs.size(); c += dims.size())
                    mine.Coeffs[c] = r.Coeffs[c];
              }
            traced = fresh;
          }
        }
        for (const auto &[n, i] : readers[v])
          if (!ops::isShapeOperand(*n, i) && !traced)
            fail(ErrorKind::Unsupported)
                << flag << ": node '" << n->Name << "' (" << n->OpType << ") reads input " << i
                << " ('" << v->Name << "'), numbers computed from " << d.Name
                << " at compile time; a bounded dimension supports such numbers only as "
                   "shapes, sizes and bounds so far";
        if (g.isGraphOutput(v) && !traced)
          fail(ErrorKind::Unsupported)
              << flag << ": graph output '" << v->Name << "' holds numbers computed from "
              << d.Name << " at compile time that are not an affine function of " << d.Name;
      }
    }
    // The lines through MAX, MAX-1 and MAX-2 must hold at MIN too (an
    // extent rounded up, such as Split's equal parts, is straight near MAX
    // only).
    for (const ir::Value *v : values) {
      const ir::Value *x = atMin ? atMin->findValue(v->Name) : nullptr;
      if (!x || spare(*atMin, v->Name) || x->Type.rank() != v->Type.rank())
        continue;
      auto it = coeffs.find(v);
      for (size_t a = 0; a < v->Type.rank(); ++a) {
        int64_t want = v->Type.Dims[a];
        if (it != coeffs.end())
          want -= it->second[a][k] * (d.Max - d.Min);
        if (x->Type.Dims[a] != want)
          fail(ErrorKind::Unsupported)
              << flag << ": axis " << a << " of value '" << v->Name << "' (" << origin(*v)
              << ") is " << x->Type.Dims[a] << " at " << d.Name << "=" << d.Min << ", not the "
              << want << " its extents at " << d.Max << ", " << at[0]
              << (at.size() > 1 ? " and " + std::to_string(at[1]) : std::string())
              << " give: not an affine function of " << d.Name;
      }
    }
  }
  // Each dimension's coefficients are its slopes with the others at MAX:
  // an extent that multiplies two dimensions (a Reshape that flattens
  // batch and seq) shows at jointValues.
  size_t varying = 0;
  const std::vector<int64_t> joint = jointValues(dims, varying);
  if (varying > 1) {
    std::string flags, at;
    for (size_t k = 0; k < dims.size(); ++k) {
      flags += (k ? " " : "") + flagText(dims[k]);
      at += (k ? ", " : "") + dims[k].Name + "=" + std::to_string(joint[k]);
    }
    std::unique_ptr<ir::Graph> q = compileAt(joint, flags);
    for (const ir::Value *v : values) {
      if (spare(*q, v->Name))
        continue;
      const ir::Value *x = q->findValue(v->Name);
      if (!x || x->Type.rank() != v->Type.rank())
        fail(ErrorKind::Unsupported) << flags << ": value '" << v->Name << "' of " << origin(*v)
                                     << " differs at " << at
                                     << "; a bounded dimension needs one graph for every value";
      auto it = coeffs.find(v);
      for (size_t a = 0; a < v->Type.rank(); ++a) {
        int64_t want = v->Type.Dims[a];
        if (it != coeffs.end())
          for (size_t k = 0; k < dims.size(); ++k)
            want -= it->second[a][k] * (maxes[k] - joint[k]);
        if (x->Type.Dims[a] != want)
          fail(ErrorKind::Unsupported)
              << flags << ": axis " << a << " of value '" << v->Name << "' (" << origin(*v)
              << ") is " << x->Type.Dims[a] << " at " << at << ", not the " << want
              << " its extent at each dimension alone gives: not an affine function of the "
                 "dimensions (a product of two?)";
      }
    }
  }
  if (!found.empty()) {
    // Offsets: each element's value at every dimension's MAX.
    for (auto &[name, r] : found) {
      const Tensor &t = *g.Folds.at(name).Value;
      for (size_t e = 0; e < r.Offsets.size(); ++e) {
        int64_t off = (int64_t)t.doubleAt((int64_t)e);
        for (size_t k = 0; k < dims.size(); ++k)
          off -= r.Coeffs[e * dims.size() + k] * dims[k].Max;
        r.Offsets[e] = off;
      }
      numbers[name] = r;
    }
    return false;
  }
  for (ir::Value *v : values) {
    auto it = coeffs.find(v);
    if (it == coeffs.end())
      continue;
    v->Bounded.clear();
    for (size_t a = 0; a < it->second.size(); ++a) {
      const std::vector<int64_t> &c = it->second[a];
      bool any = false;
      int64_t offset = v->Type.Dims[a];
      for (size_t k = 0; k < c.size(); ++k) {
        any |= c[k] != 0;
        offset -= c[k] * dims[k].Max;
      }
      if (any)
        v->Bounded.push_back({(int64_t)a, c, offset});
    }
  }
  return true;
}

CompiledModel compileWithDims(const CompileOptions &o, const llvmgen::TargetSpec &target,
                              PipelineOptions po, const std::vector<ir::BoundedDim> &bounded) {
  if (bounded.empty()) {
    if (!o.KvCache.empty())
      fail(ErrorKind::Usage) << "--kv-cache needs the past length as a range (--dim NAME=MIN..MAX): "
                                "a cache buffer holds the rows of every step";
    return compileModel(o, target, po);
  }
  // The graph passes at every dimension's MAX, the axes that follow the
  // dimensions found, then the kernels, which run to the extents the
  // caller gives.
  const std::vector<int64_t> maxes = maxesOf(bounded);
  po.Fold.RecordFolds = true; // for the probes' NumberTracer
  PipelineOptions graphPo = po;
  graphPo.GraphOnly = true;
  CompiledModel compiled = compileModel(atValues(o, bounded, maxes), target, graphPo);
  // Loops and Scans whose number of iterations follows the dimensions run
  // to the count the caller's dimensions give.
  while (addTripRules(o, target, graphPo, *compiled.Graph, bounded))
    compiled = compileModel(atValues(o, bounded, maxes), target, graphPo);
  po.TripRules = graphPo.TripRules;
  // Numbers from the dimensions read as data: computed at run time.
  while (!attachBoundedExtents(o, target, po, *compiled.Graph, bounded, po.RunTimeNumbers)) {
    graphPo.RunTimeNumbers = po.RunTimeNumbers;
    compiled = compileModel(atValues(o, bounded, maxes), target, graphPo);
  }
  if (!po.GraphOnly) {
    setTargetOptions(po, o, target);
    compiled.Program = lowerGraph(*compiled.Graph, po);
  }
  return compiled;
}

} // namespace mlcc
