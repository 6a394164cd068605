// Greedy label placement (see plot_labels.h).
#include "study/summary/internal/plot_labels.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace slowpipe::study {
namespace {

// Space kept clear around a label's text, in pixels.
constexpr double kPadPx = 2;
// How many steps further away from its point a label may move.
constexpr int kRings = 10;
// Half the width of an error bar with its caps, in pixels.
constexpr double kBarHalfWidthPx = 4;
// What covering an error bar costs against covering a label or a point (per pixel).
constexpr double kBarWeight = 0.25;

// Characters of a UTF-8 string (bytes that do not continue a sequence).
size_t utf8_length(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

double axis_position(double v, double lo, double hi, bool log, double size_px) {
  const double a = log ? std::log10(lo) : lo, b = log ? std::log10(hi) : hi;
  const double u = log ? std::log10(v) : v;
  return (u - a) / (b > a ? b - a : 1) * size_px;
}

double axis_value(double px, double lo, double hi, bool log, double size_px) {
  const double a = log ? std::log10(lo) : lo, b = log ? std::log10(hi) : hi;
  const double u = a + px / size_px * (b > a ? b - a : 1);
  return log ? std::pow(10, u) : u;
}

double overlap(const PixelBox& a, const PixelBox& b) {
  const double w = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
  const double h = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  return w > 0 && h > 0 ? w * h : 0;
}

PixelBox grown(const PixelBox& b, double by_px) {
  return {b.x0 - by_px, b.y0 - by_px, b.x1 + by_px, b.y1 + by_px};
}

PixelBox square(double x_px, double y_px, double half_px) {
  return {x_px - half_px, y_px - half_px, x_px + half_px, y_px + half_px};
}

// From a point to its label's anchor, in pixels.
struct Offset {
  double dx_px = 0, dy_px = 0;
  bool right_aligned = false, moved = false;
};

// The candidate offsets, nearest first: ring 0 right-above (the default),
// right-below, left-above, left-below, right, left; each further ring first
// stacks the label higher or lower beside its point, then moves it diagonally away.
std::vector<Offset> candidate_offsets(const LabelFrame& f) {
  const double cw = f.char_width_px, lh = f.line_height_px;
  const double level_dx = std::max(cw, f.point_radius_px + 2 * kPadPx);
  std::vector<Offset> out;
  const auto add_ring = [&](double dx, double dy, double level, bool moved) {
    constexpr double kSides[4][2] = {{1, 1}, {1, -1}, {-1, 1}, {-1, -1}};  // (x, y) signs
    for (const auto& s : kSides) out.push_back({s[0] * dx, s[1] * dy, s[0] < 0, moved});
    if (level <= 0) return;
    for (const double sx : {1.0, -1.0}) out.push_back({sx * level, 0, sx < 0, moved});
  };
  add_ring(cw, 0.6 * lh, level_dx, false);
  for (int ring = 1; ring <= kRings; ++ring) {
    add_ring(cw, (0.6 + ring) * lh, 0, true);
    add_ring(cw + 2 * ring * cw, (0.6 + 0.8 * ring) * lh, level_dx + 2 * ring * cw, true);
  }
  return out;
}

// The obstacles a label avoids besides other labels: points' markers and error bars.
struct Obstacles {
  std::vector<PixelBox> points, bars;
};

Obstacles obstacles_of(const std::vector<LabelledPoint>& points, const LabelFrame& f) {
  Obstacles o;
  for (const auto& p : points) {
    double x_px = 0, y_px = 0;
    to_pixels(f, p.x, p.y, x_px, y_px);
    o.points.push_back(square(x_px, y_px, f.point_radius_px));
    if (!(p.y_err > 0)) continue;
    double lo = 0, hi = 0;
    to_pixels(f, p.x, p.y - p.y_err, x_px, lo);
    to_pixels(f, p.x, p.y + p.y_err, x_px, hi);
    o.bars.push_back(grown({x_px, lo, x_px, hi}, kBarHalfWidthPx));
  }
  return o;
}

// What placing a label's box here costs: the area it shares with placed labels (padded by
// kPadPx), points and (less) error bars, plus its area outside the plot. 0: a free spot.
double placement_cost(const PixelBox& box, const std::vector<PixelBox>& labels, const Obstacles& o,
                      const LabelFrame& f) {
  const PixelBox padded = grown(box, kPadPx);
  double cost = 0;
  for (const auto& b : labels) cost += overlap(padded, b);
  for (const auto& b : o.points) cost += overlap(box, b);
  for (const auto& b : o.bars) cost += kBarWeight * overlap(box, b);
  const double area = (box.x1 - box.x0) * (box.y1 - box.y0);
  return cost + area - overlap(box, {0, 0, f.width_px, f.height_px});
}

}  // namespace

void to_pixels(const LabelFrame& frame, double x, double y, double& x_px, double& y_px) {
  x_px = axis_position(x, frame.x_min, frame.x_max, frame.log_x, frame.width_px);
  y_px = axis_position(y, frame.y_min, frame.y_max, false, frame.height_px);
}

PixelBox label_box(const std::string& text, double x_px, double y_px, bool right_aligned,
                   const LabelFrame& frame) {
  const double w = static_cast<double>(utf8_length(text)) * frame.char_width_px;
  const double h = frame.line_height_px / 2;
  return right_aligned ? PixelBox{x_px - w, y_px - h, x_px, y_px + h}
                       : PixelBox{x_px, y_px - h, x_px + w, y_px + h};
}

std::vector<LabelPlacement> place_labels(const std::vector<LabelledPoint>& points,
                                         const LabelFrame& frame) {
  std::vector<double> xs(points.size()), ys(points.size());
  for (size_t i = 0; i < points.size(); ++i)
    to_pixels(frame, points[i].x, points[i].y, xs[i], ys[i]);
  std::vector<size_t> order(points.size());
  std::iota(order.begin(), order.end(), 0);
  const auto key = [&](size_t i) { return std::isnan(xs[i]) ? INFINITY : xs[i]; };  // NaN last
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  const Obstacles obstacles = obstacles_of(points, frame);
  const std::vector<Offset> offsets = candidate_offsets(frame);
  std::vector<LabelPlacement> out(points.size());
  std::vector<PixelBox> placed;
  for (const size_t i : order) {
    double best_cost = INFINITY;  // the first candidate is taken even at a NaN cost
    for (const auto& o : offsets) {
      const PixelBox box =
          label_box(points[i].text, xs[i] + o.dx_px, ys[i] + o.dy_px, o.right_aligned, frame);
      const double cost = placement_cost(box, placed, obstacles, frame);
      if (!(cost < best_cost) && &o != &offsets.front()) continue;
      best_cost = cost;
      out[i].x = axis_value(xs[i] + o.dx_px, frame.x_min, frame.x_max, frame.log_x, frame.width_px);
      out[i].y = axis_value(ys[i] + o.dy_px, frame.y_min, frame.y_max, false, frame.height_px);
      out[i] = {out[i].x, out[i].y, o.right_aligned, o.moved, box};
      if (cost == 0) break;
    }
    placed.push_back(out[i].box);
  }
  return out;
}

}  // namespace slowpipe::study
