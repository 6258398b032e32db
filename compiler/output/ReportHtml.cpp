//===- ReportHtml.cpp - The --report-html page ----------------------------===//
//
// One self-contained HTML file (inline CSS and SVG, no script, no external
// resource) so that it opens anywhere and can be attached to a CI run:
//   - the totals;
//   - the arena over time: x is the kernel call, y the arena offset; each
//     buffer is a rectangle from the call that first touches it to the last,
//     at its offset and as tall as its size (hover for name and figures);
//   - the fused graph: one box per kernel call in execution order, arcs from
//     the call that writes a buffer to the calls that read it;
//   - the per-kernel table and the memory plan.
//
//===----------------------------------------------------------------------===//
#include "compiler/output/Report.h"

#include "compiler/output/Header.h"
#include "compiler/support/Error.h"

#include <algorithm>
#include <cstdio>

namespace mlcc::output {

std::string html(const std::string &s) {
  std::string out;
  for (char c : escapeForMessage(s)) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default: out += c;
    }
  }
  return out;
}

namespace {

std::string fmt(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

/// 1234567 -> "1.18 MiB".
std::string human(int64_t bytes) {
  if (bytes < 0)
    return "-";
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  if (bytes < 1024 * 1024)
    return fmt(bytes / 1024.0, 1) + " KiB";
  return fmt(bytes / (1024.0 * 1024.0), 2) + " MiB";
}

/// 1234567890 -> "1.23 G".
std::string humanCount(int64_t n) {
  if (n < 1000)
    return std::to_string(n);
  if (n < 1000000)
    return fmt(n / 1e3, 1) + " k";
  if (n < 1000000000)
    return fmt(n / 1e6, 1) + " M";
  return fmt(n / 1e9, 2) + " G";
}

/// A stable, distinct colour per buffer.
std::string colour(size_t i) {
  int hue = (int)((i * 137) % 360);
  return "hsl(" + std::to_string(hue) + ",65%," + (i % 2 ? "55%" : "68%") + ")";
}

std::string nodesText(const KernelCallReport &k) {
  if (k.Nodes.empty())
    return k.Label;
  std::string s;
  for (auto &n : k.Nodes)
    s += (s.empty() ? "" : " + ") + n.Name + " (" + n.Op + ")";
  return s;
}

std::string arenaSvg(const ModelReport &r) {
  const double left = 90, top = 10, width = 900, height = 360;
  size_t calls = std::max<size_t>(r.Calls.size(), 1);
  double cw = width / (double)calls;
  double sy = r.ArenaBytes > 0 ? height / (double)r.ArenaBytes : 0;
  std::string s = "<svg id=\"arena\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                  fmt(left + width + 20, 0) + "\" height=\"" + fmt(top + height + 50, 0) +
                  "\" role=\"img\" aria-label=\"arena over the kernel calls\">\n";
  s += "<rect x=\"" + fmt(left) + "\" y=\"" + fmt(top) + "\" width=\"" + fmt(width) +
       "\" height=\"" + fmt(height) + "\" fill=\"#f6f6f6\" stroke=\"#999\"/>\n";
  // Offset axis: 0 at the top, like an address map.
  for (int t = 0; t <= 4; ++t) {
    double y = top + height * t / 4;
    s += "<line x1=\"" + fmt(left - 5) + "\" x2=\"" + fmt(left + width) + "\" y1=\"" + fmt(y) +
         "\" y2=\"" + fmt(y) + "\" stroke=\"#ddd\"/>";
    s += "<text x=\"" + fmt(left - 8) + "\" y=\"" + fmt(y + 4) +
         "\" text-anchor=\"end\" class=\"axis\">" + human(r.ArenaBytes * t / 4) + "</text>\n";
  }
  size_t step = std::max<size_t>(1, calls / 20);
  for (size_t c = 0; c < r.Calls.size(); c += step)
    s += "<text x=\"" + fmt(left + cw * (c + 0.5)) + "\" y=\"" + fmt(top + height + 16) +
         "\" text-anchor=\"middle\" class=\"axis\">" + std::to_string(c) + "</text>";
  s += "<text x=\"" + fmt(left + width / 2) + "\" y=\"" + fmt(top + height + 38) +
       "\" text-anchor=\"middle\" class=\"label\">kernel call (execution order) &#8594;</text>\n";
  for (size_t i = 0; i < r.Buffers.size(); ++i) {
    const BufferReport &b = r.Buffers[i];
    if (b.FirstCall < 0)
      continue;
    double x = left + cw * (double)b.FirstCall, w = cw * (double)(b.LastCall - b.FirstCall + 1);
    double y = top + sy * (double)b.Offset, h = std::max(1.0, sy * (double)b.Bytes);
    s += "<rect class=\"buf\" x=\"" + fmt(x, 2) + "\" y=\"" + fmt(y, 2) + "\" width=\"" +
         fmt(w, 2) + "\" height=\"" + fmt(h, 2) + "\" fill=\"" + colour(i) +
         "\" stroke=\"#333\" stroke-width=\"0.5\"><title>" + html(b.Name) + ": " +
         std::to_string(b.Bytes) + " bytes at offset " + std::to_string(b.Offset) +
         ", calls " + std::to_string(b.FirstCall) + "-" + std::to_string(b.LastCall) +
         "</title></rect>\n";
  }
  return s + "</svg>\n";
}

std::string graphSvg(const ModelReport &r) {
  const double boxW = 560, boxH = 24, gap = 8, left = 10, top = 10;
  double height = top * 2 + (double)r.Calls.size() * (boxH + gap);
  size_t maxSpan = 1;
  for (auto &[a, b] : r.Edges)
    maxSpan = std::max(maxSpan, b - a);
  double arcRoom = 40 + std::min(300.0, 12.0 * (double)maxSpan);
  std::string s = "<svg id=\"graph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                  fmt(left + boxW + arcRoom + 20, 0) + "\" height=\"" + fmt(height, 0) +
                  "\" role=\"img\" aria-label=\"fused graph\">\n";
  auto centre = [&](size_t c) { return top + (double)c * (boxH + gap) + boxH / 2; };
  int64_t maxOps = 1;
  for (auto &k : r.Calls)
    maxOps = std::max(maxOps, k.Ops);
  for (auto &[a, b] : r.Edges) {
    double x = left + boxW, y1 = centre(a), y2 = centre(b);
    double d = 20 + std::min(300.0, 12.0 * (double)(b - a));
    s += "<path class=\"edge\" d=\"M" + fmt(x) + "," + fmt(y1) + " C" + fmt(x + d) + "," +
         fmt(y1) + " " + fmt(x + d) + "," + fmt(y2) + " " + fmt(x) + "," + fmt(y2) +
         "\" fill=\"none\" stroke=\"#4a7ab5\" stroke-width=\"1.2\" opacity=\"0.7\"/>\n";
  }
  for (size_t c = 0; c < r.Calls.size(); ++c) {
    const KernelCallReport &k = r.Calls[c];
    double y = top + (double)c * (boxH + gap);
    // The box's shaded part is the call's share of the largest call's work.
    double opsW = boxW * (double)k.Ops / (double)maxOps;
    std::string io;
    for (size_t i : k.InputsRead)
      io += " &#8592; " + html(i < r.Inputs.size() ? r.Inputs[i] : "?");
    for (size_t i : k.OutputsWritten)
      io += " &#8594; " + html(i < r.Outputs.size() ? r.Outputs[i] : "?");
    std::string text = std::to_string(c) + "  " + html(nodesText(k));
    if (text.size() > 90)
      text = text.substr(0, 87) + "...";
    s += "<g class=\"call\"><title>" + html(k.Kernel) + ": " + html(nodesText(k)) + "; " +
         humanCount(k.Ops) + " ops, code " + human(k.CodeBytes) + ", weights " +
         human(k.WeightBytes) + ", arena live " + human(k.ArenaLiveBytes) + "</title>";
    s += "<rect x=\"" + fmt(left) + "\" y=\"" + fmt(y) + "\" width=\"" + fmt(boxW) +
         "\" height=\"" + fmt(boxH) + "\" rx=\"4\" fill=\"#fff\" stroke=\"#555\"/>";
    s += "<rect x=\"" + fmt(left) + "\" y=\"" + fmt(y) + "\" width=\"" + fmt(opsW, 2) +
         "\" height=\"" + fmt(boxH) + "\" rx=\"4\" fill=\"#f2c14e\" opacity=\"0.45\"/>";
    s += "<text x=\"" + fmt(left + 6) + "\" y=\"" + fmt(y + 16) + "\" class=\"box\">" + text +
         io + "</text></g>\n";
  }
  return s + "</svg>\n";
}

} // namespace

std::string reportHtml(const ModelReport &r, const ReportContext &c) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<title>mlcc report: " + html(r.Name) + "</title>\n";
  h += "<style>\nbody{font:14px system-ui,sans-serif;margin:24px;color:#222}"
       "h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
       "table{border-collapse:collapse}td,th{padding:2px 10px;border-bottom:1px solid #e4e4e4;"
       "text-align:right;font-variant-numeric:tabular-nums}td.l,th.l{text-align:left}"
       ".axis{font-size:11px;fill:#555}.label{font-size:12px;fill:#333}"
       ".box{font-size:12px;fill:#222;font-family:ui-monospace,monospace}"
       "svg{display:block;margin:8px 0}\n</style>\n</head>\n<body>\n";
  h += "<h1>" + html(r.Name) + " <small>(" + html(c.Model) + ")</small></h1>\n";
  h += "<table id=\"totals\">\n";
  auto row = [&](const std::string &k, const std::string &v) {
    h += "<tr><th class=\"l\">" + k + "</th><td class=\"l\">" + v + "</td></tr>\n";
  };
  row("target", html(c.Target + " (" + c.Triple + (c.Cpu.empty() ? "" : ", " + c.Cpu) + ")"));
  row("backend", html(c.Backend));
  row("kernel calls", std::to_string(r.Calls.size()) + " (" +
                          std::to_string(r.DistinctKernels) + " distinct kernels)");
  if (r.HasObject)
    row("code", std::to_string(r.Object.CodeBytes) + " bytes (" + human(r.Object.CodeBytes) +
                    "; " + std::to_string(r.CodeOutsideKernels) + " outside the kernels)");
  row("weights", std::to_string(r.WeightBytes) + " bytes (" + human(r.WeightBytes) + ")");
  row("arena", std::to_string(r.ArenaBytes) + " bytes (" + human(r.ArenaBytes) + ")");
  row("operations per run", humanCount(r.Ops));
  h += "</table>\n";

  h += "<h2>Arena over time</h2>\n<p>Each rectangle is a buffer in the arena: from the "
       "first kernel call that uses it to the last, at its offset and as tall as its size. "
       "Hover for details.</p>\n";
  h += arenaSvg(r);
  h += "<h2>Fused graph</h2>\n<p>Kernel calls in execution order; arcs go from the call "
       "that writes a buffer to the calls that read it; the shading is the call's share "
       "of the largest call's operations.</p>\n";
  h += graphSvg(r);

  // Schedule search's measures (--tune, --tune-db), where the compile had them.
  const bool tuned = std::any_of(r.Calls.begin(), r.Calls.end(),
                                 [](const KernelCallReport &k) { return !k.TuneMeasure.empty(); });
  h += "<h2>Kernels</h2>\n<table id=\"kernels\">\n<tr><th>call</th><th class=\"l\">kernel</th>"
       "<th>code B</th><th>weights B</th><th>ops</th><th>arena live B</th>";
  if (tuned)
    h += "<th>default ns</th><th>tuned ns</th><th class=\"l\">default plan</th>";
  h += "<th class=\"l\">ONNX nodes</th></tr>\n";
  for (size_t i = 0; i < r.Calls.size(); ++i) {
    const KernelCallReport &k = r.Calls[i];
    std::string code = !r.HasObject ? "-"
                       : k.SharesCodeWith >= 0 ? "(as call " + std::to_string(k.SharesCodeWith) + ")"
                                               : std::to_string(k.CodeBytes);
    h += "<tr><td>" + std::to_string(i) + "</td><td class=\"l\">" + html(k.Kernel) + "</td><td>" +
         code + "</td><td>" + std::to_string(k.WeightBytes) + "</td><td>" +
         std::to_string(k.Ops) + "</td><td>" + std::to_string(k.ArenaLiveBytes) + "</td>";
    if (tuned)
      h += k.TuneMeasure.empty()
               ? std::string("<td>-</td><td>-</td><td class=\"l\"></td>")
               : "<td>" + std::to_string((int64_t)k.TuneDefault) + "</td><td>" +
                     std::to_string((int64_t)k.TuneTuned) + "</td><td class=\"l\">" +
                     html(k.TuneDefaultPlan == k.Plan ? "(this one)" : k.TuneDefaultPlan) +
                     "</td>";
    h += "<td class=\"l\">" + html(nodesText(k)) + "</td></tr>\n";
  }
  h += "</table>\n";

  h += "<h2>Memory plan</h2>\n<table id=\"plan\">\n<tr><th>buffer</th><th class=\"l\">name</th>"
       "<th>offset</th><th>bytes</th><th>first call</th><th>last call</th></tr>\n";
  for (size_t i = 0; i < r.Buffers.size(); ++i) {
    const BufferReport &b = r.Buffers[i];
    h += "<tr><td>" + std::to_string(i) + "</td><td class=\"l\">" + html(b.Name) + "</td><td>" +
         std::to_string(b.Offset) + "</td><td>" + std::to_string(b.Bytes) + "</td><td>" +
         std::to_string(b.FirstCall) + "</td><td>" + std::to_string(b.LastCall) + "</td></tr>\n";
  }
  h += "</table>\n<p><small>mlcc " + std::string(mlccVersion()) + "</small></p>\n</body>\n</html>\n";
  return h;
}

} // namespace mlcc::output
