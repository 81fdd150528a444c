package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// jsonLinesConfig is the exporter's configuration: the file it appends to.
type jsonLinesConfig struct {
	Path string `mapstructure:"path"`
}

func newJSONLinesFactory() exporter.Factory {
	return xexporter.NewFactory(component.MustNewType("jsonlines"),
		func() component.Config { return &jsonLinesConfig{} },
		xexporter.WithProfiles(createProfiles, component.StabilityLevelDevelopment))
}

func createProfiles(ctx context.Context, set exporter.Settings, cfg component.Config) (xexporter.Profiles, error) {
	w := &jsonLines{path: cfg.(*jsonLinesConfig).Path}
	return xexporterhelper.NewProfiles(ctx, set, cfg, w.push)
}

// jsonLines appends each request as one line of OTLP JSON, and syncs it, so a reader sees
// whole lines of everything the receiver acknowledged.
type jsonLines struct {
	mu   sync.Mutex
	path string
}

func (w *jsonLines) push(_ context.Context, pd pprofile.Profiles) error {
	b, err := (&pprofile.JSONMarshaler{}).MarshalProfiles(pd)
	if err != nil {
		return fmt.Errorf("marshal profiles: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
