"""The cluster as data: the snapshot read from the OSDMap, CRUSH and PG stats, the options, and
the counts and limits every later layer starts from. No Ceph or mgr imports."""
