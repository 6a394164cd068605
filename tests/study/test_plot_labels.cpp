// Label placement of the Pareto figures (study/summary/internal/plot_labels.h): a dense
// cluster gets labels whose estimated boxes overlap neither each other nor the
// points (and the same cluster with every label at the default spot would
// overlap, so the check can fail), a lone point keeps the default spot
// right-above, a point at the right edge is labelled to its left, each anchor
// in data units lands where its box says, and placement is deterministic.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "study/summary/internal/plot_labels.h"

namespace st = slowpipe::study;
using Catch::Detail::Approx;

namespace {

double overlap(const st::PixelBox& a, const st::PixelBox& b) {
  const double w = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
  const double h = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  return w > 0 && h > 0 ? w * h : 0;
}

// A frame like a Pareto figure's: a log x axis over 1.3x beyond the points.
st::LabelFrame frame_for(double x_lo, double x_hi, double y_lo, double y_hi) {
  st::LabelFrame f;
  f.x_min = x_lo / 1.3, f.x_max = x_hi * 1.3, f.y_min = y_lo, f.y_max = y_hi;
  f.log_x = true;
  f.width_px = 912, f.height_px = 560;
  f.char_width_px = 7, f.line_height_px = 14, f.point_radius_px = 7;
  return f;
}

// Eight points within 3% in x and 2% in y, labels of 10 to 15 characters.
std::vector<st::LabelledPoint> dense_cluster() {
  const char* names[] = {"direct q3 fw",    "TAH-Quant 3",     "direct q4 fw",  "TAH-Quant 4",
                         "AQ-SGD q3 fw+bw", "AQ-SGD q4 fw+bw", "EF21 topk 10%", "plain sign bw"};
  std::vector<st::LabelledPoint> points;
  points.reserve(8);
  for (int i = 0; i < 8; ++i) {
    points.push_back({1e6 * (1 + 0.004 * i), 1.60 - 0.004 * i + 0.003 * (i % 2), 0.01, names[i]});
  }
  return points;
}

}  // namespace

TEST_CASE("place_labels: a dense cluster's labels overlap neither each other nor the points") {
  const auto points = dense_cluster();
  const st::LabelFrame f = frame_for(0.5e6, 2e6, 1.0, 2.5);
  const auto labels = st::place_labels(points, f);
  REQUIRE(labels.size() == points.size());
  size_t moved = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    INFO(points[i].text);
    for (size_t j = i + 1; j < labels.size(); ++j)
      CHECK(overlap(labels[i].box, labels[j].box) == 0);
    for (const auto& p : points) {
      double x_px = 0, y_px = 0;
      st::to_pixels(f, p.x, p.y, x_px, y_px);
      CHECK(overlap(labels[i].box, {x_px - 7, y_px - 7, x_px + 7, y_px + 7}) == 0);
    }
    CHECK(labels[i].box.x0 >= 0);
    CHECK(labels[i].box.x1 <= f.width_px);
    moved += labels[i].leader ? 1 : 0;
  }
  CHECK(moved > 0);  // not every label fits next to its point
  // Control: every label at the default spot, right-above, would overlap a neighbour.
  size_t clashes = 0;
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    double xa = 0, ya = 0, xb = 0, yb = 0;
    st::to_pixels(f, points[i].x, points[i].y, xa, ya);
    st::to_pixels(f, points[i + 1].x, points[i + 1].y, xb, yb);
    const auto a = st::label_box(points[i].text, xa + 7, ya + 8.4, false, f);
    const auto b = st::label_box(points[i + 1].text, xb + 7, yb + 8.4, false, f);
    clashes += overlap(a, b) > 0 ? 1 : 0;
  }
  CHECK(clashes == points.size() - 1);
}

TEST_CASE("place_labels: each anchor in data units lands on its box") {
  const auto points = dense_cluster();
  const st::LabelFrame f = frame_for(0.5e6, 2e6, 1.0, 2.5);
  for (const auto& l : st::place_labels(points, f)) {
    double x_px = 0, y_px = 0;
    st::to_pixels(f, l.x, l.y, x_px, y_px);
    CHECK(l.x > 0);
    CHECK((l.right_aligned ? l.box.x1 : l.box.x0) == Approx(x_px).margin(1e-6));
    CHECK((l.box.y0 + l.box.y1) / 2 == Approx(y_px).margin(1e-6));
  }
}

TEST_CASE("place_labels: a lone point keeps the default spot, right-above") {
  const st::LabelFrame f = frame_for(1e5, 1e7, 0, 4);
  const std::vector<st::LabelledPoint> points = {{1e6, 2.0, 0.3, "fp32"}};
  const auto labels = st::place_labels(points, f);
  REQUIRE(labels.size() == 1);
  double x_px = 0, y_px = 0;
  st::to_pixels(f, 1e6, 2.0, x_px, y_px);
  CHECK_FALSE(labels[0].right_aligned);
  CHECK_FALSE(labels[0].leader);
  CHECK(labels[0].box.x0 == Approx(x_px + f.char_width_px));
  CHECK((labels[0].box.y0 + labels[0].box.y1) / 2 == Approx(y_px + 0.6 * f.line_height_px));
  CHECK(labels[0].box.x1 - labels[0].box.x0 == Approx(4 * f.char_width_px));
  CHECK(labels[0].y > 2.0);
  CHECK(labels[0].x > 1e6);
}

TEST_CASE("place_labels: a point at the right edge is labelled to its left") {
  st::LabelFrame f = frame_for(1e5, 1e7, 0, 4);
  f.x_max = 1e7;  // the point sits on the edge
  const auto labels = st::place_labels({{1e7, 2.0, 0, "a long label here"}}, f);
  REQUIRE(labels.size() == 1);
  CHECK(labels[0].right_aligned);
  CHECK(labels[0].box.x1 <= f.width_px);
  CHECK(labels[0].x < 1e7);
}

TEST_CASE("place_labels: deterministic, and independent of the points' order") {
  const auto points = dense_cluster();
  const st::LabelFrame f = frame_for(0.5e6, 2e6, 1.0, 2.5);
  const auto a = st::place_labels(points, f);
  const auto b = st::place_labels(points, f);
  auto reversed = points;
  std::reverse(reversed.begin(), reversed.end());
  const auto c = st::place_labels(reversed, f);
  for (size_t i = 0; i < points.size(); ++i) {
    const size_t r = points.size() - 1 - i;
    CHECK(a[i].x == b[i].x);
    CHECK(a[i].y == b[i].y);
    CHECK(a[i].right_aligned == b[i].right_aligned);
    CHECK(a[i].x == c[r].x);
    CHECK(a[i].y == c[r].y);
    CHECK(a[i].leader == c[r].leader);
  }
}
