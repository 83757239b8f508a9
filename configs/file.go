package configs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// maxFileSize caps what LoadConfig and LoadSpec read: both files are small by nature.
const maxFileSize = 4 << 20

// LoadConfig reads and validates a config.toml. Keys missing from the file take the
// defaults of the file's profile; unknown keys are an error. Errors name the file, the
// line and the key.
func LoadConfig(path string) (*Config, error) {
	data, err := readSmall(path)
	if err != nil {
		return nil, err
	}
	var head struct {
		Profile string `toml:"profile"`
	}
	if err := toml.Unmarshal(data, &head); err != nil {
		return nil, decodeError(path, data, err)
	}
	if head.Profile == "" {
		head.Profile = ProfileLocal
	}
	c, err := Default(head.Profile)
	if err != nil {
		return nil, withLine(path, data, &KeyError{Key: "profile", Err: err})
	}
	if err := decodeStrict(data, c); err != nil {
		return nil, decodeError(path, data, err)
	}
	if err := c.Validate(); err != nil {
		return nil, withLine(path, data, err)
	}
	return c, nil
}

// LoadSpec reads and validates a network spec. Errors name the file, the line and the key.
func LoadSpec(path string) (*Spec, error) {
	data, err := readSmall(path)
	if err != nil {
		return nil, err
	}
	return ParseSpec(path, data)
}

// ParseSpec parses and validates a network spec held in memory; name is used in errors.
func ParseSpec(name string, data []byte) (*Spec, error) {
	s := &Spec{}
	if err := decodeStrict(data, s); err != nil {
		return nil, decodeError(name, data, err)
	}
	if err := s.Validate(); err != nil {
		return nil, withLine(name, data, err)
	}
	return s, nil
}

// WriteConfig writes c to path atomically (a temporary file renamed into place).
func WriteConfig(path string, c *Config) error {
	data, err := toml.Marshal(c)
	if err != nil {
		return fmt.Errorf("encoding config: %w", err)
	}
	return WriteFileAtomic(path, data, 0o644)
}

// WriteSpec writes s to path atomically.
func WriteSpec(path string, s *Spec) error {
	data, err := toml.Marshal(s)
	if err != nil {
		return fmt.Errorf("encoding network spec: %w", err)
	}
	return WriteFileAtomic(path, data, 0o644)
}

// WriteFileAtomic writes data to a temporary file in path's directory, syncs it and renames
// it over path, so a reader sees the old file or the new one, never a half-written one.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > maxFileSize {
		return nil, fmt.Errorf("%s: %d bytes is more than the %d a config file may have", path, st.Size(), maxFileSize)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return buf.Bytes(), nil
}

func decodeStrict(data []byte, v any) error {
	d := toml.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// decodeError turns go-toml's errors into a *KeyError with the file and line.
func decodeError(file string, data []byte, err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		e := strict.Errors[0]
		line, _ := e.Position()
		return &KeyError{File: file, Line: line, Key: strings.Join(e.Key(), "."), Err: errors.New("unknown key")}
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, _ := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		return &KeyError{File: file, Line: line, Key: keyAtLine(data, line), Err: errors.New(msg)}
	}
	return &KeyError{File: file, Err: err}
}

// withLine fills in the file and, where it can find the key, the line of a *KeyError.
func withLine(file string, data []byte, err error) error {
	var ke *KeyError
	if !errors.As(err, &ke) {
		return &KeyError{File: file, Err: err}
	}
	k := *ke
	k.File = file
	if k.Line == 0 {
		k.Line = lineOfKey(data, k.Key)
	}
	return &k
}

var indexRE = regexp.MustCompile(`\[\d+\]`)

// lineOfKey finds the line where a dotted key (indices like [2] ignored) is set, or the
// line of its table header; 0 if it is not in the document (a default value).
func lineOfKey(data []byte, key string) int {
	want := indexRE.ReplaceAllString(key, "")
	found := 0
	walkKeys(data, func(full string, line int) bool {
		if full == want {
			found = line
			return false
		}
		return true
	})
	return found
}

// keyAtLine names the key set on a line, for decode errors that carry only a position.
func keyAtLine(data []byte, line int) string {
	name := ""
	walkKeys(data, func(full string, l int) bool {
		if l == line {
			name = full
			return false
		}
		return l < line
	})
	return name
}

// walkKeys calls fn with each table header's and key's full dotted name and its line, in
// document order, until fn returns false or the document ends (or fails to parse).
func walkKeys(data []byte, fn func(full string, line int) bool) {
	var p unstable.Parser
	p.Reset(data)
	table := ""
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			name, line := joinKey(&p, e)
			table = name
			if !fn(table, line) {
				return
			}
		case unstable.KeyValue:
			name, line := joinKey(&p, e)
			if table != "" {
				name = table + "." + name
			}
			if !fn(name, line) {
				return
			}
		}
	}
}

func joinKey(p *unstable.Parser, n *unstable.Node) (string, int) {
	var parts []string
	line := 0
	it := n.Key()
	for it.Next() {
		k := it.Node()
		if line == 0 && k.Raw.Length > 0 {
			line = p.Shape(k.Raw).Start.Line
		}
		parts = append(parts, string(k.Data))
	}
	return strings.Join(parts, "."), line
}
