"""rankfast.io."""
