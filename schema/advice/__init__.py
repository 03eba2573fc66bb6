"""Warnings beyond upstream, each with a stable code: claims, workloads, release skew."""
