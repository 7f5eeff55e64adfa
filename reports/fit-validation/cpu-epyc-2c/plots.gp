# trainsim `simulate` plots. Redraw: run `gnuplot plots.gp` in this folder (gnuplot 5,
# svg terminal; Debian package gnuplot-nox). Data: the .dat files beside this script.
if (!exists('outdir')) outdir = '.'
set terminal svg size 900,600 dynamic noenhanced font 'sans,12' background rgb 'white'
set key outside right top
set grid
set bars small

# Epoch time vs batch size per GPU
set output outdir.'/epoch_vs_batch.svg'
set title 'Epoch time vs batch size per GPU: predicted (lines) and measured (points)'
set xlabel 'batch per GPU'
set ylabel 'epoch time, s'
set logscale xy
set format x '%g'
set autoscale xy
plot 'epoch_vs_batch.dat' index 0 using 1:2 with linespoints lc 1 pt 6 title 'ddp 1 GPU predicted'

unset output
