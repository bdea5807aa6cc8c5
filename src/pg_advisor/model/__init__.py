"""The cluster as data: its types, a checked loader per dump and the snapshot they make, the
options, and the counts and limits every later layer starts from. No Ceph or mgr imports."""
