# loss_vs_step.gp: training loss against optimizer step, several runs on one PNG.
#   gnuplot -e "out='loss.png'; runs='a.tsv b.tsv'; labels='\"run a\" \"run b\"'" \
#           experiments/plots/loss_vs_step.gp
# Input: `slowpipe export RUN.h5 --table train`. Other variables as in curves.gp.
if (!exists("xcol")) { xcol = "step" }
if (!exists("ycol")) { ycol = "loss" }
if (!exists("title")) { title = "training loss" }
plots_dir = "."
do for [i=1:strlen(ARG0)] { if (ARG0[i:i] eq "/") { plots_dir = ARG0[1:i-1] } }
load plots_dir . "/curves.gp"
