"""CRUSH and OSD maps built for the tests and benchmarks with Ceph's own tools (crushtool,
osdmaptool, a throw-away mon), and the tests that set pg_advisor's answers beside those
tools' on them."""
