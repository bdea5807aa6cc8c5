"""Questions about the cluster and its CRUSH placement: the status report and the health
checks it raises, what-if simulation, growth, the pg_num plan, and which OSDs a rule
allows (legality, shares)."""
