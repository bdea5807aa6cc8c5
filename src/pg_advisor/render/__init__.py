"""Reports as text: aligned tables and JSON."""
