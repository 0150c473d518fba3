"""``python -m autocomp_core.cli``."""

from . import main

main()
