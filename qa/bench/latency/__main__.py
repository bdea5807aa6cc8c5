"""python3 -m qa.bench.latency: run.py's main, which says what the benchmark measures."""
from .run import main

raise SystemExit(main())
