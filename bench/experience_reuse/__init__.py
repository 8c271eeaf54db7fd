"""Experience-reuse benchmark: does a recalled lesson help an agent on a new task of the same kind?

Run ``python -m bench.experience_reuse`` from the repository root (see README.md in this folder).
"""
