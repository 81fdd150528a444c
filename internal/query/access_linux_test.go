package query

import (
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/proc"
)

// readNamed opens and reads a named file, failing the test if that blocks.
func readNamed(t *testing.T, path string, who *proc.Creds, max int64) (string, error) {
	t.Helper()
	type result struct {
		text string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		f, err := openNamedFile(path, who, max)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		done <- result{string(b), err}
	}()
	select {
	case r := <-done:
		return r.text, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: open blocked", path)
		return "", nil
	}
}

// accessDir returns a temporary directory every user can search.
func accessDir(t *testing.T) string {
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // the test's own temporary directories
	os.Chmod(dir, 0o755)
	return dir
}

func writeFile(t *testing.T, p, text string, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(p, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpenNamedFile(t *testing.T) {
	dir := accessDir(t)
	open := writeFile(t, filepath.Join(dir, "open.c"), "line one\nline two\n", 0o644)
	fifo := filepath.Join(dir, "fifo.c")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	owner := &proc.Creds{UID: uint32(os.Getuid())}
	for _, tc := range []struct {
		path string
		who  *proc.Creds
		want string // "" for success, else a substring of the error
	}{
		{open, nil, ""},
		{open, owner, ""},
		{fifo, owner, "not a regular file"},
		{fifo, nil, "not a regular file"},
		{dir, nil, "not a regular file"},
		{"/dev/zero", nil, "not a regular file"},
		{"/proc/self/status", nil, "in /proc"},
		{filepath.Join(dir, "missing.c"), owner, "no such file"},
	} {
		text, err := readNamed(t, tc.path, tc.who, 1<<20)
		switch {
		case tc.want == "" && (err != nil || text != "line one\nline two\n"):
			t.Errorf("%s as %+v: %q, %v", tc.path, tc.who, text, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s as %+v: error %v, want %q", tc.path, tc.who, err, tc.want)
		}
	}
	if _, err := openNamedFile(open, nil, 4); err == nil || !strings.Contains(err.Error(), "over 4 bytes") {
		t.Errorf("an over-long file: %v", err)
	}
}

// nobody is the identity of an unprivileged recorded process.
var nobody = &proc.Creds{UID: 65534, GIDs: []uint32{65534}}

// secretTree builds files that nobody may or may not read, returning the directory.
//
//	pub/pub.toy            0644  readable
//	shadow.toy             0600  root's alone
//	private/          0700
//	private/inner.toy      0644  readable, but in a directory nobody cannot search
//	private/sub/      0755
//	private/sub/deep.toy   0644
func secretTree(t *testing.T) string {
	dir := accessDir(t)
	for _, d := range []struct {
		name string
		mode os.FileMode
	}{{"pub", 0o755}, {"private", 0o700}, {"private/sub", 0o755}} {
		p := filepath.Join(dir, d.name)
		if err := os.Mkdir(p, d.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, d.mode)
	}
	writeFile(t, filepath.Join(dir, "pub/pub.toy"), "public\n", 0o644)
	writeFile(t, filepath.Join(dir, "shadow.toy"), "SECRET shadow\n", 0o600)
	writeFile(t, filepath.Join(dir, "private/inner.toy"), "SECRET inner\n", 0o644)
	writeFile(t, filepath.Join(dir, "private/sub/deep.toy"), "SECRET deep\n", 0o644)
	return dir
}

// A file named through symbolic links is opened as the recorded process could: the links
// are followed with its permissions, so a link into a directory it cannot search, or to a
// file it cannot read, yields nothing, while a link to a file it can read works.
func TestOpenNamedFileAsTarget(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("opening as another user needs root")
	}
	dir := secretTree(t)
	link := func(name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "pub/fifo.toy")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(filepath.Join(dir, "shadow.toy"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	before := threadIdentities(t)

	for _, tc := range []struct {
		path string
		want string // text read, or "!" and a substring of the error
	}{
		{link("good.toy", "pub/pub.toy"), "public\n"},
		{link("pubdir", "pub") + "/pub.toy", "public\n"},
		{filepath.Join(dir, "pub/pub.toy"), "public\n"},
		{link("inner.toy", "private/inner.toy"), "!could not read it"},
		{link("abs.toy", filepath.Join(dir, "private/inner.toy")), "!could not read it"},
		{link("shadowlink.toy", "shadow.toy"), "!could not read it"},
		{link("subdir", "private/sub") + "/deep.toy", "!could not read it"},
		{filepath.Join(dir, "private/inner.toy"), "!could not read it"},
		{filepath.Join(dir, "shadow.toy"), "!could not read it"},
		{link("fifolink.toy", "pub/fifo.toy"), "!not a regular file"},
		{filepath.Join(dir, "pub"), "!not a regular file"},
		{"/proc/self/fd/" + strconv.Itoa(int(held.Fd())), "!symbolic links"},
		{link("fdlink.toy", "/proc/self/fd/"+strconv.Itoa(int(held.Fd()))), "!symbolic links"},
		{"/proc/self/root" + filepath.Join(dir, "shadow.toy"), "!symbolic links"},
		{"/proc/self/maps", "!in /proc"}, // readable by any identity of stax's own threads
	} {
		text, err := readNamed(t, tc.path, nobody, 1<<20)
		if msg, ok := strings.CutPrefix(tc.want, "!"); ok {
			if err == nil || !strings.Contains(err.Error(), msg) {
				t.Errorf("%s: read %.60q, error %v; want an error saying %q", tc.path, text, err, msg)
			}
		} else if err != nil || text != tc.want {
			t.Errorf("%s: read %q, error %v; want %q", tc.path, text, err, tc.want)
		}
	}
	// Root reads what root may.
	if text, err := readNamed(t, filepath.Join(dir, "inner.toy"), &proc.Creds{UID: 0}, 1<<20); err != nil || text != "SECRET inner\n" {
		t.Errorf("as root: %q, %v", text, err)
	}
	// Supplementary groups count: a group-readable file in a group-searchable directory.
	grp := filepath.Join(dir, "grp")
	os.Mkdir(grp, 0o750)
	os.Chmod(grp, 0o750)
	os.Chown(grp, 0, 4242)
	writeFile(t, filepath.Join(grp, "g.toy"), "group\n", 0o640)
	os.Chown(filepath.Join(grp, "g.toy"), 0, 4242)
	member := &proc.Creds{UID: 65534, GIDs: []uint32{65534, 4242}}
	if text, err := readNamed(t, filepath.Join(grp, "g.toy"), member, 1<<20); err != nil || text != "group\n" {
		t.Errorf("as a member of the file's group: %q, %v", text, err)
	}
	if _, err := readNamed(t, filepath.Join(grp, "g.toy"), nobody, 1<<20); err == nil {
		t.Errorf("a non-member read a group-only file")
	}
	if after := threadIdentities(t); after != before {
		t.Errorf("a thread kept another identity:\nbefore %s\nafter  %s", before, after)
	}
}

// An access ACL granting nobody read is honoured, as the kernel honours it for nobody.
func TestOpenNamedFileACL(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("opening as another user needs root")
	}
	dir := accessDir(t)
	p := writeFile(t, filepath.Join(dir, "acl.toy"), "by acl\n", 0o600)
	// system.posix_acl_access: version 2, then (tag, perm, id) entries sorted by tag.
	acl := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range []struct {
		tag, perm uint16
		id        uint32
	}{{0x01, 6, ^uint32(0)}, {0x02, 4, 65534}, {0x04, 0, ^uint32(0)}, {0x10, 4, ^uint32(0)}, {0x20, 0, ^uint32(0)}} {
		acl = binary.LittleEndian.AppendUint16(acl, e.tag)
		acl = binary.LittleEndian.AppendUint16(acl, e.perm)
		acl = binary.LittleEndian.AppendUint32(acl, e.id)
	}
	if err := unix.Setxattr(p, "system.posix_acl_access", acl, 0); err != nil {
		t.Skipf("this file system takes no ACL: %v", err)
	}
	if text, err := readNamed(t, p, nobody, 1<<20); err != nil || text != "by acl\n" {
		t.Errorf("a file an ACL lets nobody read: %q, %v", text, err)
	}
	if _, err := readNamed(t, p, &proc.Creds{UID: 65533, GIDs: []uint32{65533}}, 1<<20); err == nil {
		t.Errorf("a user the ACL does not name read the file")
	}
}

// A name that flips between a link to a readable file and a link to a secret one while it
// is opened: what is read is the readable file or nothing, never the secret.
func TestOpenNamedFileSwapped(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("opening as another user needs root")
	}
	dir := secretTree(t)
	name := filepath.Join(dir, "swap.toy")
	for i, target := range []string{"pub/pub.toy", "shadow.toy"} {
		if err := os.Symlink(target, filepath.Join(dir, "l"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tmp := filepath.Join(dir, "swap.tmp")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.Remove(tmp)
			os.Symlink([]string{"pub/pub.toy", "shadow.toy"}[i%2], tmp)
			os.Rename(tmp, name)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	var ok, refused int
	for range 2000 {
		text, err := readNamed(t, name, nobody, 1<<20)
		switch {
		case strings.Contains(text, "SECRET"):
			t.Fatalf("read the secret through a swapped link: %q", text)
		case err == nil:
			ok++
		default:
			refused++
		}
	}
	t.Logf("%d reads of the public file, %d refusals", ok, refused)
}

// threadIdentities lists the file-system uid, gid and groups of every thread of the test.
func threadIdentities(t *testing.T) string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var ids []string
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/status")
		if err != nil {
			continue // the thread ended
		}
		var id []string
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && (k == "Uid" || k == "Gid" || k == "Groups") {
				id = append(id, k+" "+strings.Join(strings.Fields(v), " "))
			}
		}
		s := strings.Join(id, "; ")
		if !seen[s] {
			seen[s] = true
			ids = append(ids, s)
		}
	}
	return strings.Join(ids, " | ")
}

// On kernels without openat2 a file reached through a magic link is recognised as one stax
// has open.
func TestOwnFile(t *testing.T) {
	dir := accessDir(t)
	p := writeFile(t, filepath.Join(dir, "f.toy"), "x\n", 0o644)
	held, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	viaLink, err := unix.Open("/proc/self/fd/"+strconv.Itoa(int(held.Fd())), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(viaLink)
	if !ownFile(viaLink) {
		t.Errorf("a file stax has open is not recognised")
	}
	q := writeFile(t, filepath.Join(dir, "g.toy"), "y\n", 0o644)
	other, err := unix.Open(q, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(other)
	if ownFile(other) {
		t.Errorf("a file stax did not have open is taken for one it has")
	}
}
