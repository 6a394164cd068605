# eval_vs_step.gp: an evaluation metric against optimizer step, several runs.
#   gnuplot -e "out='acc.png'; metric='accuracy'; runs='a.tsv b.tsv'" \
#           experiments/plots/eval_vs_step.gp
# Input: `slowpipe export RUN.h5 --table eval`. metric is any eval column:
# loss, accuracy, bits_per_byte, perplexity, or their _compressed variants
# (default loss). Other variables as in curves.gp.
if (!exists("metric")) { metric = "loss" }
if (!exists("xcol")) { xcol = "step" }
if (!exists("ycol")) { ycol = metric }
if (!exists("title")) { title = "evaluation: " . metric }
if (!exists("style")) { style = "linespoints" }
plots_dir = "."
do for [i=1:strlen(ARG0)] { if (ARG0[i:i] eq "/") { plots_dir = ARG0[1:i-1] } }
load plots_dir . "/curves.gp"
