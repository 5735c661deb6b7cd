# group: capabilities
# tries: as uid 0 of its own user namespace, use a capability: give a file to uid 1
# expect: EPERM
# flags: --user 0:0
import errno, os
open("/tmp/f", "w").close()
try:
    os.chown("/tmp/f", 1, 1); print("RESULT chowned")
except OSError as e:
    print("RESULT", errno.errorcode.get(e.errno, str(e.errno)))
