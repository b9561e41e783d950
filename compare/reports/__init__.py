"""Reports: MetricRows -> files. The only place numbers become text."""
