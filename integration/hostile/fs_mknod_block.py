# group: files
# tries: create a block device node for the host disk and read it
# expect: EPERM
# flags: --user 0:0
import errno, os, stat
try:
    os.mknod("/tmp/sda", stat.S_IFBLK | 0o600, os.makedev(8, 0))
except OSError as e:
    print("RESULT", errno.errorcode[e.errno])
else:
    # gVisor lets the node exist in its own memory filesystem; it leads nowhere.
    try:
        os.read(os.open("/tmp/sda", os.O_RDONLY), 16); print("RESULT read the disk")
    except OSError as e:
        print("RESULT created, open", errno.errorcode[e.errno])
