"""How the reference trainer's scripts end (train.py, profile_torch.py, export_models.py): an exit
code and, for anything but success, one `error: ...` line on stderr."""

import sys
import traceback


def exit_code(body, usage_errors=(), failures=()):
    """Runs body() and returns the script's exit code: 0 done; 2 for one of `usage_errors` (a bad
    flag or input, its message on the line); 130 when interrupted; 1 for one of `failures` (its
    message) or any other exception (the traceback, then the first line of its message)."""
    try:
        body()
        return 0
    except usage_errors as e:
        print("error: %s" % e, file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr, flush=True)
        return 130
    except failures as e:
        print("error: %s" % e, file=sys.stderr, flush=True)
        return 1
    except Exception as e:  # a failure while running
        traceback.print_exc()
        print("error: %s" % (str(e).strip().splitlines() or [type(e).__name__])[0],
              file=sys.stderr, flush=True)
        return 1
