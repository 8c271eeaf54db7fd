"""Tools for development, tests and benchmarks; not part of the service."""
