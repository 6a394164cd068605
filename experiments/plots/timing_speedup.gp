# timing_speedup.gp: speed-up against bandwidth from `slowpipe timing --tsv`
# tables (one line per table and baseline), log bandwidth axis.
#
#   slowpipe timing --preset aqsgd-gpt2xl --fw 'aq(q4)' --bw q8 --baseline both --tsv > act.tsv
#   gnuplot -e "out='speedup.png'; tables='act.tsv'; labels='\"AQ-SGD q4/q8\"'" \
#           experiments/plots/timing_speedup.gp
#
# Variables: out, tables (space-separated TSV paths), labels (one per table,
# quoted when they hold spaces). Optional: column ("fp32_speedup": per step
# after warm-up; "fp32_run_speedup": whole run; the fp16_ columns likewise,
# fp16 drawn dashed when the table has it), title, size ("800,500").
# Columns are found by header name.
if (!exists("out") || !exists("tables")) { exit error "timing_speedup.gp: set out and tables" }
if (!exists("labels")) { labels = tables }
if (!exists("column")) { column = "speedup" }
if (!exists("title")) { title = "speed-up over an uncompressed wire" }
if (!exists("size")) { size = "800,500" }
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
  eval sprintf("set terminal pngcairo size %s font 'sans,10'", size)
} else {
  eval sprintf("set terminal png size %s", size)
}
set output out
set datafile separator "\t"
set title title
set logscale x
set xlabel "bandwidth [Mbit/s]"
set ylabel "speed-up [x]"
set grid
set key top right
set yrange [0:*]
# Column number of `name` in the header of file `f`.
col(f, name) = int(system(sprintf("head -1 '%s' | tr '\\t' '\\n' | grep -nx '%s' | cut -d: -f1", f, name)))
fp32(f) = col(f, "fp32_" . column)
fp16(f) = col(f, "fp16_" . column)
bw(f) = col(f, "bandwidth_bps")
plot for [i=1:words(tables)] word(tables, i) using (column(bw(word(tables, i))) / 1e6):(column(fp32(word(tables, i)))) \
       skip 1 with linespoints lw 2 pt 7 lc i title word(labels, i) . " vs fp32", \
     for [i=1:words(tables)] word(tables, i) using (column(bw(word(tables, i))) / 1e6):(fp16(word(tables, i)) > 0 ? column(fp16(word(tables, i))) : NaN) \
       skip 1 with linespoints lw 2 dt 2 pt 6 lc i title word(labels, i) . " vs fp16", \
     1 with lines lc rgb "gray" dt 3 title "no speed-up"
