"""The probe mgr module test_interpreter_live.py loads beside pg_advisor (module.py)."""
from .module import Module  # noqa: F401
