"""The only layer that speaks Spark and a table format: the seam (backend.py), what both formats
share, and one package per format (iceberg/, delta/)."""
