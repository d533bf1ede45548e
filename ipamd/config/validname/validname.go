// Package validname checks names that both ipamd's config and its CNI-facing
// server accept from outside. It is a leaf (standard library only), so the
// server can validate a request without linking the config package, which
// imports the AWS SDK for the aws IP source's settings.
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
