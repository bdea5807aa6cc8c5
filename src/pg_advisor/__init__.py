"""pg_advisor: a ceph-mgr module that sizes placement groups and balances data."""
try:
    import ceph_module  # noqa: F401  (exists only inside ceph-mgr or under a test stand-in)
except ImportError:
    pass
else:
    from .module import Module  # noqa: F401
