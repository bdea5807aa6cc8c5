"""The thrasher: pg_advisor in mode auto on a cluster of its own while one action after another
disturbs it, every invariant checked (`python3 -m qa.thrash --help`). __main__.py runs it,
thrasher.py takes the actions, client.py writes and checks the data, watch.py samples the
invariants."""
