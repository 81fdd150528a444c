package push

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/store"
)

type fixedSource struct{ run *store.Run }

func (s fixedSource) Snapshot() *store.Run { return s.run }

// TestPusherSendsEveryWindowOnce: the windows a pusher sends, the last one pushed on
// Close included, hold every sample once and are numbered 1, 2, 3, ...
func TestPusherSendsEveryWindowOnce(t *testing.T) {
	var mu sync.Mutex
	var got []decoded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		d := decodeOTLP(t, b)
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
	}))
	defer srv.Close()
	dir := t.TempDir() + "/q"
	p, err := Start(fixedSource{fixture()}, Options{Target: target(t, srv.URL), Every: 20 * time.Millisecond, QueueDir: dir,
		Encoder: Encoder{Protocol: OTLP}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if left := p.Close(5 * time.Second); left != 0 {
		t.Fatalf("%d windows left", left)
	}
	mu.Lock()
	defer mu.Unlock()
	var a, b int64
	for i, d := range got {
		if len(d.seqs) != 1 || d.seqs[0] != int64(i+1) {
			t.Errorf("window %d has sequence %v", i+1, d.seqs)
		}
		a += d.byLeaf["jit_a"]
		b += d.byLeaf["jit_b"]
	}
	if len(got) < 2 || a != 100 || b != 200 {
		t.Errorf("%d windows with jit_a %d, jit_b %d; want 2 or more with 100 and 200", len(got), a, b)
	}
	if st := p.Status(); st.Pushed != uint64(len(got)) || st.Queued != 0 || st.Failed != 0 {
		t.Errorf("status %+v", st)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the empty queue was not removed: %v", err)
	}
}
