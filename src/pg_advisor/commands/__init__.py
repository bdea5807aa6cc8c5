"""The commands both adapters serve: declared once (table.py), answered once (answers.py)."""
