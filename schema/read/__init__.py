"""Reading manifests: files and stdin into documents, YAML and JSON parsers with positions."""
