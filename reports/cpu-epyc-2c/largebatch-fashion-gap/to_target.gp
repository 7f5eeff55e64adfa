# measure largebatch-compare: steps and epochs to the target loss 0.915784 vs global batch.
# Lines: the model per lr rule from seed 0's baseline (batch 128), its epoch means crossed as the runs' are; a break where it
# predicts no progress or no crossing. Points: the runs, each against its own seed's target;
# runs that did not reach it in 5 epochs are not drawn (8).
# Redraw: run gnuplot on this script in its folder (gnuplot 5, Debian package gnuplot-nox).
if (!exists('outdir')) outdir = '.'
set terminal svg size 900,600 dynamic noenhanced font 'sans,12' background rgb 'white'
set logscale xy
set format x '%g'
set format y '%g'
set grid
set key outside right top
set xlabel 'global batch'
set output outdir.'/steps_to_target.svg'
set title 'Optimizer steps to the target loss 0.915784 (lines: model; points: runs)'
set ylabel 'steps'
plot 'to_target.dat' index 0 using 1:2 with lines lw 2 lc rgb '#1b9e77' title 'constant: model', \
     'to_target.dat' index 1 using 1:2 with lines lw 2 lc rgb '#d95f02' title 'linear: model', \
     'to_target.dat' index 2 using 1:2 with lines lw 2 lc rgb '#7570b3' title 'linear-warmup: model', \
     'to_target.dat' index 3 using 1:2 with lines lw 2 lc rgb '#e7298a' title 'sqrt: model', \
     'to_target.dat' index 4 using 1:2 with points pt 7 ps 1.2 lc rgb '#1b9e77' title 'constant: runs', \
     'to_target.dat' index 5 using 1:2 with points pt 7 ps 1.2 lc rgb '#d95f02' title 'linear: runs', \
     'to_target.dat' index 6 using 1:2 with points pt 7 ps 1.2 lc rgb '#7570b3' title 'linear-warmup: runs', \
     'to_target.dat' index 7 using 1:2 with points pt 7 ps 1.2 lc rgb '#e7298a' title 'sqrt: runs'
set output outdir.'/epochs_to_target.svg'
set title 'Epochs to the target loss 0.915784 (lines: model; points: runs)'
set ylabel 'epochs'
plot 'to_target.dat' index 0 using 1:3 with lines lw 2 lc rgb '#1b9e77' title 'constant: model', \
     'to_target.dat' index 1 using 1:3 with lines lw 2 lc rgb '#d95f02' title 'linear: model', \
     'to_target.dat' index 2 using 1:3 with lines lw 2 lc rgb '#7570b3' title 'linear-warmup: model', \
     'to_target.dat' index 3 using 1:3 with lines lw 2 lc rgb '#e7298a' title 'sqrt: model', \
     'to_target.dat' index 4 using 1:3 with points pt 7 ps 1.2 lc rgb '#1b9e77' title 'constant: runs', \
     'to_target.dat' index 5 using 1:3 with points pt 7 ps 1.2 lc rgb '#d95f02' title 'linear: runs', \
     'to_target.dat' index 6 using 1:3 with points pt 7 ps 1.2 lc rgb '#7570b3' title 'linear-warmup: runs', \
     'to_target.dat' index 7 using 1:3 with points pt 7 ps 1.2 lc rgb '#e7298a' title 'sqrt: runs'
unset output
