"""The command line's rules: argument validators, renamed flags, conflicts, the full-disk line,
the lost-engine line."""
