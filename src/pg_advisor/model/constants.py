"""Numbers from Ceph that several layers use, defined once."""

CRUSH_ITEM_NONE = 0x7FFFFFFF   # a hole in an EC up set (crush.h)
CRUSH_ITEM_UNDEF = 0x7FFFFFFE  # a slot CRUSH has not filled yet (crush.h)
NO_OSD = -1                    # our padding / hole marker in int matrices
WEIGHT_ONE = 0x10000           # CRUSH weights, reweights and primary affinity are 16.16 fixed point
# crush.h's CRUSH_BUCKET_* values, by the name `ceph osd crush dump` prints
CRUSH_BUCKET_ALGS = {"uniform": 1, "list": 2, "tree": 3, "straw": 4, "straw2": 5}
