"""Benchmarks, not part of the test run: each prints pg_advisor's figure beside Ceph's own
tool's or path's from the same run. Run from the repository root:
`PYTHONPATH=src /usr/bin/python3 -m qa.bench.NAME --help`."""
