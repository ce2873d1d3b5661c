"""Helpers shared by the tests (importable as ``helpers``: tests/conftest.py puts
tests/ on the path)."""
