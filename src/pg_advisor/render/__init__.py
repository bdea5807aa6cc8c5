"""Reports as text: aligned tables, JSON, and the health checks the mgr raises."""
