package configs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// HomeEnv is the environment variable that names the home directory.
const HomeEnv = "LOWBAND_HOME"

// Home is a node's home directory and the files in it.
type Home struct{ Dir string }

// ResolveHome picks the home directory: the flag if set, else $LOWBAND_HOME, else ~/.lowband.
func ResolveHome(flag string) (Home, error) {
	dir := flag
	if dir == "" {
		dir = os.Getenv(HomeEnv)
	}
	if dir == "" {
		u, err := os.UserHomeDir()
		if err != nil {
			return Home{}, fmt.Errorf("finding the home directory (set --home or %s): %w", HomeEnv, err)
		}
		dir = filepath.Join(u, ".lowband")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Home{}, err
	}
	return Home{Dir: abs}, nil
}

// Paths of the files in a home directory.
func (h Home) KeyPath() string    { return filepath.Join(h.Dir, "identity.key") }
func (h Home) ConfigPath() string { return filepath.Join(h.Dir, "config.toml") }
func (h Home) APIAddrPath() string {
	return filepath.Join(h.Dir, "api.addr") // written by a running node, removed when it stops
}
func (h Home) PeersPath() string { return filepath.Join(h.Dir, "peers.json") }
func (h Home) StorePath() string { return filepath.Join(h.Dir, "store.db") }

// SpecPath resolves the config's spec_file against the home directory.
func (h Home) SpecPath(c *Config) string {
	if filepath.IsAbs(c.SpecFile) {
		return c.SpecFile
	}
	return filepath.Join(h.Dir, c.SpecFile)
}

// ErrNoHome is returned when the home directory has not been initialised.
var ErrNoHome = errors.New("home directory is not initialised")

// Check reports ErrNoHome (wrapped, with the fix) when there is no config.toml.
func (h Home) Check() error {
	if _, err := os.Stat(h.ConfigPath()); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s has no config.toml (run: lowband init --home %s)", ErrNoHome, h.Dir, h.Dir)
	} else if err != nil {
		return err
	}
	return nil
}

// Load reads the home's config and network spec.
func (h Home) Load() (*Config, *Spec, error) {
	if err := h.Check(); err != nil {
		return nil, nil, err
	}
	c, err := LoadConfig(h.ConfigPath())
	if err != nil {
		return nil, nil, err
	}
	s, err := LoadSpec(h.SpecPath(c))
	if err != nil {
		return nil, nil, err
	}
	return c, s, nil
}

// InitOptions says how to create a home directory.
type InitOptions struct {
	Profile string
	Spec    []byte // network spec file contents; nil uses the built-in devnet spec
	Force   bool   // overwrite an existing home
}

// Init creates a home directory: a fresh Ed25519 identity (mode 0600), config.toml from the
// profile and the network spec. It refuses to touch an existing home unless opts.Force.
func (h Home) Init(opts InitOptions) error {
	c, err := Default(opts.Profile)
	if err != nil {
		return err
	}
	specData := opts.Spec
	if specData == nil {
		specData = DevnetSpec
	}
	if _, err := ParseSpec("network spec", specData); err != nil {
		return err
	}
	if !opts.Force {
		for _, p := range []string{h.ConfigPath(), h.KeyPath()} {
			if _, err := os.Stat(p); err == nil {
				return fmt.Errorf("%s already exists: refusing to overwrite an initialised home (use --force)", p)
			}
		}
	}
	if err := os.MkdirAll(h.Dir, 0o700); err != nil {
		return fmt.Errorf("creating home: %w", err)
	}
	priv, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		return fmt.Errorf("generating identity: %w", err)
	}
	raw, err := crypto.MarshalPrivateKey(priv)
	if err != nil {
		return fmt.Errorf("encoding identity: %w", err)
	}
	if err := WriteFileAtomic(h.KeyPath(), raw, 0o600); err != nil {
		return fmt.Errorf("writing identity: %w", err)
	}
	if err := WriteFileAtomic(h.SpecPath(c), specData, 0o644); err != nil {
		return fmt.Errorf("writing network spec: %w", err)
	}
	if err := WriteConfig(h.ConfigPath(), c); err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	return nil
}

// LoadIdentity reads the node's private key. It refuses a key file that other users can
// read or write, as ssh does.
func (h Home) LoadIdentity() (crypto.PrivKey, error) {
	st, err := os.Stat(h.KeyPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("identity key %s is missing (run: lowband init --home %s)", h.KeyPath(), h.Dir)
	} else if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("identity key %s has mode %04o: it must be readable by its owner only (chmod 600 %s)",
			h.KeyPath(), st.Mode().Perm(), h.KeyPath())
	}
	raw, err := readSmall(h.KeyPath())
	if err != nil {
		return nil, err
	}
	k, err := crypto.UnmarshalPrivateKey(raw)
	if err != nil {
		return nil, fmt.Errorf("identity key %s is not a valid key: %w", h.KeyPath(), err)
	}
	return k, nil
}
