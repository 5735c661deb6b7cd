# group: egress
# tries: reach a host service bound to 0.0.0.0 through the host's own address
# expect: refused
# flags: --allow-host web.test --env HOST_PORT={{ANY_PORT}} --env HOST_IP={{HOST_IP}}
# uses: net
print("RESULT", attempt(os.environ["HOST_IP"], int(os.environ["HOST_PORT"])))
