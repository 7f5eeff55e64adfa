# trainsim `simulate` plots. Redraw: run `gnuplot plots.gp` in this folder (gnuplot 5,
# svg terminal; Debian package gnuplot-nox). Data: the .dat files beside this script.
if (!exists('outdir')) outdir = '.'
set terminal svg size 900,600 dynamic noenhanced font 'sans,12' background rgb 'white'
set key outside right top
set grid
set bars small

# Epoch time vs batch size per rank
set output outdir.'/epoch_vs_batch.svg'
set title 'Epoch time vs batch size per rank: predicted (lines) and measured (points)'
set xlabel 'batch per rank'
set ylabel 'epoch time, s'
set logscale xy
set format x '%g'
set autoscale xy
plot 'epoch_vs_batch.dat' index 0 using 1:2 with linespoints lc 1 pt 6 title 'ddp 1 rank predicted', \
     'epoch_vs_batch.dat' index 1 using 1:2 with linespoints lc 2 pt 6 title 'ddp 2 ranks predicted'

# Speedup vs rank count
set output outdir.'/speedup_vs_gpus.svg'
set title 'Predicted speedup T(1,b)/T(N,b) vs rank count'
set xlabel 'ranks N'
set ylabel 'speedup'
unset logscale
set format x '%g'
set xrange [0.8:2.2]
set yrange [0:*]
set xtics 1
plot 'speedup_vs_gpus.dat' index 0 using 1:2 with linespoints lc 1 pt 6 title 'ddp b=32 predicted', \
     'speedup_vs_gpus.dat' index 1 using 1:2 with linespoints lc 2 pt 6 title 'ddp b=64 predicted', \
     x with lines dt 2 lc rgb 'gray40' title 'ideal (speedup = N)'
unset logscale
set xtics autofreq

unset output
