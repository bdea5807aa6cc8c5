"""What a CRUSH rule allows, in one place: the OSDs it reaches and their weights (reach.py),
each OSD's share of a pool under it (share.py), and which OSD may take a replica in
place of another (legality.py). All read a rule's steps as the loader typed them
(model/cluster.py's RuleStep); model/ holds the data, analysis/ asks the questions."""
