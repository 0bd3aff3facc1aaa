# Grantry's container image: a static binary on a distroless base, run as a non-root user.
#   docker build -t grantry .
#   docker run -p 8080:8080 -e GRANTRY_BOOTSTRAP_API_KEY=... grantry
# docker-compose.yml runs it with MongoDB.

FROM golang:1.26.8 AS build
WORKDIR /src
# Modules first, so that a change to the code alone does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: a static binary that needs no C library in the final image.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/grantry ./cmd/grantry \
 && mkdir -p /out/data

# distroless/static: no shell, no package manager, CA certificates (for the providers' HTTPS
# APIs) and time zone data; "nonroot" is user and group 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/grantry /grantry
# The embedded store's folder, owned by the non-root user; mount a volume here to keep it.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV GRANTRY_ADDR=0.0.0.0:8080 \
    GRANTRY_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8080
# The image has no curl: the binary checks its own /healthz.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 CMD ["/grantry", "healthcheck"]
ENTRYPOINT ["/grantry"]
CMD ["serve"]
