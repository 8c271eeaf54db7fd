"""`python -m hindsight_xp ...` is the `hindsight-xp` command."""
from .cli import main

main()
