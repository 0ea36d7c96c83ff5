#!/usr/bin/env bash
# usage: tools/image.sh [TAG]   (default TAG localhost/vblast:latest)
# Builds vblast statically linked (glibc, -C target-feature=+crt-static, for
# x86_64-unknown-linux-gnu) and the FROM-scratch image of ./Dockerfile around it with
# podman. No base image is pulled. Exits 3 with "SKIP: ..." when podman is absent.
# The last line on stdout is the image's tag.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TAG="${1:-localhost/vblast:latest}"
TARGET=x86_64-unknown-linux-gnu
command -v podman >/dev/null 2>&1 || { echo "SKIP: podman is not installed (tools/deps.sh installs it)"; exit 3; }
echo "+ RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --target $TARGET" >&2
(cd "$ROOT" && RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --target "$TARGET" >&2)
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/$TARGET/release/vblast"
if ! ldd "$BIN" 2>&1 | grep -Eq 'statically linked|not a dynamic executable'; then
    echo "image: $BIN is dynamically linked; a FROM scratch image needs a static binary" >&2
    exit 1
fi
CTX="$(mktemp -d "${TMPDIR:-/tmp}/vblast-image.XXXXXX")"
trap 'rm -rf "$CTX"' EXIT
cp "$BIN" "$CTX/vblast"
cp "$ROOT/Dockerfile" "$CTX/Dockerfile"
echo "+ podman build -t $TAG $CTX" >&2
podman build -q -t "$TAG" -f "$CTX/Dockerfile" "$CTX" >&2
echo "$TAG"
