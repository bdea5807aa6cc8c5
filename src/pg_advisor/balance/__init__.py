"""Even placement with pg-upmap-items: the balancer (its pool states, budget and windows),
the bytes evener, pins for remapped PGs, drains, and the report and mon commands of a round."""
