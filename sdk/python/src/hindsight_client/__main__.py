"""`python -m hindsight_client ...` is the `hindsight` command."""
from .cli import main

main()
