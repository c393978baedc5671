"""rankfast.cli.learners."""
