"""Bronze: landing files → append-only change records and a quarantine, exactly once."""
