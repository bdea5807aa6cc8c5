"""The latency benchmark (`python3 -m qa.bench.latency --help`): run.py makes the runs, reads
the mon's maps and prints the tables; client.py is a measuring client."""
