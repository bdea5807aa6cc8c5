"""Questions about the cluster and its CRUSH placement: the status report, what-if simulation,
growth, the pg_num plan, and which OSDs a rule allows (legality, shares)."""
