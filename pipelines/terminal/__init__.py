"""The terminal: output formats, progress, Ray's stderr held down, interrupts, logs, suggestions."""
