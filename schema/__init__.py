"""draguard.schema: upstream-exact rules, shapes and conversion for DRA claims (KEP-4816)."""
