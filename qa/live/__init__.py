"""pg_advisor in a real ceph-mgr on the session's cluster (qa/conftest.py), its panel in a
real browser."""
