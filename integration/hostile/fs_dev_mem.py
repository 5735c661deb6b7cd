# group: files
# tries: open /dev/mem and /dev/kmsg
# expect: absent
import os
found = [p for p in ["/dev/mem", "/dev/kmem", "/dev/kmsg", "/dev/sda", "/dev/vda", "/dev/kvm"] if os.path.exists(p)]
print("RESULT", "absent" if not found else "FOUND " + " ".join(found))
