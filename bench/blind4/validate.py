"""Checks bench/blind4/families.json with the independent set's checks (one validator for every
set in the blind format; stdlib only).

Usage: python bench/blind4/validate.py [path]   exit 0 when valid, 1 otherwise.
"""
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    if len(sys.argv) == 1:
        sys.argv.append(os.path.join(HERE, "families.json"))
    runpy.run_path(os.path.join(os.path.dirname(HERE), "independent", "validate.py"), run_name="__main__")
