"""The latency benchmark: client latency while a pool splits, a host comes in or an OSD is
drained, Ceph's path beside pg_advisor's (`python3 -m qa.bench.latency --help`; what it
measures: __main__.py). run.py makes one run, client.py is a measuring client (a process
each), intervals.py reads the mon's maps, tables.py prints the figures."""
