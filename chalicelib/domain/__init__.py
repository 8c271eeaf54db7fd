"""Pure domain logic: no SDK, no I/O, no clock (time is always passed in)."""
