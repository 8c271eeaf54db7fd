"""The embedded server (`make run`): the Chalice app on waitress, its ingest and review children, and
their supervision. Not shipped to Lambda: only app.py and chalicelib/ are."""
