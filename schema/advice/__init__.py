"""Warnings beyond upstream as `Advice` with stable codes: the codes, claims, workloads, skew."""
