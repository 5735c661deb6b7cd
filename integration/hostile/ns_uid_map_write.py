# group: namespaces
# tries: rewrite its own uid_map to map host root
# expect: EPERM
import errno, os
try:
    with open("/proc/self/uid_map", "w") as f:
        f.write("0 0 1\n")
    print("RESULT written")
except OSError as e:
    print("RESULT", errno.errorcode.get(e.errno, str(e.errno)))
