package doctor

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// FreeBytes is the space on dir's file system available to an unprivileged user.
func FreeBytes(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}

// ClockSynced asks the kernel whether the system clock is synchronised (by NTP or
// another time service): adjtimex in read-only mode.
func ClockSynced() (bool, error) {
	var tx syscall.Timex
	state, err := syscall.Adjtimex(&tx)
	if err != nil {
		return false, err
	}
	const timeError = 5 // TIME_ERROR: the clock is not synchronised
	return state != timeError, nil
}

func ownedByMe(fi os.FileInfo) (uid int, mine bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, true
	}
	me := os.Getuid()
	return int(st.Uid), me == 0 || int(st.Uid) == me
}

// writable asks the kernel whether this process may create entries in dir.
func writable(dir string) error {
	const wOK = 0x2
	if err := syscall.Access(dir, wOK); err != nil {
		if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EROFS) {
			return fs.ErrPermission
		}
		return err
	}
	return nil
}
