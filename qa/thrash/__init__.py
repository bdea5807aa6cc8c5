"""The thrasher: pg_advisor in mode auto while one action after another disturbs it
(`python3 -m qa.thrash --help`); thrasher.py acts, watch.py checks the invariants and data."""
