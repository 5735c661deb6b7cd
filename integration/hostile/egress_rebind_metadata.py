# group: egress
# tries: reach the cloud metadata address 169.254.169.254 through an allowed name, and directly
# expect: NXDOMAIN refused
# flags: --allow-host meta.test:80
# uses: net
print("RESULT", resolve("meta.test"), attempt("169.254.169.254", 80))
