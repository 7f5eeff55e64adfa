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
     'epoch_vs_batch.dat' index 1 using 1:2:3:4 with yerrorbars lc 1 pt 7 ps 1.2 title 'ddp 1 rank measured', \
     'epoch_vs_batch.dat' index 2 using 1:2 with linespoints lc 2 pt 6 title 'ddp 2 ranks predicted', \
     'epoch_vs_batch.dat' index 3 using 1:2:3:4 with yerrorbars lc 2 pt 7 ps 1.2 title 'ddp 2 ranks measured'

# Speedup vs rank count
set output outdir.'/speedup_vs_gpus.svg'
set title 'Speedup T(1,b)/T(N,b) vs rank count: predicted (lines) and measured (points)'
set xlabel 'ranks N'
set ylabel 'speedup'
unset logscale
set format x '%g'
set xrange [0.8:2.2]
set yrange [0:*]
set xtics 1
plot 'speedup_vs_gpus.dat' index 0 using 1:2 with linespoints lc 1 pt 6 title 'ddp b=32 predicted', \
     'speedup_vs_gpus.dat' index 1 using 1:2 with points lc 1 pt 7 ps 1.2 title 'ddp b=32 measured', \
     'speedup_vs_gpus.dat' index 2 using 1:2 with linespoints lc 2 pt 6 title 'ddp b=64 predicted', \
     'speedup_vs_gpus.dat' index 3 using 1:2 with points lc 2 pt 7 ps 1.2 title 'ddp b=64 measured', \
     x with lines dt 2 lc rgb 'gray40' title 'ideal (speedup = N)'
unset logscale
set xtics autofreq

# Predicted vs measured
set output outdir.'/predicted_vs_measured.svg'
set title 'Predicted vs measured time per epoch'
set xlabel 'measured, s'
set ylabel 'predicted, s'
set logscale xy
set format x '%g'
set xrange [2.58973524:8.23283568]
set yrange [2.58973524:8.23283568]
set size ratio -1
plot 'predicted_vs_measured.dat' index 0 using 1:2 with points lc 1 pt 7 ps 1.2 title 'epoch_s', \
     'predicted_vs_measured.dat' index 1 using 1:2 with points lc 2 pt 5 ps 1.0 title 'train_s', \
     x with lines dt 2 lc rgb 'gray40' title 'y = x (exact prediction)'
set size noratio

unset output
