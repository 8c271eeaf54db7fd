"""`python -m hindsight_xp ...` is the `hindsight-xp` command."""
from ._entry import main

main()
