#pragma once
// `measure train`: real training epochs with the course protocol, one row appended to runs.csv.
// `measure worker train ...`: one DDP rank of it (started by train_main through launch_ranks).

namespace trainsim::measure {

// argv[0] is "train". Returns the exit code: 0 done; 2 bad flags or input (one line
// `error: ...` on stderr); 1 a failure while running (a rank died, a device error).
int train_main(int argc, char** argv);

// argv[0] is the subcommand name ("train"), then train's flags plus --rank R --world-size N
// --store DIR. Rank 0 leaves the result row in DIR/result.csv for train_main. Exit code 0 or 1.
int train_worker_main(int argc, char** argv);

}  // namespace trainsim::measure
