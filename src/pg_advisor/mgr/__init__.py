"""The mgr wing: the only code that knows ceph-mgr's API (mgr_module). Its parts see the
module through face.py; module.py, above them, makes them and is where they meet."""
