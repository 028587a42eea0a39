#!/usr/bin/env bash
# Usage: scripts/pip_quiet.sh LOG VENV_PYTHON PIP_ARGS...
#
# Runs `VENV_PYTHON -m pip PIP_ARGS...` with everything pip prints appended to LOG, and only
# its warnings and errors on the console, less two kinds of noise. A first `make setup`
# printed 542 lines of pip's (measured here): a line per package collected, a "Successfully
# installed" line of 3,346 characters, and, on stderr, setuptools' "Editable installation."
# banner of 10 lines (dropped: PYTHONWARNINGS, which the build backend inherits) and 190
# warnings "Location 'file:///opt/pypi/simple/NAME/' is ignored: it is neither a file nor a
# directory" (this machine's pip config lists two local indexes as extra-index-url, and each
# holds only some packages; dropped by the sed below). pip's own -qq cannot do it: with
# --log it prints warnings whatever the -q. A failure adds one line that names LOG; the exit
# status is pip's.
set -uo pipefail

usage="usage: $0 LOG VENV_PYTHON PIP_ARGS..."
log=${1:?$usage}
py=${2:?$usage}
shift 2

export PYTHONWARNINGS="${PYTHONWARNINGS:+$PYTHONWARNINGS,}ignore:Editable installation"
exec 3>>"$log"
# stdout to LOG; stderr to LOG and, filtered, to the console.
"$py" -m pip "$@" 2>&1 1>&3 | tee -a "$log" | sed -u "/^WARNING: Location '.*' is ignored: /d" >&2
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
    echo "pip $* failed (exit $status); its full log: $log" >&2
fi
exit "$status"
