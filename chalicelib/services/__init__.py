"""Use cases. Plain functions taking a ``Deps`` bundle of ports and primitives."""
