"""`python -m evalbook ARGS` is the same as `evalbook ARGS`."""

import sys

from ._cli._main import main

sys.exit(main())
