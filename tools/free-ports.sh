# Sourced by tools/raft-cluster.sh and tools/ha-demo.sh: `free_port COUNT` prints the first
# of COUNT consecutive loopback ports that are free now, below the ephemeral range
# (32768-60999), so that no client connection takes one between this check and the bind.
free_port() { python3 -c 'import socket,random
n=int('"${1:-1}"')
while True:
    p=random.randint(10000,32767-n)
    ok=True
    for q in range(p,p+n):
        s=socket.socket()
        try: s.bind(("127.0.0.1",q))
        except OSError: ok=False
        s.close()
    if ok: print(p); break'; }
