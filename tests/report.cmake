# Tests of trainsim_report (tables, CSV, trace JSON, sweep order) and of the `simulate` program.
trainsim_add_test(report_format_test SOURCES report_format_test.cpp LIBS trainsim_report)
trainsim_add_test(report_tables_test SOURCES report_tables_test.cpp LIBS trainsim_report)
trainsim_add_test(report_csv_test SOURCES report_csv_test.cpp LIBS trainsim_report)
trainsim_add_test(report_sweep_test SOURCES report_sweep_test.cpp LIBS trainsim_report)
trainsim_add_test(report_gnuplot_test SOURCES report_gnuplot_test.cpp LIBS trainsim_gnuplot)
# These two run build/bin/simulate on tests/fixtures/report/: build it with them.
trainsim_add_test(report_trace_test SOURCES report_trace_test.cpp LIBS trainsim_report)
trainsim_add_test(report_simulate_test SOURCES report_simulate_test.cpp LIBS trainsim_report)
add_dependencies(report_trace_test simulate)
add_dependencies(report_simulate_test simulate)
# `simulate --compare`: runs.csv reader, join, MAPE, plot script, and the program on
# tests/fixtures/compare/ (the SVG checks are skipped where gnuplot is not on PATH).
trainsim_add_test(report_compare_test SOURCES report_compare_test.cpp LIBS trainsim_report)
add_dependencies(report_compare_test simulate)
