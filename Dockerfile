# The vblast image: nothing but a statically linked vblast (no base image to pull).
# Build the binary first, then the image from a context holding it as ./vblast:
#   tools/image.sh            (does both, with podman; deploy/kubernetes/ runs it)
FROM scratch
COPY vblast /vblast
USER 65534:65534
ENTRYPOINT ["/vblast"]
