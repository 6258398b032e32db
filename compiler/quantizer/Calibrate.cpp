//===- Calibrate.cpp - Ranges of the quantized tensors from samples -------===//
//
// The float model runs on every calibration sample (the caller compiles it
// for the host with the observed tensors as extra outputs: SampleRunner)
// and each observed tensor's values are summarized:
//
//  - minmax: the smallest and largest value seen;
//  - percentile=P: a second pass fills a histogram of 2048 bins over
//    [min, max]; the range is the (100 - P)th to Pth percentile, so rare
//    outliers do not stretch the scale;
//  - entropy: a second pass fills a histogram of |x| over [0, max |x|];
//    the threshold T is the one whose quantization of the values below it
//    to the available levels (256 for tensors that are never negative,
//    128 per side otherwise) keeps the distribution closest to the
//    original in KL divergence (values above T clipped into the last bin),
//    the calibration of TensorRT's int8 mode. The range is [-T, T] (or
//    [0, T]) within the values seen.
//
// The range always contains 0, so that 0 (padding, Relu) is exact.
//
//===----------------------------------------------------------------------===//
#include "compiler/quantizer/Quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace mlcc::quantizer {

namespace {

constexpr int kBins = 2048;

struct Stats {
  double Min = INFINITY, Max = -INFINITY;
  std::vector<double> Hist;
};

} // namespace

QuantizeOptions parseCalibrationMethod(const std::string &text) {
  QuantizeOptions o;
  if (text == "minmax") {
    o.Method = CalibrationMethod::MinMax;
  } else if (text == "entropy") {
    o.Method = CalibrationMethod::Entropy;
  } else if (text.rfind("percentile", 0) == 0) {
    o.Method = CalibrationMethod::Percentile;
    if (text.size() > 10) {
      std::string p = text.substr(10);
      char *end = nullptr;
      double v = p[0] == '=' ? std::strtod(p.c_str() + 1, &end) : NAN;
      if (p[0] != '=' || p.size() == 1 || *end || !(v > 50 && v <= 100))
        fail(ErrorKind::Usage) << "--calibration-method: '" << text
                               << "' needs a percentile above 50 and at most 100 "
                                  "(e.g. percentile=99.99)";
      o.Percentile = v;
    }
  } else {
    fail(ErrorKind::Usage) << "--calibration-method: '" << text
                           << "' is not minmax, percentile[=P] or entropy";
  }
  return o;
}

double entropyThreshold(const std::vector<double> &hist, double maxAbs, int levels) {
  int n = (int)hist.size();
  double width = maxAbs / n;
  double total = 0;
  for (double h : hist)
    total += h;
  if (total == 0 || maxAbs == 0 || n <= levels)
    return maxAbs;
  double best = INFINITY;
  int bestI = n;
  std::vector<double> p, q;
  for (int i = levels; i <= n; ++i) {
    // P: the first i bins, the values beyond clipped into the last one.
    p.assign(hist.begin(), hist.begin() + i);
    double outliers = 0;
    for (int k = i; k < n; ++k)
      outliers += hist[k];
    p[i - 1] += outliers;
    // Q: the first i bins merged into `levels` groups, each group's count
    // spread evenly over its nonzero bins.
    q.assign(i, 0.0);
    for (int l = 0; l < levels; ++l) {
      int begin = (int)((int64_t)l * i / levels), end = (int)((int64_t)(l + 1) * i / levels);
      double sum = 0;
      int nonzero = 0;
      for (int k = begin; k < end; ++k) {
        sum += hist[k];
        nonzero += hist[k] != 0;
      }
      for (int k = begin; k < end; ++k)
        if (hist[k] != 0)
          q[k] = sum / nonzero;
    }
    double ps = 0, qs = 0;
    for (int k = 0; k < i; ++k) {
      ps += p[k];
      qs += q[k];
    }
    double kl = 0;
    for (int k = 0; k < i; ++k) {
      if (p[k] == 0)
        continue;
      double pk = p[k] / ps;
      // A bin the quantized form leaves empty (only the clipped last bin can
      // be) counts as a small probability.
      double qk = q[k] > 0 ? q[k] / qs : 1e-10;
      kl += pk * std::log(pk / qk);
    }
    if (kl < best) {
      best = kl;
      bestI = i;
    }
  }
  return (bestI + 0.5) * width > maxAbs ? maxAbs : (bestI + 0.5) * width;
}

std::map<std::string, Range> calibrate(const Annotation &a, size_t numSamples,
                                       const SampleRunner &run,
                                       const QuantizeOptions &options) {
  size_t count = a.Observed.size();
  std::vector<Stats> stats(count);
  for (size_t s = 0; s < numSamples; ++s)
    run(s, [&](size_t i, const float *data, size_t n) {
      Stats &st = stats[i];
      for (size_t k = 0; k < n; ++k) {
        double v = data[k];
        if (std::isnan(v))
          continue;
        st.Min = std::min(st.Min, v);
        st.Max = std::max(st.Max, v);
      }
    });
  for (size_t i = 0; i < count; ++i)
    if (!(stats[i].Min <= stats[i].Max))
      fail(ErrorKind::Invalid) << "calibration: tensor '" << a.Observed[i]
                               << "' had no finite value on the samples";
  bool histogram = options.Method != CalibrationMethod::MinMax;
  bool absolute = options.Method == CalibrationMethod::Entropy;
  if (histogram) {
    for (Stats &st : stats)
      st.Hist.assign(kBins, 0.0);
    for (size_t s = 0; s < numSamples; ++s)
      run(s, [&](size_t i, const float *data, size_t n) {
        Stats &st = stats[i];
        double lo = absolute ? 0.0 : st.Min;
        double hi = absolute ? std::max(std::fabs(st.Min), std::fabs(st.Max)) : st.Max;
        double scale = hi > lo ? kBins / (hi - lo) : 0.0;
        for (size_t k = 0; k < n; ++k) {
          double v = data[k];
          if (std::isnan(v))
            continue;
          if (absolute)
            v = std::fabs(v);
          int b = (int)((v - lo) * scale);
          st.Hist[std::clamp(b, 0, kBins - 1)] += 1;
        }
      });
  }
  std::map<std::string, Range> ranges;
  for (size_t i = 0; i < count; ++i) {
    const Stats &st = stats[i];
    Range r{st.Min, st.Max};
    if (options.Method == CalibrationMethod::Percentile && st.Max > st.Min) {
      double total = 0;
      for (double h : st.Hist)
        total += h;
      double tail = total * (100.0 - options.Percentile) / 100.0;
      double width = (st.Max - st.Min) / kBins;
      double acc = 0;
      int lo = 0;
      while (lo < kBins - 1 && acc + st.Hist[lo] <= tail)
        acc += st.Hist[lo++];
      acc = 0;
      int hi = kBins - 1;
      while (hi > lo && acc + st.Hist[hi] <= tail)
        acc += st.Hist[hi--];
      r = {st.Min + lo * width, st.Min + (hi + 1) * width};
    } else if (options.Method == CalibrationMethod::Entropy) {
      double maxAbs = std::max(std::fabs(st.Min), std::fabs(st.Max));
      double t = entropyThreshold(st.Hist, maxAbs, st.Min >= 0 ? 256 : 128);
      r = {std::max(st.Min, -t), std::min(st.Max, t)};
    }
    r.Lo = std::min(r.Lo, 0.0);
    r.Hi = std::max(r.Hi, 0.0);
    ranges[a.Observed[i]] = r;
  }
  return ranges;
}

} // namespace mlcc::quantizer
