"""The only layer that speaks Spark and Iceberg: the seam where another table format plugs in."""
