"""The HTML report: tables, figures, escaping and the page."""
