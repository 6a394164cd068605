// Driving gnuplot: the preamble every comparison plot shares (a PNG terminal,
// pngcairo when this gnuplot has it, png otherwise; tab-separated data with
// "nan" for missing cells; legends and labels printed literally), quoting,
// and running a script as a subprocess in its folder, so the .gp file and its
// data files beside the PNG can be edited and rerun by hand. No libtorch here.
#pragma once

#include <string>

namespace slowpipe::study {

// A gnuplot single-quoted string literal ('' stands for '); a line break
// becomes the expression '...'."\n".'...' (fine in titles and labels).
std::string gp_quote(const std::string& text);

// The size of every PNG, in pixels.
constexpr int kPngWidthPx = 1200, kPngHeightPx = 700;

// Terminal, output, data format and key settings for a PNG named `png` (a file
// name relative to the script's folder), kPngWidthPx by kPngHeightPx.
std::string gp_preamble(const std::string& png, const std::string& title);

// Colour of series i (a fixed, colour-blind-friendly cycle), as "#rrggbb".
std::string gp_colour(size_t i);

// Runs `gnuplot SCRIPT` with `folder` as its working folder. Throws
// std::runtime_error (exit 1) with gnuplot's own messages when it fails or
// cannot be started.
void run_gnuplot(const std::string& folder, const std::string& script);

}  // namespace slowpipe::study
