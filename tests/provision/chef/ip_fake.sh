#!/bin/bash
# Fake `ip` for the XFRM interface script: logs every call; `route get` names an uplink; `link show NAME`
# succeeds for the names listed in $FAKE_LINKS (interfaces that already exist).
echo "ip $*" >>"$FAKE_CALLS"
case "$1 $2" in
  "-o route") echo "$4 via 192.0.2.1 dev uplink0 src 10.16.0.1 uid 0" ;;
  "link show") [[ " $FAKE_LINKS " == *" $3 "* ]] ;;
  *) ;;
esac
