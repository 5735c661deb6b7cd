# boxer's preload hook (docs/reference.md, "Preloaded interpreters"). A
# sandbox made ahead of its request runs python3 -u /code/main.py, as any
# other, with this directory first on PYTHONPATH: Python's site imports this
# file as sitecustomize while it starts, before it looks for main.py, which
# is not there yet. The hook imports the modules named in "modules", says it
# is done with the empty file .boxer-preloaded in the working directory
# (boxer waits for it and removes it before the program's files come), and
# waits for boxer's line on stdin, read a byte at a time so that nothing
# after the line is taken from the program. Then it undoes what it changed
# (PYTHONPATH, sys.path, sitecustomize) and returns, and Python runs
# /code/main.py itself: argv, __main__, tracebacks, exit codes and signals
# are Python's own, as in a plain run. What stays is what the imports left,
# as if the program's first lines had imported the modules.
import os
import sys


def _boxer_preload():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        with open(os.path.join(here, "modules")) as f:
            names = f.read().split()
    except OSError:
        names = []
    for name in names:
        try:
            __import__(name)
        except BaseException:
            # The program's own import of it fails as in a plain run.
            pass
    # What the imports made lives as long as the interpreter: out of the
    # collector's sight, the program's collections and Python's at exit
    # do not walk it (some 100 ms less at exit for pandas and matplotlib).
    import gc
    gc.collect()
    gc.freeze()
    try:
        os.close(os.open(".boxer-preloaded", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        pass
    while True:
        try:
            c = os.read(0, 1)
        except InterruptedError:
            continue
        if c == b"\n":
            break
        if not c:
            # boxer went away without a program: as boxer-init's gate.
            os._exit(1)
    entries = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if entries and entries[0] == here:
        rest = os.pathsep.join(entries[1:])
        if rest:
            os.environ["PYTHONPATH"] = rest
        else:
            del os.environ["PYTHONPATH"]
    while here in sys.path:
        sys.path.remove(here)
    sys.path_importer_cache.pop(here, None)
    # A user site directory that came with the program's files (HOME is
    # the workspace) goes where site would have put it at start: before
    # the system's site-packages.
    import site
    if site.ENABLE_USER_SITE and os.path.isdir(site.USER_SITE) and site.USER_SITE not in sys.path:
        at = len(sys.path)
        for d in site.getsitepackages():
            if d in sys.path:
                at = min(at, sys.path.index(d))
        tail = sys.path[at:]
        del sys.path[at:]
        site.addsitedir(site.USER_SITE)
        sys.path.extend(p for p in tail if p not in sys.path)
    import importlib
    importlib.invalidate_caches()
    # The image's own sitecustomize, which Python would have imported in
    # this one's place: the import statement that loaded this file takes
    # whatever sys.modules holds under the name once this returns.
    del sys.modules["sitecustomize"]
    import importlib.util
    if importlib.util.find_spec("sitecustomize") is None:
        # None: site passes over this error as over a missing one, and
        # the import leaves no sitecustomize behind.
        raise ImportError("No module named 'sitecustomize'", name="sitecustomize")
    import sitecustomize  # noqa: F401


_boxer_preload()
del _boxer_preload
