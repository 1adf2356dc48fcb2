"""`python -m evalbook ARGS` is the same as `evalbook ARGS`."""

import sys

from ._cli import main

sys.exit(main())
