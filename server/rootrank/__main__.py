"""``python -m rootrank``: the same as the ``rootrank`` command."""

import sys

from rootrank.cli import main

sys.exit(main())
