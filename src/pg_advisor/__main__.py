"""`python3 -m pg_advisor`: the offline CLI (cli.py) on JSON dumps of a cluster."""
import sys

from .cli import main

sys.exit(main())
