"""The domain model: field paths, errors, releases, gates, shapes, defaults, field mapping."""
