"""Doing the work in throttled steps: the plan's steps, the gates before each, pg_temp priming,
the plan state and its store, the executor and the driver the serve loop runs."""
