"""The latency benchmark (`python3 -m qa.bench.latency --help`): run.py makes one run,
client.py is a measuring client, intervals.py reads the mon's maps, tables.py prints."""
