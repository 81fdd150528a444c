// Command otelcol is an OpenTelemetry Collector built from the Collector's own Go modules
// for stax's end-to-end tests: an OTLP receiver (HTTP) feeding the profiles pipeline into
// an exporter that appends each request's profiles, as OTLP JSON, one line per request, to
// a file.
//
//	otelcol -addr 127.0.0.1:4318 -out profiles.jsonl
package main

import (
	"context"
	"flag"
	"fmt"
	"log"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/featuregate"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4318", "`HOST:PORT` of the OTLP/HTTP receiver")
	out := flag.String("out", "profiles.jsonl", "`FILE` the profiles are appended to")
	flag.Parse()

	if err := featuregate.GlobalRegistry().Set("service.profilesSupport", true); err != nil {
		log.Fatalf("enable profiles: %v", err)
	}
	config := fmt.Sprintf(`yaml:
receivers:
  otlp:
    protocols:
      http:
        endpoint: %q
exporters:
  jsonlines:
    path: %q
service:
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [jsonlines]
`, *addr, *out)
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol", Description: "collector for stax tests", Version: "test"},
		Factories: func() (otelcol.Factories, error) {
			rf := otlpreceiver.NewFactory()
			ef := newJSONLinesFactory()
			return otelcol.Factories{
				Receivers: map[component.Type]receiver.Factory{rf.Type(): rf},
				Exporters: map[component.Type]exporter.Factory{ef.Type(): ef},
				Telemetry: otelconftelemetry.NewFactory(),
			}, nil
		},
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			URIs:              []string{config},
			ProviderFactories: []confmap.ProviderFactory{yamlprovider.NewFactory()},
		}},
	}
	col, err := otelcol.NewCollector(set)
	if err != nil {
		log.Fatalf("new collector: %v", err)
	}
	// Run shuts the collector down on SIGINT and SIGTERM.
	if err := col.Run(context.Background()); err != nil {
		log.Fatalf("run collector: %v", err)
	}
}
