package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/spans"
)

// markingFake is a recording that takes markers.
type markingFake struct {
	*fakeRecording
	names []string
	ats   []uint64
}

func (m *markingFake) Mark(name string, at uint64) uint64 {
	m.names, m.ats = append(m.names, name), append(m.ats, at)
	return at + 1
}

func post(t *testing.T, hc *http.Client, path string, out any) int {
	t.Helper()
	resp, err := hc.Post("http://stax"+path, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

func TestMark(t *testing.T) {
	rec := &markingFake{fakeRecording: newFake(3)}
	_, hc := serve(t, rec, 0)
	var res api.Mark
	long := strings.Repeat("x", 4000)
	if code := post(t, hc, "/v1/mark?"+url.Values{"name": {long}, "at": {"42"}}.Encode(), &res); code != http.StatusOK {
		t.Fatalf("mark: status %d", code)
	}
	if len(rec.names) != 1 || len(rec.names[0]) != spans.MaxName || rec.ats[0] != 42 || res.TimeNs != 43 || res.Name != rec.names[0] {
		t.Errorf("marked %d names (%d bytes), at %v; answer %+v", len(rec.names), len(rec.names[0]), rec.ats, res)
	}
	for _, q := range []string{"", "?name=a&at=x"} {
		if code := post(t, hc, "/v1/mark"+q, nil); code != http.StatusBadRequest {
			t.Errorf("mark%s: status %d, want 400", q, code)
		}
	}
	// A recording that takes no markers says so.
	_, hc = serve(t, newFake(3), 0)
	var e api.Error
	if code := post(t, hc, "/v1/mark?name=a", &e); code != http.StatusConflict || !strings.Contains(e.Error, "not recording") {
		t.Errorf("mark of a stored run: status %d, %q", code, e.Error)
	}
}

// A query inside a span the run does not have is not found.
func TestSpanNotFound(t *testing.T) {
	_, hc := serve(t, newFake(3), 0)
	var e api.Error
	for _, path := range []string{"/v1/top?span=nothing", "/v1/flame?span=nothing"} {
		if code := get(t, hc, path, &e); code != http.StatusNotFound || !strings.Contains(e.Error, "no span named") {
			t.Errorf("%s: status %d, %q", path, code, e.Error)
		}
	}
}
