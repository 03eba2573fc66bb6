"""CEL selectors: the DRA environment, compilation, cost, depth and AST validators."""
