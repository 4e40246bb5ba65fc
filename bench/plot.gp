# bench/plot.gp - one plot of bench/compare: a measure vs message size, MPICH's own RMA
# and librma (median, with min-max bars), log-log axes; bandwidth plots also draw memcpy.
# bench/compare calls: gnuplot -e "datafile='..'; outfile='..'; plottitle='..';
#                                   ylabel='..'; bandwidth=0|1" bench/plot.gp
# Data columns: size mpich_med mpich_min mpich_max librma_med librma_min librma_max memcpy
# ("nan" where a side was not run or failed).
set terminal pngcairo size 900,560 font ",10"
set output outfile
set title plottitle noenhanced
set xlabel "message size (bytes)"
set ylabel ylabel
set logscale x 2
set logscale y 10
set format x "2^{%L}"
set xtics 4
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set key top left
if (bandwidth) { set key bottom right }
set datafile missing "nan"
plot datafile using 1:2:3:4 with yerrorlines lw 2 pt 7 ps 0.6 lc rgb "#1f77b4" \
         title "MPICH 4.0.2 own RMA", \
     datafile using 1:5:6:7 with yerrorlines lw 2 pt 5 ps 0.6 lc rgb "#d62728" \
         title "librma", \
     datafile using 1:(bandwidth ? $8 : NaN) with lines dt 2 lw 1 lc rgb "#555555" \
         title (bandwidth ? "memcpy (one process)" : "")
