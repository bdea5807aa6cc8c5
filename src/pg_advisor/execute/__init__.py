"""Doing the work in throttled steps: the context a tick acts on, the plan's steps, the pacing
and gates before each, their mon commands and pg_temp priming, the plan state and its store,
the executor (the state machine) and the driver the serve loop runs."""
