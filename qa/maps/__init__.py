"""CRUSH and OSD maps built with Ceph's own tools, and the tests that check pg_advisor against them."""
