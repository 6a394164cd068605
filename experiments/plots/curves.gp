# curves.gp: several runs on one PNG, one column against another, columns
# looked up by header name in TSV files written by `slowpipe export`.
#
#   gnuplot -e "out='loss.png'; xcol='step'; ycol='loss'; \
#               runs='a.tsv b.tsv'; labels='\"gpt fw=q4\" \"gpt fw=none\"'" \
#           experiments/plots/curves.gp
#
# Variables (set with -e): out, xcol, ycol, runs (space-separated TSV paths, no
# spaces inside a path), labels (one per run; quote labels that hold spaces;
# default: the file name). Optional: title, xlabel, ylabel, logy (1 for a log y
# axis), ema (0..1: exponential smoothing of y, 0 = off), size ("1000,650"),
# style ("lines", or "linespoints" for sparse tables such as eval).
# NaN cells ("nan") are skipped and the curve goes on through them. Uses the
# pngcairo terminal when this gnuplot has it, png otherwise.

if (!exists("out") || !exists("runs") || !exists("xcol") || !exists("ycol")) {
  exit error "curves.gp: set out, xcol, ycol and runs (see the header of curves.gp)"
}
if (words(runs) < 1) { exit error "curves.gp: runs is empty" }
if (!exists("labels")) { labels = "" }
if (!exists("title")) { title = sprintf("%s vs %s", ycol, xcol) }
if (!exists("xlabel")) { xlabel = xcol }
if (!exists("ylabel")) { ylabel = ycol }
if (!exists("logy")) { logy = 0 }
if (!exists("ema")) { ema = 0 }
if (!exists("size")) { size = "1000,650" }
if (!exists("style")) { style = "lines" }

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
  eval sprintf("set terminal pngcairo size %s font 'sans,11'", size)
} else {
  eval sprintf("set terminal png size %s", size)
}
set output out

set datafile separator "\t"
set datafile columnheaders
set datafile missing "nan"
set title title noenhanced
set xlabel xlabel noenhanced
set ylabel ylabel noenhanced
set grid
set key outside right top noenhanced Left reverse  # never on top of the curves
if (logy) { set logscale y }

label_of(i) = (words(labels) >= i) ? word(labels, i) : word(runs, i)
# Exponential moving average of y, restarted at the first row of every file
# (pseudo-column 0 counts rows from 0 in each file); a NaN cell holds the average.
smooth_y(y) = (y != y) ? (column(0) == 0 ? (ema_state = NaN) : ema_state) : \
  ((column(0) == 0 || ema_state != ema_state) ? (ema_state = y) : \
   (ema_state = ema * ema_state + (1 - ema) * y))
ema_state = NaN
y_of(y) = (ema > 0) ? smooth_y(y) : y

plot for [i=1:words(runs)] word(runs, i) \
  using (column(xcol)):(y_of(column(ycol))) with @style lw 2 title label_of(i)
