# group: files
# tries: look for the host's /dev/shm contents
# expect: empty
import os
print("RESULT", "empty" if not os.listdir("/dev/shm") else "FOUND")
