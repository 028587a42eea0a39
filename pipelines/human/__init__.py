"""The human evaluation of NoReGeo: dotted items as pages for annotators (`human-export`:
`export_command`, with `export_pages`, `pages`, `quality`, `items`, `key`), and their
answers voted into the model `human` (`human-import`: `import_command`, with `answers`,
`votes`, `import_votes`).

May import: anything below `pipelines`, other wings' public names (NoReGeo's items,
scoring and results) and this package.
"""
