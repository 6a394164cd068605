# loss_vs_x.gp: training loss against any x column, e.g. simulated wall-clock
# time (sim_time_s) or bytes sent, several runs on one PNG.
#   gnuplot -e "out='loss_time.png'; xcol='sim_time_s'; runs='a.tsv b.tsv'" \
#           experiments/plots/loss_vs_x.gp
# Input: `slowpipe export RUN.h5 --table train`. Other variables as in curves.gp.
if (!exists("xcol")) { exit error "loss_vs_x.gp: set xcol, e.g. xcol='sim_time_s'" }
if (!exists("ycol")) { ycol = "loss" }
if (!exists("title")) { title = "training loss vs " . xcol }
plots_dir = "."
do for [i=1:strlen(ARG0)] { if (ARG0[i:i] eq "/") { plots_dir = ARG0[1:i-1] } }
load plots_dir . "/curves.gp"
