"""Imported first by the scripts of this folder, before torch: this folder holds profile.py, and
cProfile (which some torch versions import) must get the standard library's `profile`, so that one
is imported while this folder is off sys.path. The folder is then put (back) at the front of
sys.path, for the scripts' own modules (cifar_data, resnet, ...)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _import_stdlib_profile():
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
    try:
        import profile  # noqa: F401
        import cProfile  # noqa: F401
    except ImportError:
        pass
    finally:
        sys.path[:] = saved
    if HERE not in sys.path:
        sys.path.insert(0, HERE)


_import_stdlib_profile()
