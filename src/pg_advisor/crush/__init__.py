"""CRUSH placement in numpy, vectorized over all PGs, matching Ceph exactly."""
