"""Helpers shared by several test folders, imported explicitly (fixtures live in tests/conftest.py)."""
