"""Discovery commands: what tasks and models there are, and what one item looks like."""
