# caprag: the Discord bot (default command) and the other caprag commands, as one static binary.
# Build: docker build -t caprag .   Run: docker run -e DISCORD_TOKEN=… -v caprag-data:/data caprag
#
# Build stage: the same Go toolchain and build command as CI. chroma-go's v2 package imports
# onnxruntime_go, which needs cgo, so the binary is linked statically with cgo on.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -trimpath -tags osusergo,netgo \
      -ldflags '-s -w -linkmode external -extldflags "-static"' \
      -o /out/caprag ./cmd/caprag \
 && mkdir -p /out/data

# Run stage: no shell, no package manager, CA certificates included, runs as the non-root user
# 65532 (nonroot).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/caprag /usr/local/bin/caprag
COPY --from=build --chown=65532:65532 /out/data /data
ENV DATA_DIR=/data
VOLUME ["/data"]
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/caprag"]
CMD ["bot"]
