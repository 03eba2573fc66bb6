"""The operator's mutation policy: its model, file, catalog, limits and the mutation itself."""
