package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPushHeaderFile reads --push-header @FILE and $STAX_PUSH_HEADERS: curl's "Name: value"
// lines with comments and blank lines; a file other users can read is used with a
// warning; a FIFO or a directory is refused at once (not waited on); a bad line is named
// by its number, never by its value.
func TestPushHeaderFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	read := func(env string, args ...string) (map[string][]string, string, error) {
		t.Helper()
		t.Setenv(pushHeadersEnv, env)
		var errOut bytes.Buffer
		f := pushFlags{headers: args, errOut: &errOut}
		h, err := f.headerSet()
		return h, errOut.String(), err
	}

	good := write("good", "# token for the store\n\nAuthorization:  Bearer abc def \r\nX-Scope-OrgID: team-a\n", 0o600)
	h, warn, err := read("X-Env: e1\nX-Env: e2", "@"+good, "X-Flag=f")
	if err != nil || warn != "" {
		t.Fatalf("@%s: %v, warning %q", good, err, warn)
	}
	want := map[string]string{"Authorization": "Bearer abc def", "X-Scope-Orgid": "team-a", "X-Env": "e1,e2", "X-Flag": "f"}
	for k, v := range want {
		if got := strings.Join(h[k], ","); got != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, got, v, h)
		}
	}

	shared := write("shared", "Authorization: Bearer xyz\n", 0o644)
	if h, warn, err = read("", "@"+shared); err != nil || strings.Join(h["Authorization"], ",") != "Bearer xyz" ||
		!strings.Contains(warn, "readable by other users (mode 0644): chmod 600") {
		t.Errorf("a 0644 file: %v, %v, warning %q", h, err, warn)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, arg, env, want string }{
		{"a FIFO", "@" + fifo, "", "not a regular file"},
		{"a directory", "@" + dir, "", "not a regular file"},
		{"a missing file", "@" + dir + "/none", "", "no such file"},
		{"a line without a colon", "@" + write("bad", "# ok\nAuthorization Bearer s3cret\n", 0o600), "", "line 2: want Name: value"},
		{"a name with a space", "@" + write("bad2", "Bad Name: s3cret\n", 0o600), "", "line 1"},
		{"a bad environment line", "X-A=b", "Authorization=Bearer s3cret", "$STAX_PUSH_HEADERS, line 1"},
		{"a bad flag", "Authorization: Bearer s3cret", "", "push header 1: want NAME=VALUE"},
		{"a file too big", "@" + write("big", strings.Repeat("X-A: b\n", 10000), 0o600), "", "more than 65536 bytes"},
	} {
		_, _, err := read(c.env, c.arg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows the value: %v", c.name, err)
		}
	}
}
