# Predicted vs measured steps to the target loss (log-log), every case and batch size but the
# baselines; data: steps.dat (measured, predicted, predicted integrated, batch).
# Redraw: gnuplot steps.gp (in this folder; gnuplot 5, Debian package gnuplot-nox).
if (!exists('outdir')) outdir = '.'
set terminal svg size 760,640 dynamic noenhanced font 'sans,12' background rgb 'white'
set output outdir.'/steps.svg'
set title 'Steps to the target loss: McCandlish prediction from the baseline vs measured'
set xlabel 'measured steps (lr tuned per batch)'
set ylabel 'predicted steps'
set logscale xy
set format x '%g'
set format y '%g'
set grid
set key bottom right
set size ratio -1
stats 'steps.dat' using 1 nooutput
low = STATS_min / 1.5
high = STATS_max * 1.5
set xrange [low:high]
set yrange [low:high]
plot x with lines lc rgb 'black' title 'predicted = measured', \
     1.2 * x with lines dt 2 lc rgb 'gray50' title '+-20%', \
     0.8 * x with lines dt 2 lc rgb 'gray50' notitle, \
     'steps.dat' using 1:3 with points pt 6 ps 1 lc rgb '#d95f02' title 'integrated along the baseline', \
     'steps.dat' using 1:2 with points pt 7 ps 1.1 lc rgb '#1b9e77' title 'B_noise at the target (headline)'
