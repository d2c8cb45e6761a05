"""Gives this test process an Open MPI session directory base of its own
and a $TMPDIR of its own, both removed when it exits (not a test itself;
imported by hl_testlib and the scripts that start mpiexec directly;
HL_KEEP_TMPDIR=1 keeps what the launches leave in the usual $TMPDIR).

Open MPI 4.1 creates /tmp/ompi.<host>.<uid> when a job starts and removes
it when its last job ends; two jobs starting at the same moment (ctest -j
runs two test scripts at once) race on that mkdir, and the loser's
orte_init fails with "A call to mkdir was unable to create the desired
directory ... File exists". With a base per test process the scripts never
share it. A short path under /tmp: Open MPI puts Unix sockets there, and a
socket path is limited to 107 bytes.
"""

import atexit
import os
import shutil
import tempfile


def use_private_session_dir():
    if "OMPI_MCA_orte_tmpdir_base" in os.environ:
        return
    base = tempfile.mkdtemp(prefix="hlmpi")
    os.environ["OMPI_MCA_orte_tmpdir_base"] = base
    atexit.register(shutil.rmtree, base, True)


def use_private_tmpdir():
    """Whatever the launches leave in $TMPDIR (a debug folder kept after a
    failure, a postmortem) goes into a folder of this test process's own,
    removed when it exits."""
    if os.environ.get("HL_KEEP_TMPDIR"):
        return
    tmp = tempfile.mkdtemp(prefix="hltmp")
    os.environ["TMPDIR"] = tmp
    tempfile.tempdir = tmp
    atexit.register(shutil.rmtree, tmp, True)


use_private_session_dir()
use_private_tmpdir()
