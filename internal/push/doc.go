// Package push sends a recording's profile, window by window, to a fleet's profile store:
// an OpenTelemetry Collector (OTLP profiles over HTTP) or Grafana Pyroscope (its /ingest
// API with pprof). Each window is encoded once and put in a bounded queue on disk, which a
// sender drains in order with retries, so a slow or dead endpoint never holds up the
// recording and an endpoint restart loses nothing.
package push
