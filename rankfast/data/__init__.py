"""rankfast.io.svmlight."""
