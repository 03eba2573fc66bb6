"""draguard.webhook: the admission webhook and the `draguard` command."""
