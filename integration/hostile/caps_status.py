# group: capabilities
# tries: check its capability sets
# expect: none
caps = {l.split()[0]: l.split()[1] for l in open("/proc/self/status") if l.startswith("Cap")}
print("RESULT", "none" if set(caps.values()) == {"0000000000000000"} else caps)
