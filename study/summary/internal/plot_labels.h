// Where the point labels of a scatter plot go (the Pareto figures,
// docs/summary.md): a greedy placement that estimates each label's box from
// its character count, the font and the plot's size and ranges, and tries
// candidate positions around its point (right/left, above/below, then further
// away in steps) until one overlaps no label placed before it, no point and no
// error bar, inside the plot area. A label that had to move away from its
// point gets a leader line. Pure and deterministic (same input, same
// positions); no gnuplot here. Left out: real font metrics (an average
// character width stands for every glyph), leader lines crossing labels, and
// any search beyond greedy order.
#pragma once

#include <string>
#include <vector>

namespace slowpipe::study {

// The plot a label is placed in: the axis ranges in data units (x on a log10
// axis when log_x; x_min > 0 then), the plot area's size in pixels and the
// label font's estimated average character width and line height in pixels.
struct LabelFrame {
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  bool log_x = false;
  double width_px = 900, height_px = 560;
  double char_width_px = 7, line_height_px = 14;
  double point_radius_px = 6;  // half the side of the square a point's marker covers
};

// A point to label: its position in data units, the half length of its
// vertical error bar (0 or NaN: none) and its text (UTF-8).
struct LabelledPoint {
  double x = 0, y = 0, y_err = 0;
  std::string text;
};

// A box in pixels from the plot area's bottom-left corner.
struct PixelBox {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

struct LabelPlacement {
  double x = 0, y = 0;         // the text's anchor in data units; the text is centred on y
  bool right_aligned = false;  // the text ends at x (left of its point), else starts at x
  bool leader = false;         // moved away from its point: draw a line from the point to (x, y)
  PixelBox box;                // the text's estimated box
};

// The estimated box of `text` anchored at pixel (x_px, y_px).
PixelBox label_box(const std::string& text, double x_px, double y_px, bool right_aligned,
                   const LabelFrame& frame);

// A data point's position in pixels from the plot area's bottom-left corner.
void to_pixels(const LabelFrame& frame, double x, double y, double& x_px, double& y_px);

// One placement per point, in the points' order. Labels are placed greedily,
// left to right by their point (ties by input order); a lone point's label sits
// right-above it (one character right, 0.6 line up, as gnuplot's "offset char 1,0.6").
std::vector<LabelPlacement> place_labels(const std::vector<LabelledPoint>& points,
                                         const LabelFrame& frame);

}  // namespace slowpipe::study
