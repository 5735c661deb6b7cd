# group: files
# tries: find a file the host test put in its /tmp
# expect: absent
# flags: --env MARKER={{MARKER}}
import os
print("RESULT", "FOUND" if os.path.exists(os.environ["MARKER"]) else "absent")
