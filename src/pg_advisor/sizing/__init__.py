"""How many PGs each pool should have: the sizer and the OSD memory model."""
