"""Serving the app: gunicorn, TLS contexts, metrics and the decision log."""
