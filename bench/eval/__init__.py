"""``make eval``: every evaluation set side by side with its baselines, measured in one run."""
