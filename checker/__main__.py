"""``python -m checker`` is the ``kmc`` command (see checker.cli for the exit codes)."""

import sys

from checker.cli import main

if __name__ == "__main__":
    sys.exit(main())
