package configs

import (
	"errors"
	"fmt"
)

// KeyError is a configuration error tied to one key of a file. Line is 0 when unknown.
type KeyError struct {
	File string
	Key  string
	Line int
	Err  error
}

func (e *KeyError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if loc != "" {
		loc += ": "
	}
	if e.Key == "" {
		return loc + e.Err.Error()
	}
	return fmt.Sprintf("%s%s: %v", loc, e.Key, e.Err)
}

func (e *KeyError) Unwrap() error { return e.Err }

// prefixKey puts section in front of the key of a KeyError (or wraps a plain error as one).
func prefixKey(section string, err error) error {
	var ke *KeyError
	if errors.As(err, &ke) {
		k := *ke
		if k.Key == "" {
			k.Key = section
		} else {
			k.Key = section + "." + k.Key
		}
		return &k
	}
	return &KeyError{Key: section, Err: err}
}
