#!/bin/sh
# Runs a command in a network namespace of its own, for tests that change
# the firewall: loopback only, with a default route over it to an address
# of the namespace's own, since kube-apiserver needs a default route to
# pick the address it advertises. Nothing outside it is reachable.
# FLINT_OUTER_NETNS names the caller's namespace, for the command to check
# that it runs elsewhere. Needs root.
set -eu
FLINT_OUTER_NETNS="$(readlink /proc/self/ns/net)"
export FLINT_OUTER_NETNS
exec unshare --net sh -c 'ip link set lo up && ip addr add 10.254.254.1/32 dev lo && ip route add default dev lo && exec "$@"' sh "$@"
