"""The apiserver's validation rules for claims and templates, on the hub shape."""
