"""The installed hook command's entry point: run :mod:`memd.hook` from its cached bytecode.

``python -I -S .../memd/hookrun.py EVENT --socket PATH`` is what ``memd install`` writes. A
file run as a script is compiled from source on every start (Python caches bytecode only for
imported modules), and compiling ``hook.py`` costs a few milliseconds per prompt. This file is
small enough that compiling it costs next to nothing; it puts its own directory last on
``sys.path`` (so the standard library always wins a name) and imports the hook as the top-level
module ``hook``, which Python loads from
``__pycache__`` (checked against the source's mtime, so an upgrade is picked up) and writes
there on first use when it can. Nothing else is imported: ``hook`` needs only built-in modules.
"""

import sys

sys.path.append(__file__.rpartition("/")[0] or ".")
import hook  # type: ignore[import-not-found]  # found through the path set just above

hook.cli()
