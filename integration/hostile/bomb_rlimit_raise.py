# group: bombs
# tries: raise its own RLIMIT_NOFILE past the hard limit
# expect: ValueError
import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard * 2, hard * 2)); print("RESULT raised")
except (ValueError, OSError) as e:
    print("RESULT", type(e).__name__)
