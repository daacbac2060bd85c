"""Silver: sequencing, rules, the source dictionary and typed change tables."""
