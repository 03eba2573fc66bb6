"""Command-line front ends of the schema toolkit; each module exposes `main(argv) -> int`."""
