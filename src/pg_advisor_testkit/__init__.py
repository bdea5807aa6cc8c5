"""What the unit tests (src/pg_advisor/tests) and the integration tests and benchmarks (qa/)
share: the captured clusters' dumps (fixtures/, read through dumps.py) and checkers that
share no code with the module (upmap_checker.py, osdmaptool_output.py, proposals.py).

Not part of the mgr module: CMakeLists.txt installs src/pg_advisor alone. Both suites
find it on the path they already put src on (tox.ini's PYTHONPATH, qa/conftest.py)."""
