package doctor

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
)

// HomeDir checks that the home directory exists, is initialised and is not writable by
// other users (who could swap its config or key).
func HomeDir(h configs.Home) Result {
	const check = "home"
	st, err := os.Stat(h.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(check, fmt.Sprintf("%s does not exist", h.Dir), "create it with: lowband init --home "+h.Dir)
	case err != nil:
		return fail(check, err.Error(), "run doctor as the user the node runs as")
	case !st.IsDir():
		return fail(check, h.Dir+" is not a directory", "point --home or $"+configs.HomeEnv+" at the node's home directory")
	case st.Mode().Perm()&0o022 != 0:
		return fail(check, fmt.Sprintf("%s has mode %04o: other users can write to it", h.Dir, st.Mode().Perm()),
			"chmod 700 "+h.Dir)
	}
	if err := h.Check(); err != nil {
		return fail(check, fmt.Sprintf("%s has no config.toml", h.Dir), "initialise it with: lowband init --home "+h.Dir)
	}
	if uid, mine := ownedByMe(st); !mine {
		return warn(check, fmt.Sprintf("%s belongs to uid %d, not to the user running doctor", h.Dir, uid),
			"run doctor as the node's user, e.g. sudo -u lowband lowband doctor --home "+h.Dir)
	}
	return ok(check, "%s, mode %04o", h.Dir, st.Mode().Perm())
}

// Key checks the identity key: present, readable by its owner only, a valid key. It
// returns the node's peer ID when the key loads.
func Key(h configs.Home) (Result, peer.ID) {
	const check = "identity key"
	k, err := h.LoadIdentity()
	if err != nil {
		return fail(check, err.Error(), keyFix(h, err)), ""
	}
	id, err := peer.IDFromPrivateKey(k)
	if err != nil {
		return fail(check, err.Error(), "restore identity.key from a backup, or make a new identity: lowband init --force --home "+h.Dir), ""
	}
	return ok(check, "peer ID %s, readable by its owner only", id), id
}

func keyFix(h configs.Home, err error) string {
	switch msg := err.Error(); {
	case errors.Is(err, fs.ErrPermission):
		return "run doctor as the user that owns " + h.KeyPath()
	case strings.Contains(msg, "chmod 600"):
		return "chmod 600 " + h.KeyPath()
	default:
		return "restore identity.key from a backup, or make a new identity: lowband init --force --home " + h.Dir
	}
}

// Config checks config.toml. On success it returns the config for the checks that need it.
func Config(h configs.Home) (Result, *configs.Config) {
	c, err := configs.LoadConfig(h.ConfigPath())
	if err != nil {
		return fail("config", err.Error(), "fix the key named above in "+h.ConfigPath()+
			" (lowband init --profile P --home NEWDIR writes a commented example)"), nil
	}
	return ok("config", "%s: profile %s, role %s", h.ConfigPath(), c.Profile, c.Role), c
}

// Spec checks the network spec the config names. On success it returns the spec.
func Spec(h configs.Home, c *configs.Config) (Result, *configs.Spec) {
	path := h.SpecPath(c)
	s, err := configs.LoadSpec(path)
	if err != nil {
		return fail("network spec", err.Error(), "get the network's spec file from its operators and set spec_file in "+h.ConfigPath()), nil
	}
	sum := s.Hash()
	return ok("network spec", "network %s, run %s (spec hash %s)", s.NetworkID(), s.Run, hex.EncodeToString(sum[:8])), s
}

// Disk thresholds for the home directory: checkpoints and the store live there.
const (
	diskFail = 100 << 20
	diskWarn = 1 << 30
)

// Disk checks the free space in the home directory. free returns the bytes available to
// an unprivileged user on the file system holding dir.
func Disk(dir string, free func(dir string) (uint64, error)) Result {
	const check = "disk"
	n, err := free(dir)
	switch {
	case errors.Is(err, errUnsupported):
		return skip(check, "not checked on this operating system")
	case err != nil:
		return fail(check, err.Error(), "make sure "+dir+" is on a mounted, readable file system")
	case n < diskFail:
		return fail(check, fmt.Sprintf("%s free in %s: the store and checkpoints will not fit", bytesString(n), dir), "free some space or move the home")
	case n < diskWarn:
		return warn(check, fmt.Sprintf("%s free in %s", bytesString(n), dir), "keep at least 1 GiB free for the store and checkpoints")
	}
	return ok(check, "%s free in %s", bytesString(n), dir)
}

func bytesString(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
