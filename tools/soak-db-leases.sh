#!/usr/bin/env bash
# The slow-revocation check of docs/cleanup.md at full size: a db-creds run keeps N leases
# (default 5000) on a private PostgreSQL, then `vblast cleanup` revokes every one (each drops
# its database user) before the mount goes; the test asserts no user and no mount left.
# Usage: tools/soak-db-leases.sh [N]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VBLAST_DB_LEASES="${1:-5000}" exec cargo test --release --test integration \
    cleanup::db_leases_are_revoked_before_the_mount_goes -- --exact --nocapture
