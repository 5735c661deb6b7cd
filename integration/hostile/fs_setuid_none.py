# group: files
# tries: find a setuid or setgid file, or one with file capabilities, to gain privileges through
# expect: none
import os, stat
found = []
for top, dirs, files in os.walk("/"):
    if top == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
    for name in dirs + files:
        p = os.path.join(top, name)
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            continue
        if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
            found.append(p)
            continue
        try:
            os.getxattr(p, "security.capability", follow_symlinks=False)
            found.append(p + " (capabilities)")
        except OSError:
            pass
print("found:", " ".join(found[:10]))
print("RESULT", "none" if not found else "found")
