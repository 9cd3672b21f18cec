#!/bin/sh
# The supervisor step for a stuck replica: when its /readyz answers 503 with "status":"stuck"
# (the primary moved on and the copy did not, for longer than AGENTDIR_REPLICA_STUCK_AFTER),
# restore a fresh copy. Run it from cron or the systemd timer next to this file:
#   deploy/replica-recover.sh http://127.0.0.1:8081 agentdir-replica-follow@a.service
set -eu
url=${1:?usage: replica-recover.sh REPLICA_URL FOLLOW_UNIT}
unit=${2:?usage: replica-recover.sh REPLICA_URL FOLLOW_UNIT}
if curl -fsS --max-time 5 "$url/readyz" >/dev/null 2>&1; then
  exit 0
fi
if curl -sS --max-time 5 "$url/readyz" 2>/dev/null | grep -q '"status":"stuck"'; then
  logger -t agentdir "replica at $url is stuck; restoring a fresh copy ($unit)"
  # Restarting the follower wipes and restores the copy; the replica server, PartOf it,
  # restarts with it and opens the fresh copy.
  systemctl restart "$unit"
fi
