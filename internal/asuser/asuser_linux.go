// Package asuser runs file-system work as a recorded process's user: on a locked OS thread
// whose file-system uid, gid and supplementary groups are switched to that user's, so that
// the kernel applies permissions, ACLs and symbolic links as it would for the process, and
// files created there are that user's. Other threads of stax keep its own identity.
package asuser

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/proc"
)

// noGroup is the file-system gid taken for a process whose groups are not known: the
// kernel's overflow gid, which owns no file.
const noGroup = 65534

// Run runs fn as who (see the package comment) and returns its error. When stax is not
// root, or who is nil or root, fn runs with stax's own identity. fn runs on a thread of
// its own: Run waits for it.
func Run(who *proc.Creds, fn func() error) error {
	if who == nil || who.UID == 0 || os.Geteuid() != 0 {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restore, err := switchIdentity(who)
		if err == nil {
			err = fn()
		} else {
			err = fmt.Errorf("act as uid %d: %w", who.UID, err)
		}
		if restore == nil || restore() {
			runtime.UnlockOSThread()
		}
		// else the goroutine ends locked to the thread, and the runtime ends the thread
		// with its changed identity.
		done <- err
	}()
	return <-done
}

// switchIdentity gives the calling thread, which must be locked to its goroutine, who's
// file-system identity. It returns a function that restores the thread's identity and
// reports whether it could; restore is nil when nothing was changed.
func switchIdentity(who *proc.Creds) (restore func() bool, err error) {
	groups, err := unix.Getgroups() // this thread's
	if err != nil {
		return nil, fmt.Errorf("read groups: %w", err)
	}
	old := make([]uint32, len(groups))
	for i, g := range groups {
		old[i] = uint32(g)
	}
	oldUID, oldGID := fsuid(), fsgid()
	restore = func() bool {
		unix.SetfsuidRetUid(oldUID)
		unix.SetfsgidRetGid(oldGID)
		return fsuid() == oldUID && fsgid() == oldGID && setThreadGroups(old) == nil
	}
	gid, supp := uint32(noGroup), []uint32(nil)
	if len(who.GIDs) > 0 {
		gid, supp = who.GIDs[0], who.GIDs[1:]
	}
	if err := setThreadGroups(supp); err != nil {
		return restore, fmt.Errorf("set groups: %w", err)
	}
	unix.SetfsgidRetGid(int(gid))
	unix.SetfsuidRetUid(int(who.UID))
	if fsuid() != int(who.UID) || fsgid() != int(gid) {
		return restore, errors.New("the kernel refused that file-system identity")
	}
	return restore, nil
}

// fsuid and fsgid return the thread's file-system ids: an invalid id changes nothing and
// returns the current one.
func fsuid() int { id, _ := unix.SetfsuidRetUid(-1); return id }
func fsgid() int { id, _ := unix.SetfsgidRetGid(-1); return id }

// setThreadGroups sets the supplementary groups of the calling thread alone, by the raw
// system call: syscall.Setgroups changes those of every thread of the process.
func setThreadGroups(gids []uint32) error {
	if runtime.GOARCH == "386" || runtime.GOARCH == "arm" {
		return errors.New("setgroups of 32-bit ids is not wired on " + runtime.GOARCH)
	}
	var p unsafe.Pointer
	if len(gids) > 0 {
		p = unsafe.Pointer(&gids[0])
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(gids)), uintptr(p), 0); e != 0 {
		return e
	}
	return nil
}
