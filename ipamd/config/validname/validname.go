// Package validname checks names that ipamd accepts from outside: in its
// config, in the settings packages the config composes, and in its
// CNI-facing server. It is a leaf (standard library only), so each of them
// checks a name without linking anything else: the server no config, the
// config no k8s.io.
package validname

import (
	"errors"
	"fmt"
	"strings"
)

// IfName checks a Linux interface name: 1-15 bytes, no '/', no whitespace
// or ':', and neither "." nor "..". The error completes a sentence that
// starts with the name.
func IfName(name string) error {
	switch {
	case name == "":
		return errors.New("must not be empty")
	case len(name) > 15:
		return fmt.Errorf("is %d bytes, longer than 15", len(name))
	case name == "." || name == "..":
		return errors.New("is not a valid interface name")
	case strings.Contains(name, "/"):
		return errors.New("contains '/'")
	case strings.ContainsAny(name, ": \t\n\r\x00"):
		return errors.New("contains ':', whitespace or NUL")
	}
	return nil
}
