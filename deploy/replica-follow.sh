#!/bin/sh
# Keeps a replica's copy of the primary's database: a fresh restore, then follow.
#   AGENTDIR_DATA_DIR=/srv/agentdir-replica-a AGENTDIR_REPLICA_URL=file:///srv/agentdir-replica \
#     deploy/replica-follow.sh
# `litestream restore -f` cannot resume over an old copy ("saved TXID … is ahead of latest
# snapshot"), so every start wipes the copy and its -txid file first. A replica server holding
# the old file notices the new one and exits, for its supervisor to start it again on it.
set -eu
: "${AGENTDIR_DATA_DIR:?set AGENTDIR_DATA_DIR to the replica data dir}"
: "${AGENTDIR_REPLICA_URL:?set AGENTDIR_REPLICA_URL to the URL the primary replicates to}"
mkdir -p "$AGENTDIR_DATA_DIR"
copy="$AGENTDIR_DATA_DIR/agentdir.sqlite3"
# Litestream refuses to start when AWS_CA_BUNDLE names a file it dislikes.
unset AWS_CA_BUNDLE
# Until the primary's first snapshot is shipped there is nothing to restore: try again.
while :; do
  rm -f "$copy" "$copy-txid" "$copy-journal" "$copy-wal" "$copy-shm" "$copy.tmp"
  litestream restore -f -follow-interval 100ms -o "$copy" "$AGENTDIR_REPLICA_URL" && exit 0
  echo "replica-follow: litestream restore -f stopped; trying again in 2 s" >&2
  sleep 2
done
