package api

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// SocketDir is where live runs listen: $STAX_HOME/live, else $XDG_RUNTIME_DIR/stax, else
// /tmp/stax-<uid>. It is created mode 0700 and must belong to the user.
func SocketDir() (string, error) {
	var dir string
	switch {
	case os.Getenv("STAX_HOME") != "":
		dir = filepath.Join(os.Getenv("STAX_HOME"), "live")
	case os.Getenv("XDG_RUNTIME_DIR") != "":
		dir = filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "stax")
	default:
		dir = filepath.Join(os.TempDir(), "stax-"+strconv.Itoa(os.Getuid()))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create socket directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("check socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("socket directory %s is not a private directory of this user; remove it or set STAX_HOME", dir)
	}
	return dir, nil
}

// SocketPath is the socket of live run id.
func SocketPath(dir, id string) string { return filepath.Join(dir, id+".sock") }
