"""python3 -m qa.bench.latency: run.py's main, which says what the benchmark measures."""
import sys

from .run import main

if __name__ == "__main__":
    sys.exit(main())
