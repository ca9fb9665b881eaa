"""GPT-2 training, inference and research engine (docs/python.md).

The compiled extension is gpt2lab._gpt2lab; this package re-exports it after
one setting that has to come first: OpenMP's wait policy.
"""
import os as _os

# Threads waiting for work sleep (PASSIVE) rather than spin, as the CLI's
# do: spinning threads beside any other busy process make decoding much
# slower. The OpenMP runtime reads the policy once, when it is
# loaded, which the import below does; a policy (or GOMP_SPINCOUNT) the user
# set is left alone (docs/python.md).
if "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from . import _gpt2lab as _ext  # noqa: E402
from ._gpt2lab import *  # noqa: E402,F401,F403
from ._gpt2lab import __version__  # noqa: E402,F401

# The classes are gpt2lab.Model, gpt2lab.Error, ... as before the package
# (reprs and tracebacks say so), not gpt2lab._gpt2lab.Model.
for _name in dir(_ext):
    if isinstance(getattr(_ext, _name), type):
        getattr(_ext, _name).__module__ = __name__
del _name
