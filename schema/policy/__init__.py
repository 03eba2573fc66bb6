"""The operator's mutation policy: model, file, store, catalog, limits and the mutation."""
