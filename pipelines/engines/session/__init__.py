"""The Ray session of a command: a local single-node instance or a cluster (`ray_session`),
its processes in process groups of their own so a signal to the command's group reaches the
command alone (`ray_process_groups`), and the reaper that ends them when the driver is gone
(`ray_reaper`).

May import: anything below `pipelines`, other wings' public names (`pipelines.terminal`:
signals and Ray's log level) and this package; no other engines sub-package.
"""
