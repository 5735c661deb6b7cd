# group: network
# tries: read the routing table
# expect: none
rows = open("/proc/net/route").read().splitlines()[1:]
print("RESULT", "none" if not rows else "%d routes" % len(rows))
