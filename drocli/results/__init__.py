"""drocli.results: A results folder: records, manifest, integrity, provenance, aggregation."""
