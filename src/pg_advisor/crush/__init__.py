"""Layer 2: CRUSH placement in numpy, vectorized over all PGs, matching Ceph exactly."""
