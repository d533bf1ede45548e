package validname

import (
	"fmt"
	"regexp"
)

// maxDNSSubdomain is RFC 1123's limit on a whole name.
const maxDNSSubdomain = 253

// dnsSubdomain is RFC 1123's subdomain in lowercase, as Kubernetes names
// most objects (an IPPool among them).
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// DNSSubdomain checks a Kubernetes object name: what apimachinery's
// validation.IsDNS1123Subdomain accepts (a test holds the two equal), kept
// here so that checking a config does not link k8s.io. The error
// completes a sentence that starts with the name.
func DNSSubdomain(name string) error {
	switch {
	case len(name) > maxDNSSubdomain:
		return fmt.Errorf("is %d bytes, longer than %d", len(name), maxDNSSubdomain)
	case !dnsSubdomain.MatchString(name):
		return fmt.Errorf("is not a lowercase RFC 1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit)")
	}
	return nil
}

// maxDNSLabel is RFC 1123's limit on one label.
const maxDNSLabel = 63

// dnsLabel is one lowercase RFC 1123 label, as Kubernetes names
// namespaces.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// DNSLabel checks a namespace's name: what apimachinery's
// validation.IsDNS1123Label accepts (a test holds the two equal). The
// error completes a sentence that starts with the name.
func DNSLabel(name string) error {
	switch {
	case len(name) > maxDNSLabel:
		return fmt.Errorf("is %d bytes, longer than %d", len(name), maxDNSLabel)
	case !dnsLabel.MatchString(name):
		return fmt.Errorf("is not a lowercase RFC 1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit)")
	}
	return nil
}
