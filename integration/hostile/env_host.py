# group: environment
# tries: read variables from boxer's environment
# expect: clean
import os
extra = sorted(set(os.environ) - {"PATH", "HOME", "LANG", "PYTHONDONTWRITEBYTECODE", "LC_CTYPE"})
print("RESULT", "clean" if not extra and "leak-me" not in str(os.environ) else "LEAK " + " ".join(extra))
