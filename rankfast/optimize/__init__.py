"""rankfast.optimize."""
