package push

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzQueueFile: a queued request file that was damaged (a crash mid-write elsewhere, a
// full disk, another program) is dropped and counted, never a panic.
func FuzzQueueFile(f *testing.F) {
	f.Add([]byte("{\"seq\":1,\"path\":\"/v1development/profiles\",\"content_type\":\"application/x-protobuf\",\"content_encoding\":\"gzip\"}\nBODY"))
	f.Add([]byte("{\"seq\":1,\"path\":\"/ingest?name=a%7B%7D\"}\n"))
	f.Add([]byte("{\"path\":\"no-slash\"}\n"))
	f.Add([]byte("{\"path\":"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000001.req"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		q, err := OpenQueue(dir, 4)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := q.Peek()
		switch {
		case ok && (r.Seq != 1 || len(r.Path) == 0 || r.Path[0] != '/'):
			t.Fatalf("read %+v", r)
		case !ok && q.Dropped() != 1:
			t.Fatalf("an unreadable request was not counted: dropped %d", q.Dropped())
		}
	})
}
